"""History search decides relevance per query: every semantic hit carries its relevance
(the window's similarity standardised within its script group against all searched
windows, computed by the exact scan), the default floor leaves a query nothing answers
without semantic hits, and `min_relevance` moves the floor."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest

from memory.domain.errors import InvalidInput
from memory.domain.history.search import HistoryQuery, MatchedBy
from memory.domain.relevance import (
    DEFAULT_MIN_RELEVANCE,
    MIN_DISTRIBUTION,
    relevances,
    script_group,
)
from memory.entrypoints.history_runtime import HistoryRuntime

CHATTER = [
    "the team lunch moved to the noodle place on Jalan Alor",
    "who took the blue stapler from the front desk yesterday",
    "remember the quarterly town hall starts at four sharp",
    "my train was late again because of signal trouble",
    "the new coffee beans in the pantry taste like chocolate",
    "please water the plants near the window this weekend",
    "the football match last night went to penalties",
    "has anyone seen the charger for the conference phone",
]
HAN_CHATTER = ["今天中午大家一起去吃面", "周末的羽毛球比赛改到星期天", "茶水间的咖啡豆快用完了"]


def seeded(make_runtime, kit) -> HistoryRuntime:
    runtime: HistoryRuntime = make_runtime()
    events = [
        kit.message(
            "fork", 0, "the forklift in the warehouse broke so delivery is late today", channel="F"
        ),
    ]
    # One window per channel, so each message is a window of its own.
    for n in range(3 * MIN_DISTRIBUTION):
        text = CHATTER[n % len(CHATTER)]
        events.append(kit.message(f"c{n}", 0, text, channel=f"C{n}"))
    for n in range(MIN_DISTRIBUTION):
        text = HAN_CHATTER[n % len(HAN_CHATTER)]
        events.append(kit.message(f"h{n}", 0, text, channel=f"H{n}"))
    kit.swept(runtime, "acme", events)
    return runtime


def semantic(result) -> list:
    return [h for h in result.hits if h.matched_by is MatchedBy.SEMANTIC]


def test_each_hit_carries_the_relevance_the_domain_rule_gives(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    text = "forklift broke delivery late please"  # "please": no full-text hit
    result = runtime.service.search("acme", HistoryQuery(text, limit=100, min_relevance=0))
    hits = semantic(result)
    assert hits, "windows at or above the mean were found"
    # The reference: every window's similarity (halfvec, as stored) and script group.
    query = np.array(runtime.model.embed_query(text).values, dtype=np.float16).astype(float)
    with kit.database.connection() as conn:
        rows = conn.execute(
            "SELECT id, embedding::text AS v, content, script_group FROM dw_message_embeddings"
            " WHERE org_id = 'acme'"
        ).fetchall()
    ids = [uuid.UUID(str(r["id"])) for r in rows]
    vectors = [np.array([float(x) for x in r["v"].strip("[]").split(",")]) for r in rows]
    sims = [float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query))) for v in vectors]
    groups = [script_group(r["content"]) for r in rows]
    assert [g.value for g in groups] == [r["script_group"] for r in rows]
    assert {g.value for g in groups} == {"han", "other"}
    expected = dict(zip(ids, relevances(list(zip(groups, sims, strict=True))), strict=True))
    for hit in hits:
        assert hit.relevance == pytest.approx(expected[hit.window_id], abs=0.02)
    # Windows most relevant first (each window's messages together), all at or above 0.
    per_window = list(dict.fromkeys((h.window_id, h.relevance) for h in hits))
    scores = [r for _, r in per_window]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0
    assert hits[0].event_id == "fork" and hits[0].relevance > DEFAULT_MIN_RELEVANCE


def test_the_default_floor_answers_an_unanswerable_query_with_no_semantic_hit(
    make_runtime, kit
) -> None:
    runtime = seeded(make_runtime, kit)
    answered = runtime.service.search("acme", HistoryQuery("forklift delivery late please"))
    assert [h.event_id for h in semantic(answered)] == ["fork"]
    nothing = runtime.service.search("acme", HistoryQuery("quantum zebra migration"))
    assert semantic(nothing) == []
    # Without a floor the nearest windows fill the page, as before.
    unfiltered = runtime.service.search(
        "acme", HistoryQuery("quantum zebra migration", min_relevance=0)
    )
    assert len(semantic(unfiltered)) > 0


def test_min_relevance_out_of_range_or_mistyped_is_refused() -> None:
    for bad in (-1.0, 10.5, math.nan, True):
        with pytest.raises(InvalidInput) as raised:
            HistoryQuery("forklift", min_relevance=bad)  # type: ignore[arg-type]
        assert raised.value.field == "min_relevance"


def test_too_few_windows_to_calibrate_keep_their_hits_unless_a_floor_is_asked(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.swept(
        runtime,
        "acme",
        [
            kit.message("a", 0, "the forklift in the warehouse broke down today", channel="A"),
            kit.message("b", 0, "lunch at the noodle place near the office", channel="B"),
        ],
    )
    default = runtime.service.search("acme", HistoryQuery("forklift broke please"))
    assert {h.event_id for h in semantic(default)} == {"a", "b"}
    assert all(h.relevance is None for h in semantic(default))
    asked = runtime.service.search("acme", HistoryQuery("forklift broke please", min_relevance=1))
    assert semantic(asked) == []


def test_the_sweep_stores_each_window_in_its_relevance_group(make_runtime, kit) -> None:
    """Han, Malay and other windows (ADR 0120): the sweep writes the domain's group, and the
    table accepts every group the domain gives."""
    runtime: HistoryRuntime = make_runtime()
    texts = {
        "ms": "wifi pejabat tak boleh disambung sejak pagi tadi, saya tak dapat kerja",
        "en": "the office wifi has been down since this morning and I cannot work",
        "zh": "办公室的无线网络从早上开始就断了，我没法工作",  # noqa: RUF001
    }
    kit.swept(
        runtime, "acme", [kit.message(lang, 0, text, channel=lang) for lang, text in texts.items()]
    )
    with kit.database.connection() as conn:
        rows = conn.execute(
            "SELECT external_channel_id AS lang, content, script_group"
            " FROM dw_message_embeddings WHERE org_id = 'acme'"
        ).fetchall()
    assert {r["lang"]: r["script_group"] for r in rows} == {
        "ms": "malay",
        "en": "other",
        "zh": "han",
    }
    assert all(r["script_group"] == script_group(r["content"]).value for r in rows)
