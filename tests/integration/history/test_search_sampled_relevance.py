"""History search's relevance distribution comes from a fixed sample of what the query
searches (docs/adr/0138): each script group's first windows in id order among those the
query's filters select, the whole group when it is small. Hits are still the k most
relevant of every selected window, on the exact path and on the index path, and a filter
that keeps few windows of an org with an index is scanned exactly (docs/adr/0139).

A reference computed here from the stored vectors (numpy) says what the answer must be."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from memory.domain.history import search_path
from memory.domain.history.search import HistoryQuery
from memory.domain.relevance import ScriptGroup, SimilarityDistribution
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history import embeddings

CHATTER = [
    "the team lunch moved to the noodle place on Jalan Alor",
    "who took the blue stapler from the front desk yesterday",
    "remember the quarterly town hall starts at four sharp",
    "my train was late again because of signal trouble",
    "the new coffee beans in the pantry taste like chocolate",
    "please water the plants near the window this weekend",
    "the forklift in the warehouse broke so delivery is late today",
    "has anyone seen the charger for the conference phone",
]
HAN = ["今天中午大家一起去吃面", "周末的羽毛球比赛改到星期天", "茶水间的咖啡豆快用完了"]
QUERY = "forklift warehouse delivery late"
# Channel B talks of other things than A: its own distribution differs from the org's.
TEXTS = {"A": CHATTER, "B": CHATTER[:5], "H": HAN}
# Channels and their windows: each channel's windows 40 minutes apart (a window each).
CHANNELS = {"A": 30, "B": 30, "H": 24}
SMALL_SAMPLE = 12


@dataclass(frozen=True)
class Stored:
    id: uuid.UUID
    group: ScriptGroup
    channel: str
    first_minute: float
    vector: np.ndarray


def seed(runtime: HistoryRuntime, kit: Any, org: str = "acme", *, filler: int = 0) -> None:
    """CHANNELS' windows, and `filler` channels of one chatter window each."""
    events = [
        kit.message(f"z{n}", 0, f"{CHATTER[n % 5]} z{n}", channel=f"Z{n}") for n in range(filler)
    ]
    for channel, windows in CHANNELS.items():
        for n in range(windows):
            text = f"{TEXTS[channel][n % len(TEXTS[channel])]} {n}"
            events.append(kit.message(f"{channel}{n}", 40 * n, text, channel=channel))
    kit.swept(runtime, org, events)


def stored(kit: Any, org: str = "acme") -> list[Stored]:
    with kit.database.connection() as conn:
        rows = conn.execute(
            "SELECT id, script_group, external_channel_id, first_occurred_at,"
            " embedding::real[] AS v FROM dw_message_embeddings WHERE org_id = %s",
            (org,),
        ).fetchall()
    return [
        Stored(
            r["id"],
            ScriptGroup(r["script_group"]),
            r["external_channel_id"],
            (r["first_occurred_at"] - kit.T0) / timedelta(minutes=1),
            np.array(r["v"], dtype=np.float64),
        )
        for r in rows
    ]


TIE = 1e-6  # the statement ranks in float4 arithmetic, the reference in float64


def ties(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < TIE)


def reference(
    rows: list[Stored], query: np.ndarray, k: int, sample: int, channel: str | None = None
) -> list[tuple[uuid.UUID, float | None]]:
    """The k most relevant selected windows, each standardised against its group's first
    `sample` selected windows in id order (the union of the samples when the group has
    fewer than MIN_DISTRIBUTION)."""
    selected = [r for r in rows if channel is None or r.channel == channel]
    q = query / np.linalg.norm(query)

    def similarity(r: Stored) -> float:
        return float(r.vector @ q / np.linalg.norm(r.vector))

    samples = {
        g: [
            similarity(r) for r in sorted((r for r in selected if r.group is g), key=lambda r: r.id)
        ][:sample]
        for g in ScriptGroup
    }
    groups = {g: SimilarityDistribution.of(s) for g, s in samples.items()}
    overall = SimilarityDistribution.of([s for values in samples.values() for s in values])

    def relevance(r: Stored) -> float | None:
        for distribution in (groups[r.group], overall):
            if distribution.usable:
                return distribution.standardise(similarity(r))
        return None

    ranked = sorted(
        selected,
        key=lambda r: (relevance(r) is None, -(relevance(r) or 0.0), -similarity(r), r.id),
    )
    top = [(r.id, relevance(r)) for r in ranked]
    # The windows past the k-th that tie with it: either may be the k-th (assert_same).
    last = k
    while last < len(top) and ties(top[last][1], top[k - 1][1]):
        last += 1
    return top[:last]


def nearest(runtime: HistoryRuntime, query: HistoryQuery) -> list[tuple[uuid.UUID, float | None]]:
    vector = runtime.model.embed_query(query.text)
    model = runtime.model.identity.id
    matches = runtime.windows.nearest("acme", model, vector, query, query.limit)
    return [(m.window_id, m.relevance) for m in matches]


def assert_same(found: list[Any], expected: list[Any]) -> None:
    """The same windows in the same order, but windows whose relevances tie (two windows of
    one group at one similarity) may come in either order, and a tie at the k-th place may
    be broken either way: the two computations round differently."""
    places = len(found)
    assert all(ties(e[1], expected[places - 1][1]) for e in expected[places:]), (
        f"{len(expected)} windows expected, {places} found"
    )
    assert [f[1] for f in found] == pytest.approx([e[1] for e in expected[:places]], abs=1e-3)
    assert len({f[0] for f in found}) == places
    for place, (window, _) in enumerate(found):
        tied = {e[0] for e in expected if ties(e[1], expected[place][1])}
        assert window == expected[place][0] or window in tied, (
            f"place {place}: {window} where the reference has {expected[place][0]}"
        )


def query_vector(runtime: HistoryRuntime) -> np.ndarray:
    return np.array(runtime.model.embed_query(QUERY).values, dtype=np.float64)


def with_index(runtime: HistoryRuntime) -> None:
    runtime.windows.nearest(
        "acme", runtime.model.identity.id, runtime.model.embed_query(QUERY), HistoryQuery(QUERY), 1
    )
    assert runtime.window_indexes.build_next() is not None


@pytest.mark.parametrize("sample", [embeddings.DISTRIBUTION_SAMPLE, SMALL_SAMPLE])
@pytest.mark.parametrize("channel", [None, "A"])
def test_the_exact_path_standardises_against_each_groups_sample_and_ranks_every_window(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch, sample: int, channel: str | None
) -> None:
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", sample)
    runtime: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit)
    expected = reference(stored(kit), query_vector(runtime), 10, sample, channel)
    assert_same(nearest(runtime, HistoryQuery(QUERY, limit=10, channel_id=channel)), expected)
    if sample == SMALL_SAMPLE and channel is None:
        # The sample is smaller than the groups: the statistics are an estimate, not those
        # of every window (ADR 0112's exact figures are kept only for small groups).
        exact = reference(stored(kit), query_vector(runtime), 10, 10_000, channel)
        assert [e[1] for e in expected[:10]] != pytest.approx([e[1] for e in exact[:10]], abs=1e-3)


@pytest.mark.parametrize("channel", [None, "A"])
def test_the_index_path_gives_the_exact_paths_answer_with_the_same_sample(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch, channel: str | None
) -> None:
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SMALL_SAMPLE)
    # The filter is walked on the graph too, not routed to the exact scan.
    monkeypatch.setattr(embeddings, "EXACT_FILTERED_WINDOWS", 0)
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    indexed: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(indexed, kit)
    with_index(indexed)
    query = HistoryQuery(QUERY, limit=10, channel_id=channel)
    expected = reference(stored(kit), query_vector(indexed), 10, SMALL_SAMPLE, channel)
    assert_same(nearest(exact, query), expected)
    assert_same(nearest(indexed, query), expected)


def test_a_filtered_search_is_standardised_against_the_windows_it_can_return(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "EXACT_FILTERED_WINDOWS", 0)
    indexed: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(indexed, kit)
    with_index(indexed)
    unfiltered = dict(nearest(indexed, HistoryQuery(QUERY, limit=100)))
    filtered = nearest(indexed, HistoryQuery(QUERY, limit=10, channel_id="B"))
    rows = stored(kit)
    assert_same(filtered, reference(rows, query_vector(indexed), 10, 1000, "B"))
    moved = [abs((unfiltered[w] or 0) - (r or 0)) for w, r in filtered]
    assert max(moved) > 0.05, "the org's distribution would give the same relevances"


def test_a_selective_filter_on_an_org_with_an_index_is_scanned_exactly(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groups larger than their sample, and a graph walk that gives up early (as a walk of a
    # large org past the windows a selective filter rejects does: hnsw.max_scan_tuples),
    # which the planner takes (a table this small is otherwise cheaper to scan and sort).
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", 4)
    monkeypatch.setattr(embeddings, "HISTORY_MAX_SCAN_TUPLES", 8)
    monkeypatch.setattr(embeddings, "HISTORY_EF_SEARCH", 1)  # the candidates' count: 2k
    for switch in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
        monkeypatch.setitem(embeddings.INDEX_PATH_SETTINGS, switch, "off")
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    indexed: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(indexed, kit, filler=300)
    with_index(indexed)
    # Channel B holds none of the query's nearest windows; the time range keeps 10.
    for query, selected in (
        (HistoryQuery(QUERY, limit=20, channel_id="B"), 20),
        (HistoryQuery(QUERY, limit=20, provider="slack", channel_id="B"), 20),
        (HistoryQuery(QUERY, limit=20, since=kit.at(40 * 25)), 10),
    ):
        expected = nearest(exact, query)
        assert len(expected) == selected
        assert nearest(indexed, query) == expected
        with monkeypatch.context() as walk_only:
            walk_only.setattr(embeddings, "EXACT_FILTERED_WINDOWS", 0)
            # A walk that keeps one candidate and visits one tuple past it (the settings
            # override the candidates' count): with 2k candidates, which windows a walk
            # reaches depends on the graph the build drew, and one run in many found them all.
            walk_only.setitem(embeddings.INDEX_PATH_SETTINGS, "hnsw.ef_search", "1")
            walk_only.setitem(embeddings.INDEX_PATH_SETTINGS, "hnsw.max_scan_tuples", "1")
            walked = nearest(indexed, query)
        assert len(walked) < len(expected), "the walk alone returns fewer: the test can fail"


def test_an_org_larger_than_its_sample_is_counted_for_its_index(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SMALL_SAMPLE)
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    nearest(runtime, HistoryQuery(QUERY))
    assert kit.scalar("SELECT count(*) FROM dw_window_indexes") == 0, "84 windows: below"
    monkeypatch.setattr(search_path, "INDEX_THRESHOLD_WINDOWS", sum(CHANNELS.values()))
    fresh: HistoryRuntime = make_runtime(history_search_mode="auto")
    nearest(fresh, HistoryQuery(QUERY))
    assert kit.scalar("SELECT org_id FROM dw_window_indexes") == "acme"
