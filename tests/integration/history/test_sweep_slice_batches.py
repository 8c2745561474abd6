"""A slice's partitions are swept together (docs/adr/0115): one read of all their main
streams, model calls holding several partitions' windows, one upsert and one watermark save
per call; a poison window in such a batch is isolated without costing the others."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from memory.application.history.ports import EmbeddedWindow
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.conversation import ChatMessage, ConversationWindow, WindowClosure
from memory.domain.history.partition import Partition
from memory.domain.history.sweep_plan import LateCatchUp, SweepPosition, WatermarkMark
from memory.entrypoints.history_runtime import HistoryRuntime

MODEL = "hash:1024"


class CountingWatermarks:
    """The runtime's watermark repository, counting its saves."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.saves: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def store(self, watermark: Any) -> None:
        self.saves.append(1)
        self._inner.store(watermark)

    def store_many(self, watermarks: Any) -> None:
        self.saves.append(len(watermarks))
        self._inner.store_many(watermarks)


class CountingLog:
    """The runtime's event log, counting its main-stream reads."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.reads: list[int] = []
        self.limits: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def read_main(self, partition: Partition, *args: Any) -> Any:
        self.reads.append(1)
        return self._inner.read_main(partition, *args)

    def read_main_many(self, marks: Any, limit: int) -> Any:
        self.reads.append(len(marks))
        self.limits.append(limit)
        return self._inner.read_main_many(marks, limit)


def one_window_each(kit, org: str, channels: int, text: str = "") -> list[ChatEvent]:
    return [
        kit.message(
            f"{org}-{c}-{i}", i, f"{text}question {i} about order {c} of {org}", channel=f"C{c}"
        )
        for c in range(channels)
        for i in range(2)
    ]


def test_a_slice_embeds_several_partitions_windows_per_model_call(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", one_window_each(kit, "acme", 40))
    watermarks = CountingWatermarks(runtime.watermarks)
    log = CountingLog(runtime.events)
    sweeper = kit.sweeper(
        runtime, watermarks=watermarks, events=log, batch_windows=16, slice_partitions=32
    )
    report = sweeper.run_pass()
    assert (report.windows_embedded, report.partitions, report.slices) == (40, 40, 2)
    # Two slices (32 + 8 partitions): one read each, and model calls of 16 windows taken
    # across partitions, each saved with one save of its partitions' watermarks.
    assert log.reads == [32, 8]
    assert [len(c) for c in runtime.model.document_calls] == [16, 16, 8]  # type: ignore[attr-defined]
    assert watermarks.saves == [16, 16, 8]
    covered = kit.covered()
    assert len(covered) == len(set(covered)) == 80
    for c in range(40):
        watermark = runtime.watermarks.get(Partition("acme", "slack", f"C{c}"), MODEL)
        assert watermark.windows_embedded == 1
        assert watermark.mark.position is not None
        assert watermark.mark.position.event_id == f"acme-{c}-1"
    assert sweeper.run_pass().partitions == 0  # nothing left due


def test_a_poison_window_in_a_batch_of_several_partitions_poisons_only_itself(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    events = one_window_each(kit, "acme", 6)
    events[6] = kit.message("acme-3-0", 0, "this one makes the model choke POISON", channel="C3")
    runtime.service.ingest("acme", events)
    runtime.model.reject_marker = "POISON"  # type: ignore[attr-defined]
    report = kit.sweeper(runtime).run_pass()
    assert (report.windows_embedded, report.windows_poisoned) == (5, 1)
    assert (report.partitions_stalled, report.partitions_interrupted) == (0, 0)
    assert sorted(r["external_channel_id"] for r in kit.rows()) == ["C0", "C1", "C2", "C4", "C5"]
    for c in range(6):
        watermark = runtime.watermarks.get(Partition("acme", "slack", f"C{c}"), MODEL)
        assert len(watermark.poison_windows) == (1 if c == 3 else 0)
        assert watermark.mark.position is not None  # every partition advanced
    # The rejected batch of 6 was halved until the poison window was alone: a few calls,
    # not one per window, and no good window was ever rejected with it twice.
    calls = runtime.model.document_calls  # type: ignore[attr-defined]
    assert [len(c) for c in calls] == [6, 3, 3, 1, 2]


def test_one_read_of_many_partitions_answers_as_a_read_of_each(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message(f"a{i}", i * 40, channel="A") for i in range(30)])
    runtime.service.ingest("acme", [kit.message(f"b{i}", i * 40, channel="B") for i in range(5)])
    runtime.service.ingest("acme", [kit.message(f"c{i}", i * 40, channel="C") for i in range(4)])
    runtime.service.ingest("globex", [kit.message(f"a{i}", i * 40, channel="A") for i in range(3)])
    runtime.service.sweep(trigger="test")
    # After the pass: B gets a late message (before its position), C a new one, and a
    # partition that never had a watermark, D, some messages.
    runtime.service.ingest("acme", [kit.message("b-late", 41, channel="B")])
    runtime.service.ingest("acme", [kit.message("c-new", 500, channel="C")])
    runtime.service.ingest("acme", [kit.message(f"d{i}", i, channel="D") for i in range(3)])
    partitions = [Partition("acme", "slack", ch) for ch in "ABCD"] + [
        Partition("globex", "slack", "A")
    ]
    marks = [(p, runtime.watermarks.get(p, MODEL).mark) for p in partitions]
    marks.append((Partition("acme", "slack", "A"), WatermarkMark(None, 0)))  # from the start
    for limit in (2, 15, 500):
        together = runtime.events.read_main_many(marks[:5], limit)
        assert together == {p: runtime.events.read_main(p, m, limit) for p, m in marks[:5]}
        (fresh,) = runtime.events.read_main_many(marks[5:], limit).values()
        assert fresh == runtime.events.read_main(*marks[5], limit)
    late = runtime.events.read_main_many(marks[:5], 500)[Partition("acme", "slack", "B")]
    assert late.late_pending and late.read.messages == ()
    assert [m.event_id for m in fresh.read.messages][:3] == ["a0", "a1", "a2"]


def test_windows_of_two_orgs_with_the_same_event_ids_keep_each_other(make_runtime, kit) -> None:
    """The batch's replacement of overlapping rows matches events within their own
    partition: another org's row over events with the same ids is not replaced."""
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    for org in ("acme", "globex"):
        runtime.service.ingest(org, [kit.message(f"m{i}", i) for i in range(3)])
    sweeper = kit.sweeper(runtime)
    assert sweeper.run_pass("acme").windows_embedded == 1
    assert sweeper.run_pass("globex").windows_embedded == 1
    assert sorted(r["org_id"] for r in kit.rows()) == ["acme", "globex"]


def test_a_slice_stops_at_its_windows_and_leaves_the_partitions_it_did_not_reach_first(
    make_runtime, kit
) -> None:
    """A slice takes many partitions but consumes at most `slice_windows` windows: a
    partition it reached consumes what is left of them (then waits behind the others), one
    it did not reach is left as it was and goes first in the next slice."""
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    events = [
        kit.message(f"{ch}{w}{i}", w * 40 + i, f"question {w} about order {i} in {ch}", channel=ch)
        for ch in "ABC"
        for w in range(3)
        for i in range(2)
    ]
    runtime.service.ingest("acme", events)
    log = CountingLog(runtime.events)
    sweeper = kit.sweeper(runtime, events=log, visit_windows=3, slice_windows=4)
    report = sweeper.run_pass()
    assert (report.windows_embedded, report.slices) == (9, 3)
    # Slice 1: A's 3 windows and 1 of B's; C not reached. Slice 2: C first (still due
    # since its ingest), then B's second window. Slice 3: B's last.
    calls = runtime.model.document_calls  # type: ignore[attr-defined]
    assert [[t.split(" in ")[-1] for t in call] for call in calls] == [
        ["A", "A", "A", "B"],
        ["C", "C", "C", "B"],
        ["B"],
    ]
    assert report.partitions == 5  # visits: A, B | C, B | B (C was not visited in slice 1)
    assert len(kit.covered()) == len(set(kit.covered())) == 18


def test_a_slice_shares_its_read_among_its_partitions_and_a_cut_read_goes_on_alone(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    events = [
        kit.message(f"{ch}{w:02d}{i}", w * 40 + i, f"question {w} about order {i}", channel=ch)
        for ch in "ABC"
        for w in range(10)
        for i in range(2)
    ]
    runtime.service.ingest("acme", events)
    log = CountingLog(runtime.events)
    # 30 messages for 3 partitions: 10 each, raised to a full window's 15.
    sweeper = kit.sweeper(runtime, events=log, slice_read_messages=30)
    report = sweeper.run_pass()
    assert log.limits[0] == 15
    assert (report.windows_embedded, report.partitions) == (30, 3)
    covered = kit.covered()
    assert len(covered) == len(set(covered)) == 60


def test_the_windows_a_batch_writes_leave_no_pending_list_for_the_next_batch_to_scan(
    make_runtime, kit
) -> None:
    # Each batch looks up the windows covering its events (the replacement of overlapping
    # windows) through the GIN index on `source_event_ids`. With GIN's pending list on, the
    # entries the batches before wrote waited in an unsorted list that every lookup scanned
    # whole: 30-45 ms per batch, depending on what was swept before (docs/adr/0136).
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", one_window_each(kit, "acme", 40))
    assert runtime.service.sweep(trigger="test").windows_embedded == 40
    with kit.database.connection() as conn:
        row = conn.execute(
            "SELECT gin_clean_pending_list('dw_message_embeddings_sources_idx'::regclass) AS n"
        ).fetchone()
    assert row is not None and row["n"] == 0  # pending pages: every entry is in the index


def test_a_new_orgs_windows_and_lag_are_checked_through_its_partitions_indexes(
    make_runtime, kit
) -> None:
    # Statistics that know one org estimate any other at one row: planned for that value,
    # the upsert's check that a window's events exist and a partition's lag count scanned
    # the new org's every row through (org_id, occurred_at), once per window (24.6 ms
    # instead of 0.13 ms, docs/adr/0136). They are planned for any org.
    runtime: HistoryRuntime = make_runtime()
    for org in ("known", "newco"):
        events = [kit.message(f"{org}-{i}", i * 0.5, channel=f"C{i % 4}") for i in range(800)]
        for i in range(0, len(events), 200):
            runtime.service.ingest(org, events[i : i + 200])
        if org == "known":
            with kit.database.connection() as conn:
                conn.execute("ANALYZE dw_chat_events")
    partition = Partition("newco", "slack", "C0")
    messages = tuple(
        ChatMessage(f"newco-{i}", "ali", "a question", kit.T0 + timedelta(minutes=i * 0.5))
        for i in (0, 4, 8)
    )
    window = ConversationWindow(messages, WindowClosure.GAP)
    embedded = EmbeddedWindow(uuid.uuid4(), partition, window, EmbeddingVector((0.5,) * 1024))
    with kit.database.transaction() as conn:
        lag = runtime.events.count_unconsumed(partition, WatermarkMark(None, 0))
        written = runtime.windows.upsert(MODEL, [embedded])
        row = conn.execute(
            "SELECT pg_stat_get_xact_numscans('dw_chat_events_retention_idx'::regclass) AS idx_scan"
        ).fetchone()
    assert (lag, written) == (200, {embedded.id})
    assert row is not None and row["idx_scan"] == 0


def test_a_new_orgs_partition_is_read_through_its_own_indexes(make_runtime, kit) -> None:
    # Statistics that have not seen the new org estimate it at one row, and then the
    # narrower (org_id, occurred_at) index looked cheapest: read_main's horizon and first
    # and last instants scanned the new org's every row (77-98 ms per read of a partition of
    # 3,000 among 30,000), and read_main_many's late check did. Planned for an average org
    # instead, the stream did among 1,000 small orgs (100-200 ms per read). Each part of a
    # read is now ordered so that only the partition's own indexes serve it.
    runtime: HistoryRuntime = make_runtime()
    runtime.events.append(
        "known", [kit.message(f"known-{i}", i * 0.5, channel=f"C{i % 4}") for i in range(800)]
    )
    with kit.database.connection() as conn:
        conn.execute("ANALYZE dw_chat_events")
    events = [kit.message(f"newco-{i}", i * 0.5, channel=f"C{i % 4}") for i in range(800)]
    for i in range(0, len(events), 200):
        runtime.service.ingest("newco", events[i : i + 200])
    partition = Partition("newco", "slack", "C0")
    seen = kit.scalar(
        "SELECT max(ingest_seq) FROM dw_chat_events WHERE org_id = 'newco'"
        " AND event_id = 'newco-400'"
    )
    runtime.service.ingest("newco", [kit.message("late-1", 100.1, channel="C0")])
    position = SweepPosition(kit.at(200), "newco-400")
    late = LateCatchUp(seen + 1000)

    def retention_scans(conn: Any) -> int:
        row = conn.execute(
            "SELECT pg_stat_get_xact_numscans('dw_chat_events_retention_idx'::regclass) AS n"
        ).fetchone()
        return int(row["n"])

    with kit.database.transaction() as conn:
        before = retention_scans(conn)
        fresh = runtime.events.read_main(partition, WatermarkMark(None, 0), 50)
        after_position = runtime.events.read_main(partition, WatermarkMark(position, seen), 50)
        late_read = runtime.events.read_late(
            partition, WatermarkMark(position, seen, late), late, 50
        )
        together = runtime.events.read_main_many(
            [
                (partition, WatermarkMark(None, 0)),
                (Partition("newco", "slack", "C1"), WatermarkMark(position, seen)),
            ],
            50,
        )
        scans = retention_scans(conn) - before
    assert [m.event_id for m in fresh.read.messages[:2]] == ["newco-0", "newco-4"]
    assert after_position.late_pending and not after_position.read.messages
    assert [m.event_id for m in late_read.messages] == ["late-1"]
    assert together[partition].read.messages == fresh.read.messages
    assert not together[Partition("newco", "slack", "C1")].late_pending
    assert scans == 0
