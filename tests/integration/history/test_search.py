from __future__ import annotations

import time

from tests.fakes import TEST_ACTOR, FakeModel

from memory.application.embedding import ModelUnavailable
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.search import HistoryQuery, MatchedBy, SemanticState
from memory.entrypoints.history_runtime import HistoryRuntime


def seeded(make_runtime, kit, **settings) -> HistoryRuntime:
    runtime: HistoryRuntime = make_runtime(**settings)
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme",
        [
            kit.message("pw1", 0, "how can I reset my password", sender="ali"),
            kit.message("pw2", 1, "the reset link never arrives in my inbox", sender="ali"),
            kit.message("pw3", 2, "ok I will resend it now", sender="agent"),
            kit.message("inv1", 60, "please send me the invoice for March", sender="mei"),
            kit.message("inv2", 61, "invoice attached with the tax number", sender="agent"),
            kit.message(
                "wa1", 120, "reset password on whatsapp please", provider="whatsapp", channel="W1"
            ),
        ],
    )
    runtime.service.sweep(trigger="t")
    return runtime


def ids(result) -> list[tuple[str, str]]:
    return [(h.event_id, h.matched_by.value) for h in result.hits]


def test_full_text_first_then_each_matched_window_with_its_messages(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    result = runtime.service.search("acme", HistoryQuery("reset link inbox", limit=10))
    assert result.semantic is SemanticState.ON and result.model == "hash:1024"
    assert ids(result)[0] == ("pw2", "fts")  # the only message with every word
    semantic = [h for h in result.hits if h.matched_by is MatchedBy.SEMANTIC]
    # The best window is the password chat: its other messages follow, in time order,
    # without repeating pw2 (already a full-text hit).
    assert [h.event_id for h in semantic[:2]] == ["pw1", "pw3"]
    assert semantic[0].window_id == semantic[1].window_id is not None
    assert semantic[0].similarity is not None and semantic[0].similarity > 0
    sims = [h.similarity for h in semantic]
    assert sims == sorted(sims, reverse=True)  # windows best first
    assert len({h.event_id for h in result.hits}) == len(result.hits)


def test_a_similarity_floor_drops_the_less_similar_windows(make_runtime, kit) -> None:
    query = HistoryQuery("reset link inbox", limit=20)
    open_result = seeded(make_runtime, kit).service.search("acme", query)
    windows = {h.window_id: h.similarity for h in open_result.hits if h.window_id is not None}
    assert len(windows) >= 2  # without a floor the nearest windows fill the page
    best = max(s for s in windows.values() if s is not None)

    floored = make_runtime(history_similarity_floor=best).service.search("acme", query)
    semantic = [h for h in floored.hits if h.matched_by is MatchedBy.SEMANTIC]
    assert semantic and all(h.similarity is not None and h.similarity >= best for h in semantic)
    assert len({h.window_id for h in semantic}) < len(windows)
    # Full-text hits never depend on the floor.
    assert [h for h in floored.hits if h.matched_by is MatchedBy.FTS] == [
        h for h in open_result.hits if h.matched_by is MatchedBy.FTS
    ]


def test_results_are_capped_at_the_limit(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    result = runtime.service.search("acme", HistoryQuery("reset", limit=3))
    assert len(result.hits) == 3
    assert [h.matched_by for h in result.hits[:2]] == [MatchedBy.FTS, MatchedBy.FTS]


def test_feature_off_is_full_text_only_and_never_calls_the_model(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    edge = runtime.model
    result = runtime.service.search("acme", HistoryQuery("reset password", limit=10))
    assert result.semantic is SemanticState.OFF and result.model is None
    assert {h.matched_by for h in result.hits} == {MatchedBy.FTS}
    assert edge.query_calls == 0  # type: ignore[attr-defined]


def test_a_failing_query_embedding_degrades_to_full_text(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    runtime.model.failure = ModelUnavailable("hash:1024", "down")  # type: ignore[attr-defined]
    result = runtime.service.search("acme", HistoryQuery("reset password", limit=10))
    assert result.semantic is SemanticState.DEGRADED and result.model == "hash:1024"
    assert {h.event_id for h in result.hits} == {"wa1", "pw1"}
    assert {h.matched_by for h in result.hits} == {MatchedBy.FTS}


def test_a_slow_query_embedding_degrades_within_its_budget(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit, history_query_embed_timeout=0.2)
    runtime.model.query_delay = 2.0  # type: ignore[attr-defined]
    started = time.perf_counter()
    result = runtime.service.search("acme", HistoryQuery("reset password", limit=10))
    assert time.perf_counter() - started < 1.5
    assert result.semantic is SemanticState.DEGRADED
    assert {h.event_id for h in result.hits} == {"wa1", "pw1"}


def test_semantic_hits_never_come_from_another_org_or_model(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)
    # Another org with the very same conversation, and the same org under another model.
    runtime.service.ingest("globex", [kit.message("g-pw1", 0, "how can I reset my password")])
    runtime.service.sweep(trigger="t")
    other_model = FakeModel("other:1024", dimensions=1024)
    other: HistoryRuntime = make_runtime(other_model)
    assert other.service.sweep(trigger="t").windows_embedded > 0
    assert {r["model"] for r in kit.rows()} == {"hash:1024", "other:1024"}

    result = runtime.service.search("acme", HistoryQuery("how can I reset my password", limit=100))
    acme_rows = {r["id"] for r in kit.rows(model="hash:1024") if r["org_id"] == "acme"}
    semantic = [h for h in result.hits if h.matched_by is MatchedBy.SEMANTIC]
    assert semantic and {h.window_id for h in semantic} <= acme_rows
    assert all(not h.event_id.startswith("g-") for h in result.hits)
    vector = runtime.model.embed_query("how can I reset my password")
    matches = runtime.windows.nearest(
        "acme", "hash:1024", vector, HistoryQuery("x", limit=100), 100
    )
    assert {m.window_id for m in matches} == acme_rows


def test_semantic_hits_respect_provider_channel_and_time_filters(make_runtime, kit) -> None:
    runtime = seeded(make_runtime, kit)

    def semantic_ids(**kwargs: object) -> set[str]:
        query = HistoryQuery("zzz nothing matches by words", limit=100, **kwargs)  # type: ignore[arg-type]
        return {h.event_id for h in runtime.service.search("acme", query).hits}

    assert semantic_ids() == {"pw1", "pw2", "pw3", "inv1", "inv2", "wa1"}
    assert semantic_ids(provider="whatsapp") == {"wa1"}
    assert semantic_ids(channel_id="C1") == {"pw1", "pw2", "pw3", "inv1", "inv2"}
    assert semantic_ids(since=kit.at(1)) == {"pw2", "pw3", "inv1", "inv2", "wa1"}
    assert semantic_ids(until=kit.at(61)) == {"pw1", "pw2", "pw3", "inv1"}


def test_an_empty_answer_says_why(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    query = HistoryQuery("password", limit=10)
    unknown = runtime.service.search("never-ingested", query)
    assert (unknown.hits, unknown.org_known, unknown.semantic) == ([], False, SemanticState.OFF)
    off = unknown.semantic_off_by
    assert off is not None and (off.flag, off.layer, off.default) == (
        SEMANTIC_SEARCH_FLAG,
        "global",
        True,
    )

    kit.enable_semantic(runtime)
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    opted_out = runtime.service.search("acme", query).semantic_off_by
    assert opted_out is not None and (opted_out.layer, opted_out.default) == ("org", False)
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, None, actor=TEST_ACTOR)

    runtime.service.ingest(
        "acme",
        [
            kit.message("a1", 0, "how can I reset my password"),
            kit.message("a2", 100, "the printer on floor two is jammed again"),
        ],
    )
    waiting = runtime.service.search("acme", query)
    assert (waiting.org_known, waiting.semantic, waiting.semantic_off_by) == (
        True,
        SemanticState.ON,
        None,
    )
    # Before the sweep visits, at least one window per partition with new messages
    # (docs/adr/0089: maintained state, no read of the partition at search time).
    assert waiting.pending_windows == 1
    runtime.service.sweep(trigger="t")
    assert runtime.service.search("acme", query).pending_windows == 0
