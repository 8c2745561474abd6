"""The late-message rule (docs/adr/0030): a message at or before the watermark's position but
ingested after its horizon is embedded in a window of its own, never lost, never twice."""

from __future__ import annotations

import threading

from memory.domain.history.conversation import WINDOW_MESSAGE_CAP
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.window_identity import window_id
from memory.entrypoints.history_runtime import HistoryRuntime

P = Partition("acme", "slack", "C1")
TALK = "could you help me reset my password please"


def swept_runtime(make_runtime, kit) -> HistoryRuntime:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message(f"a{i}", i, TALK) for i in range(3)])
    runtime.service.ingest("acme", [kit.message("b0", 300, TALK)])
    report = runtime.service.sweep(trigger="test")
    assert report.windows_embedded == 2
    assert runtime.watermarks.get(P, "hash:1024").mark.position == SweepPosition(kit.at(300), "b0")
    return runtime


def test_a_late_message_is_embedded_in_a_window_of_its_own(make_runtime, kit) -> None:
    runtime = swept_runtime(make_runtime, kit)
    a_window = window_id(P, "hash:1024", ["a0", "a1", "a2"])
    runtime.service.ingest("acme", [kit.message("late1", 1.5, "forgot my password again")])
    runtime.service.ingest("acme", [kit.message("late2", 20, "still cannot log in after reset")])
    (status,) = runtime.service.sweep_status("acme").partitions
    assert status.lag_events == 2  # visible as lag, not lost
    assert status.oldest_closed_window_age_seconds is not None
    report = runtime.service.sweep(trigger="test")
    assert report.windows_embedded == 1
    by_id = {r["id"]: r["source_event_ids"] for r in kit.rows()}
    assert by_id[a_window] == ["a0", "a1", "a2"]  # the embedded window is not re-opened
    assert by_id[window_id(P, "hash:1024", ["late1", "late2"])] == ["late1", "late2"]
    assert sorted(kit.covered()) == sorted(["a0", "a1", "a2", "b0", "late1", "late2"])
    watermark = runtime.watermarks.get(P, "hash:1024")
    assert watermark.mark.late is None
    assert watermark.mark.position == SweepPosition(kit.at(300), "b0")
    calls = len(runtime.model.document_calls)  # type: ignore[attr-defined]
    assert runtime.service.sweep(trigger="test").windows_embedded == 0  # caught up: no phantoms
    assert len(runtime.model.document_calls) == calls  # type: ignore[attr-defined]
    assert runtime.service.sweep_status("acme").partitions[0].lag_events == 0


def test_an_open_late_window_holds_the_main_stream_until_it_closes(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    now = (clock.now - kit.T0).total_seconds() / 60
    # A window closed by the message cap 6 minutes ago; then a late message and a new one.
    runtime.service.ingest(
        "acme", [kit.message(f"m{i:02d}", now - 20 + i, f"{TALK} {i}") for i in range(15)]
    )
    assert runtime.service.sweep(trigger="test").windows_embedded == 1
    runtime.service.ingest("acme", [kit.message("late", now - 10, "one more about the password")])
    runtime.service.ingest("acme", [kit.message("next", now - 5, "and a new question on invoices")])
    held = runtime.service.sweep(trigger="test")
    assert (held.windows_embedded, held.windows_open) == (0, 1)
    clock.advance(minutes=40)
    released = runtime.service.sweep(trigger="test")
    assert released.windows_embedded == 2
    assert [r["source_event_ids"] for r in kit.rows()][-2:] in (
        [["late"], ["next"]],
        [["next"], ["late"]],
    )
    assert sorted(kit.covered()) == sorted([*(f"m{i:02d}" for i in range(15)), "late", "next"])


def test_a_large_late_import_is_consumed_in_cut_reads_exactly_once(make_runtime, kit) -> None:
    runtime = swept_runtime(make_runtime, kit)
    late = []
    for s in range(3):  # three late sessions of 20 messages between the two windows
        late += [
            kit.message(f"L{s}{i:02d}", 10 + s * 45 + i * 0.5, f"{TALK} {s}") for i in range(20)
        ]
    runtime.service.ingest("acme", late)
    small = kit.sweeper(runtime, read_limit=WINDOW_MESSAGE_CAP, batch_windows=1)
    report = small.run_pass()
    assert report.windows_embedded == 6  # each session: 15 + 5
    covered = kit.covered()
    assert len(covered) == len(set(covered)) == 4 + 60
    assert runtime.watermarks.get(P, "hash:1024").mark.late is None
    assert small.run_pass().windows_embedded == 0


def test_a_message_arriving_during_a_catch_up_is_caught_up_next(make_runtime, kit) -> None:
    runtime = swept_runtime(make_runtime, kit)
    runtime.service.ingest("acme", [kit.message("late1", 20, "forgot my password again")])
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    edge.entered.clear()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="test"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    runtime.service.ingest("acme", [kit.message("late2", 150, "the reset link expired too")])
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    runtime.service.sweep(trigger="test")
    covered = kit.covered()
    assert sorted(covered) == sorted(["a0", "a1", "a2", "b0", "late1", "late2"])
    assert len(covered) == len(set(covered))
