from __future__ import annotations

import pytest
from tests.fakes import TEST_ACTOR

from memory.application.embedding import ModelMisconfigured, ModelUnavailable
from memory.application.history.sweep import EMBED_BATCH_WINDOWS
from memory.domain.history.conversation import WINDOW_MESSAGE_CAP
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG, GlobalState
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.window_identity import window_id
from memory.entrypoints.history_runtime import HistoryRuntime

P = Partition("acme", "slack", "C1")
TALK = "could you help me reset my password please"


def conversation(kit, clock) -> list:
    """Three closed sessions and an open tail:
    a: 3 substantive messages; b: 2 messages of nothing; c: 17 messages (15 + 2); d: open."""
    events = [kit.message(f"a{i}", i) for i in range(3)]
    events += [kit.message("b0", 60, "ok"), kit.message("b1", 61, "k!")]
    events += [kit.message(f"c{i:02d}", 120 + i, f"{TALK} {i}") for i in range(17)]
    tail = (clock.now - kit.T0).total_seconds() / 60 - 10
    events.append(kit.message("d0", tail, "still talking about the password"))
    return events


def test_backfill_from_an_empty_watermark(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", conversation(kit, clock))
    report = runtime.service.sweep(trigger="test")
    assert report.summary() == {
        "windows_embedded": 3,
        "windows_skipped": 1,
        "windows_poisoned": 0,
        "windows_open": 1,
        "events_poisoned": 0,
        "partitions": 1,
        "partitions_stalled": 0,
        "partitions_busy": 0,
        "partitions_interrupted": 0,
    }
    stored = kit.rows()
    assert [r["source_event_ids"] for r in stored] == [
        ["a0", "a1", "a2"],
        [f"c{i:02d}" for i in range(WINDOW_MESSAGE_CAP)],
        ["c15", "c16"],
    ]
    assert {r["model"] for r in stored} == {"hash:1024"} and {r["dims"] for r in stored} == {1024}
    assert stored[0]["content"] == "\n".join(f"ali: {TALK}" for _ in range(3))
    assert stored[0]["id"] == window_id(P, "hash:1024", ["a0", "a1", "a2"])
    watermark = runtime.watermarks.get(P, "hash:1024")
    assert watermark.mark.position == SweepPosition(kit.at(136), "c16")
    assert watermark.windows_embedded == 3 and watermark.windows_skipped == 1


def test_the_watermark_advances_and_a_second_pass_only_does_new_windows(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", conversation(kit, clock))
    runtime.service.sweep(trigger="test")
    edge = runtime.model
    calls_before = len(edge.attempted)  # type: ignore[attr-defined]
    assert runtime.service.sweep(trigger="test").windows_embedded == 0  # nothing new
    assert len(edge.attempted) == calls_before  # type: ignore[attr-defined]
    clock.advance(minutes=25)  # the tail is now idle for 35 minutes: closed
    report = runtime.service.sweep(trigger="test")
    assert (report.windows_embedded, report.windows_open) == (1, 0)
    assert kit.covered()[-1] == "d0"
    assert len(kit.covered()) == len(set(kit.covered())) == 21


def test_denied_and_verification_traffic_is_never_embedded(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme",
        [
            kit.message("m1", 0, "how do I reset my password here"),
            kit.message("v1", 1, "your verification code is 123456", decision="verification"),
            kit.message("d1", 2, "forbidden content from a blocked user", decision="denied"),
            kit.message("p1", 3, "processed reply from the worker", decision="processed"),
            kit.message("r1", 4, "a reaction event", event_type="reaction"),
        ],
    )
    runtime.service.sweep(trigger="test")
    assert kit.covered() == ["m1", "p1"]
    assert "verification" not in kit.rows()[0]["content"]


def test_a_transient_model_failure_stalls_without_moving_the_watermark(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    edge = runtime.model
    runtime.service.ingest("acme", conversation(kit, clock))
    edge.failure = ModelUnavailable("hash:1024", "connection refused")  # type: ignore[attr-defined]
    for _ in range(2):
        report = runtime.service.sweep(trigger="test")
        assert (report.partitions_stalled, report.windows_embedded) == (1, 0)
        assert report.stall_reasons == ["model_unavailable"]
    watermark = runtime.watermarks.get(P, "hash:1024")
    assert watermark.mark.position is None
    assert watermark.stalls == 1 and watermark.is_stalled  # one event per outage
    assert kit.rows() == []
    edge.failure = None  # type: ignore[attr-defined]
    assert runtime.service.sweep(trigger="test").windows_embedded == 3
    assert not runtime.watermarks.get(P, "hash:1024").is_stalled


def test_a_misconfigured_model_stalls_too(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", conversation(kit, clock))
    runtime.model.failure = ModelMisconfigured("hash:1024", "unknown model")  # type: ignore[attr-defined]
    report = runtime.service.sweep(trigger="test")
    assert report.stall_reasons == ["model_misconfigured"]
    assert runtime.watermarks.get(P, "hash:1024").last_stall_reason == "model_misconfigured"


def test_a_failing_model_stalls_only_the_partitions_it_touches(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", conversation(kit, clock))
    runtime.service.ingest("acme", [kit.message("n1", 0, "ok", channel="C9")])  # nothing to embed
    edge = runtime.model
    edge.failure = ModelUnavailable("hash:1024", "down")  # type: ignore[attr-defined]
    report = runtime.service.sweep(trigger="test")
    assert (report.partitions, report.partitions_stalled, report.windows_skipped) == (2, 1, 1)
    quiet = runtime.watermarks.get(Partition("acme", "slack", "C9"), "hash:1024")
    assert quiet.mark.position == SweepPosition(kit.at(0), "n1")
    assert len(edge.document_calls) == 1  # the model is not called again in the same pass  # type: ignore[attr-defined]


def test_a_poison_window_is_recorded_and_skipped(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme",
        [
            kit.message("g1", 0, "a perfectly fine question about invoices"),
            kit.message("x1", 60, "this window makes the model choke POISON"),
            kit.message("x2", 61, "and this message is in that window too"),
            kit.message("g2", 120, "another fine question about refunds"),
        ],
    )
    runtime.model.reject_marker = "POISON"  # type: ignore[attr-defined]
    report = runtime.service.sweep(trigger="test")
    assert (report.windows_embedded, report.windows_poisoned) == (2, 1)
    assert kit.covered() == ["g1", "g2"]
    watermark = runtime.watermarks.get(P, "hash:1024")
    (poison,) = watermark.poison_windows
    assert poison.window_id == window_id(P, "hash:1024", ["x1", "x2"])
    assert (poison.first.event_id, poison.last.event_id, poison.message_count) == ("x1", "x2", 2)
    assert watermark.mark.position == SweepPosition(kit.at(120), "g2")  # not stalled by it
    assert runtime.service.sweep(trigger="test").windows_poisoned == 0  # never retried


def test_reads_and_batches_of_any_size_give_the_same_windows(make_runtime, kit) -> None:
    events = []
    for s in range(12):  # 12 sessions of 1..20 messages
        size = 1 + s * 19 // 11
        events += [
            kit.message(f"s{s:02d}m{i:02d}", s * 100 + i, f"{TALK} {s}") for i in range(size)
        ]
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("big", events)
    runtime.service.ingest("small", events)
    runtime.service.sweep("big", trigger="test")
    edge = EdgeModelCalls(runtime)
    small = kit.sweeper(runtime, read_limit=WINDOW_MESSAGE_CAP, batch_windows=2)
    report = small.run_pass("small")
    assert report.windows_embedded == len([r for r in kit.rows() if r["org_id"] == "big"])

    def windows(org: str) -> list[tuple[list[str], str]]:
        return [(r["source_event_ids"], r["content"]) for r in kit.rows() if r["org_id"] == org]

    assert windows("small") == windows("big")
    assert max(edge.sizes_since_start()) <= 2


class EdgeModelCalls:
    def __init__(self, runtime: HistoryRuntime) -> None:
        self.model = runtime.model
        self.start = len(self.model.document_calls)  # type: ignore[attr-defined]

    def sizes_since_start(self) -> list[int]:
        return [len(c) for c in self.model.document_calls[self.start :]]  # type: ignore[attr-defined]


def test_an_embedding_call_holds_at_most_a_batch_of_windows(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme", [kit.message(f"w{i:03d}", i * 35, f"{TALK} {i}") for i in range(40)]
    )
    report = runtime.service.sweep(trigger="test")
    assert report.windows_embedded == 40
    sizes = [len(call) for call in runtime.model.document_calls]  # type: ignore[attr-defined]
    assert sizes == [EMBED_BATCH_WINDOWS, EMBED_BATCH_WINDOWS, 40 - 2 * EMBED_BATCH_WINDOWS]
    assert runtime.watermarks.get(P, "hash:1024").version == 1 + 3  # one advance per batch


def test_the_sweep_is_a_no_op_for_an_org_with_the_feature_off(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    runtime.service.ingest("acme", conversation(kit, clock))
    runtime.service.ingest("globex", conversation(kit, clock))
    off = runtime.service.sweep(trigger="test")
    assert (off.partitions, off.windows_embedded) == (0, 0)
    assert runtime.watermarks.find(P, "hash:1024") is None

    kit.enable_semantic(runtime)
    runtime.service.set_org_flag("globex", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    runtime.service.set_org_flag("acme", MODULE_FLAG, False, actor=TEST_ACTOR)
    assert runtime.service.sweep(trigger="test").partitions == 0
    runtime.service.set_org_flag("acme", MODULE_FLAG, None, actor=TEST_ACTOR)
    report = runtime.service.sweep(trigger="test")
    assert (report.partitions, report.windows_embedded) == (1, 3)
    assert {r["org_id"] for r in kit.rows()} == {"acme"}


def test_under_opt_in_only_the_orgs_that_opted_in_wait_and_are_swept(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    for org in ("acme", "globex", "initech"):
        runtime.service.ingest(org, conversation(kit, clock))
    service = runtime.service
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, GlobalState.OPT_IN, actor=TEST_ACTOR)
    assert service.sweep(trigger="test").partitions == 0  # nobody opted in yet
    assert service.sweep_backlog().orgs == 0
    service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    service.set_org_flag("globex", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    backlog = service.sweep_backlog()
    assert (backlog.orgs, [w.org_id for w in backlog.longest]) == (1, ["acme"])
    report = service.sweep(trigger="test")
    assert (report.partitions, report.windows_embedded) == (1, 3)
    assert {r["org_id"] for r in kit.rows()} == {"acme"}
    # The same org turning the module flag off is left out too.
    service.set_org_flag("acme", MODULE_FLAG, False, actor=TEST_ACTOR)
    service.ingest("acme", [kit.message("late", 500)])
    assert service.sweep_backlog().orgs == 0
    # Back to `on`: every org that did not opt out is swept (initech), globex still is not.
    service.set_org_flag("acme", MODULE_FLAG, None, actor=TEST_ACTOR)
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, GlobalState.ON, actor=TEST_ACTOR)
    service.sweep(trigger="test")
    assert {r["org_id"] for r in kit.rows()} == {"acme", "initech"}
    assert runtime.flag_store.global_states() == {SEMANTIC_SEARCH_FLAG: GlobalState.ON}


def test_the_sweep_of_one_org(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", conversation(kit, clock))
    runtime.service.ingest("globex", conversation(kit, clock))
    report = runtime.service.sweep("globex", trigger="test")
    assert report.partitions == 1
    assert {r["org_id"] for r in kit.rows()} == {"globex"}


@pytest.mark.parametrize("org", ["acme"])
def test_windows_are_upserted_by_their_deterministic_id(make_runtime, kit, clock, org: str) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(org, conversation(kit, clock))
    runtime.service.sweep(trigger="test")
    before = kit.rows()
    w = runtime.watermarks.get(P, "hash:1024")
    w.reset()
    runtime.watermarks.store(w)
    runtime.service.sweep(trigger="test")  # everything again: same ids, same rows
    after = kit.rows()
    assert [r["id"] for r in after] == [r["id"] for r in before]
    assert [r["content"] for r in after] == [r["content"] for r in before]
