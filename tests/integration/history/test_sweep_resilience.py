"""Concurrent sweepers, crashes between embedding and advancing, model swaps."""

from __future__ import annotations

import threading

import pytest
from tests.fakes import TEST_ACTOR, FakeModel

from memory.application.history.sweep import Sweeper
from memory.domain.errors import InvalidInput
from memory.domain.history.partition import Partition
from memory.domain.history.search import HistoryQuery
from memory.domain.history.watermark import SweepWatermark
from memory.entrypoints.history_runtime import HistoryRuntime

P = Partition("acme", "slack", "C1")
TALK = "could you help me reset my password please"


def sessions(kit, count: int = 5, org_channel: str = "C1") -> list:
    return [
        kit.message(f"s{s}m{i}", s * 60 + i, f"{TALK} {s} {i}", channel=org_channel)
        for s in range(count)
        for i in range(3)
    ]


def test_two_sweepers_never_embed_the_same_partition_at_once(make_runtime, kit) -> None:
    first: HistoryRuntime = make_runtime()
    second: HistoryRuntime = make_runtime()
    kit.enable_semantic(first)
    first.service.ingest("acme", sessions(kit))
    first.model.gate = threading.Event()  # type: ignore[attr-defined]
    results = {}
    runner = threading.Thread(
        target=lambda: results.setdefault(
            "first", first.service.sweep(trigger="t", wait_for_locks=False)
        )
    )
    runner.start()
    assert first.model.entered.wait(10)  # type: ignore[attr-defined]
    busy = second.service.sweep(trigger="t", wait_for_locks=False)
    assert (busy.partitions_busy, busy.windows_embedded) == (1, 0)
    assert second.model.document_calls == []  # type: ignore[attr-defined]

    waiting = threading.Thread(
        target=lambda: results.setdefault(
            "second", second.service.sweep(trigger="t", wait_for_locks=True)
        )
    )
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # waits for the partition instead of skipping it
    first.model.gate.set()  # type: ignore[attr-defined]
    runner.join(20)
    waiting.join(20)
    assert results["first"].windows_embedded == 5
    assert results["second"].windows_embedded == 0  # it read after the first advanced
    assert second.model.document_calls == []  # type: ignore[attr-defined]
    assert len(kit.covered()) == len(set(kit.covered())) == 15


class SimulatedCrash(Exception):
    pass


class CrashOnce:
    """The watermark store dies once, after the rows were written: a crash between the
    upsert and the advance."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.crashed = False

    def find(self, partition, model):
        return self.inner.find(partition, model)

    def get(self, partition, model):
        return self.inner.get(partition, model)

    def get_many(self, partitions, model):
        return self.inner.get_many(partitions, model)

    def store(self, watermark: SweepWatermark) -> None:
        if not self.crashed:
            self.crashed = True
            raise SimulatedCrash
        self.inner.store(watermark)

    def store_many(self, watermarks) -> None:
        if not self.crashed:
            self.crashed = True
            raise SimulatedCrash
        self.inner.store_many(watermarks)


def crashing_sweeper(runtime: HistoryRuntime, kit, *, atomic: bool = False) -> Sweeper:
    """`atomic`: as the service builds it, a batch's rows and watermarks one transaction
    (docs/adr/0148); otherwise each store commits its own (stores without transactions)."""
    return kit.sweeper(
        runtime,
        watermarks=CrashOnce(runtime.watermarks),
        batch_windows=2,
        transactions=runtime.database if atomic else None,
    )


def test_a_crash_before_the_watermark_is_saved_leaves_no_row_of_the_batch(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", sessions(kit))
    with pytest.raises(SimulatedCrash):
        crashing_sweeper(runtime, kit, atomic=True).run_pass()
    # The batch's rows and its watermark's advance are one transaction: neither committed.
    assert kit.rows() == []
    assert runtime.watermarks.find(P, "hash:1024") is None
    report = runtime.service.sweep(trigger="test")
    assert report.windows_embedded == 5
    assert len(kit.rows()) == 5
    assert len(kit.covered()) == len(set(kit.covered())) == 15


def test_a_crash_between_embedding_and_advancing_is_overwritten_on_rerun(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", sessions(kit))
    with pytest.raises(SimulatedCrash):
        crashing_sweeper(runtime, kit).run_pass()
    written = kit.rows()
    assert len(written) == 2  # the first batch reached the table (its own transaction)
    assert runtime.watermarks.find(P, "hash:1024") is None  # ... but not the watermark
    report = runtime.service.sweep(trigger="test")
    assert report.windows_embedded == 5  # the first two again, overwritten in place
    after = kit.rows()
    assert len(after) == 5
    assert {r["id"] for r in written} <= {r["id"] for r in after}
    assert len(kit.covered()) == len(set(kit.covered())) == 15


def test_a_window_recut_after_a_crash_replaces_the_rows_it_overlaps(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", sessions(kit, count=2))
    with pytest.raises(SimulatedCrash):
        crashing_sweeper(runtime, kit).run_pass()
    assert [r["source_event_ids"] for r in kit.rows()] == [
        ["s0m0", "s0m1", "s0m2"],
        ["s1m0", "s1m1", "s1m2"],
    ]
    # Before the rerun, a message lands inside the first (already written) window.
    runtime.service.ingest("acme", [kit.message("s0m1b", 1.5, "one more line in that chat")])
    runtime.service.sweep(trigger="test")
    assert [r["source_event_ids"] for r in kit.rows()] == [
        ["s0m0", "s0m1", "s0m1b", "s0m2"],
        ["s1m0", "s1m1", "s1m2"],
    ]


def test_a_new_model_rebuilds_from_empty_and_never_mixes_with_the_old(
    make_runtime, kit, clock
) -> None:
    old: HistoryRuntime = make_runtime()
    kit.enable_semantic(old)
    old.service.ingest("acme", sessions(kit))
    assert old.service.sweep(trigger="t").windows_embedded == 5
    new_model = FakeModel(dimensions=384)  # the same edge fake, another model
    new: HistoryRuntime = make_runtime(new_model, history_model="hash:384")
    report = new.service.sweep(trigger="t")
    assert report.windows_embedded == 5  # new model = empty watermarks = rebuild
    assert {(r["model"], r["dims"]) for r in kit.rows()} == {("hash:1024", 1024), ("hash:384", 384)}
    result = new.service.search("acme", HistoryQuery("unrelated words entirely", limit=50))
    assert result.model == "hash:384"
    semantic_windows = {h.window_id for h in result.hits}
    assert semantic_windows <= {r["id"] for r in kit.rows(model="hash:384")}

    with pytest.raises(InvalidInput):
        new.service.drop_model("hash:384", actor=TEST_ACTOR)  # the active model is refused
    dropped = new.service.drop_model("hash:1024", actor=TEST_ACTOR)
    assert (dropped.rows_deleted, dropped.watermarks_reset) == (5, 1)
    assert {r["model"] for r in kit.rows()} == {"hash:384"}
    assert old.watermarks.get(P, "hash:1024").mark.position is None
    assert old.service.sweep(trigger="t").windows_embedded == 5  # switching back rebuilds


def test_watermarks_live_in_a_table_of_their_own_without_chat_text(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme", [*sessions(kit), kit.message("x", 500, "POISON pill text the model refuses")]
    )
    runtime.model.reject_marker = "POISON"  # type: ignore[attr-defined]
    runtime.service.sweep(trigger="t")
    assert kit.scalar("SELECT to_regclass('historysweep_events') IS NULL")
    with runtime.database.connection() as conn:
        rows = conn.execute("SELECT version, state FROM dw_sweep_watermarks").fetchall()
    (row,) = rows  # one partition, one model: one row, whatever its history
    assert row["version"] >= 3  # started, advanced, poison window skipped
    blob = bytes(row["state"])
    assert b"window_id" in blob  # the poison window is part of the state
    for text in ("reset my password", "POISON", "pill"):
        assert text.encode() not in blob
    assert b'"_position_event_id":"x"' in blob  # positions are event ids


def test_sweep_status_reports_watermark_lag_stalls_and_poison(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", sessions(kit, count=2))
    (before,) = runtime.service.sweep_status("acme").partitions
    assert before.mark.position is None and before.lag_events == 6
    assert before.oldest_closed_window_age_seconds == (clock.now - kit.at(2)).total_seconds()
    runtime.model.reject_marker = "1 1"  # type: ignore[attr-defined]
    runtime.service.sweep(trigger="t")
    (after,) = runtime.service.sweep_status("acme").partitions
    assert after.lag_events == 0 and after.oldest_closed_window_age_seconds is None
    assert [p.message_count for p in after.poison_windows] == [3]
    assert after.windows_embedded == 1 and not after.stalled
