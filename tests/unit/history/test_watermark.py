from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from eventsourcing.application import Application

from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import LateCatchUp, WatermarkMark
from memory.domain.history.watermark import (
    WATERMARK_NAMESPACE,
    StallReason,
    SweepWatermark,
    new_watermark,
    watermark_id,
)

P = Partition("acme", "slack", "C1")
T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class InMemory(Application[uuid.UUID]):
    name = "HistorySweepTest"


def app() -> InMemory:
    return InMemory(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def test_one_watermark_per_partition_and_model_with_a_deterministic_id() -> None:
    a = new_watermark(P, "hash:1024")
    assert a.id == new_watermark(P, "hash:1024").id == watermark_id(P, "hash:1024")
    assert a.id != new_watermark(P, "local:multilingual-e5-small").id
    assert a.id != new_watermark(Partition("acme", "slack", "C2"), "hash:1024").id
    assert a.id == SweepWatermark.create_id("acme", "slack", "C1", "hash:1024")
    assert uuid.UUID("6c1f2f5e-2b0e-4f6e-9d8a-3a7b5c9e2d41") == WATERMARK_NAMESPACE


def test_a_new_watermark_is_empty() -> None:
    w = new_watermark(P, "m")
    assert w.mark == WatermarkMark(None, 0)
    assert w.partition == P


def test_advance_records_position_horizon_and_counts() -> None:
    w = new_watermark(P, "m")
    w.advance(WatermarkMark(SweepPosition(T, "e9"), 7), embedded=[uuid.uuid4()], skipped=2)
    assert w.mark == WatermarkMark(SweepPosition(T, "e9"), 7)
    assert (w.windows_embedded, w.windows_skipped) == (1, 2)
    assert w.last_advanced_at is not None


def test_a_watermark_never_moves_back() -> None:
    w = new_watermark(P, "m")
    w.advance(WatermarkMark(SweepPosition(T, "e9"), 7), embedded=[], skipped=1)
    with pytest.raises(ValueError):
        w.advance(WatermarkMark(SweepPosition(T, "e1"), 7), embedded=[], skipped=0)
    with pytest.raises(ValueError):
        w.advance(WatermarkMark(SweepPosition(T, "e9"), 6), embedded=[], skipped=0)


def test_late_catch_up_progress_is_recorded() -> None:
    w = new_watermark(P, "m")
    w.advance(WatermarkMark(SweepPosition(T, "e9"), 7), embedded=[], skipped=1)
    cursor = SweepPosition(T.replace(hour=8), "e3")
    w.advance(
        WatermarkMark(SweepPosition(T, "e9"), 7, LateCatchUp(12, cursor)), embedded=[], skipped=1
    )
    assert w.mark.late == LateCatchUp(12, cursor)


def test_a_stall_is_recorded_once_per_outage() -> None:
    w = new_watermark(P, "m")
    w.stall(StallReason.MODEL_UNAVAILABLE)
    w.stall(StallReason.MODEL_UNAVAILABLE)
    assert w.stalls == 1 and w.is_stalled
    w.stall(StallReason.MODEL_MISCONFIGURED)
    assert w.stalls == 2 and w.last_stall_reason == StallReason.MODEL_MISCONFIGURED
    w.advance(WatermarkMark(SweepPosition(T, "e1"), 1), embedded=[uuid.uuid4()], skipped=0)
    assert not w.is_stalled
    w.stall(StallReason.MODEL_MISCONFIGURED)
    assert w.stalls == 3
    assert w.mark.position == SweepPosition(T, "e1")  # a stall never moves the watermark
    with pytest.raises(ValueError):
        w.stall("bad luck")


def test_poison_windows_and_reset() -> None:
    w = new_watermark(P, "m")
    wid = uuid.uuid4()
    w.skip_poison_window(wid, SweepPosition(T, "e1"), SweepPosition(T, "e2"), 2, "input_rejected")
    w.advance(WatermarkMark(SweepPosition(T, "e2"), 3), embedded=[], skipped=0)
    assert [p.window_id for p in w.poison_windows] == [wid]
    w.reset()
    assert w.mark == WatermarkMark(None, 0) and w.poison_windows == []


def test_it_round_trips_through_the_event_store_and_its_events_carry_no_text() -> None:
    store = app()
    w = new_watermark(P, "m")
    w.advance(WatermarkMark(SweepPosition(T, "e9"), 7), embedded=[uuid.uuid4()], skipped=0)
    w.stall(StallReason.MODEL_UNAVAILABLE)
    w.skip_poison_window(
        uuid.uuid4(), SweepPosition(T, "e1"), SweepPosition(T, "e2"), 2, "input_rejected"
    )
    store.save(w)
    again = store.repository.get(w.id)
    assert isinstance(again, SweepWatermark)
    assert again.mark == w.mark and again.poison_windows == w.poison_windows
    assert again.stalls == 1
    # What the events carry: names of positions, ids and counters only.
    for stored in store.events.get(w.id):
        fields = set(vars(stored)) - {
            "originator_id",
            "originator_version",
            "timestamp",
            "originator_topic",
        }
        assert not {"text", "content", "message_text"} & fields


def test_a_long_lived_watermark_is_one_record_of_its_state_and_loads_the_same() -> None:
    from memory.application.history.watermarks import SweepWatermarks, WatermarkCodec

    store = SweepWatermarks()
    w = store.get(P, "m")
    w.skip_poison_window(uuid.uuid4(), SweepPosition(T, "e0"), SweepPosition(T, "e0"), 1, "x")
    for i in range(1, 105):
        w.advance(WatermarkMark(SweepPosition(T, f"e{i:04d}"), i), embedded=[], skipped=1)
        store.store(w)
    loaded = store.get(P, "m")
    assert loaded.mark == w.mark and loaded.version == w.version == 106
    assert loaded.poison_windows == w.poison_windows and loaded.windows_skipped == w.windows_skipped
    assert loaded.created_on == w.created_on and loaded.modified_on == w.modified_on
    # The record is the state, not the history: its size does not grow with the advances.
    codec = WatermarkCodec()
    fresh = new_watermark(P, "m")
    fresh.skip_poison_window(uuid.uuid4(), SweepPosition(T, "e0"), SweepPosition(T, "e0"), 1, "x")
    fresh.advance(WatermarkMark(SweepPosition(T, "e0104"), 104), embedded=[], skipped=104)
    one = codec.record(fresh, expected=0).stored.state
    assert abs(len(codec.record(loaded, expected=0).stored.state) - len(one)) < 16


def test_an_out_of_range_row_is_recorded_once_as_a_poison_event_and_reset_clears_it() -> None:
    store = app()
    mark = new_watermark(P, "hash:1024")
    mark.skip_poison_event("x10k", "10000-01-01 13:59:59+00", "occurred_at_out_of_range")
    mark.skip_poison_event("x10k", "10000-01-01 13:59:59+00", "occurred_at_out_of_range")
    store.save(mark)
    loaded = store.repository.get(mark.id)
    assert [(p.event_id, p.occurred_at, p.reason) for p in loaded.poison_events] == [
        ("x10k", "10000-01-01 13:59:59+00", "occurred_at_out_of_range")
    ]
    assert loaded.poison_windows == []
    with pytest.raises(ValueError, match="unknown poison event reason"):
        loaded.skip_poison_event("y", "x", "timestamp")
    loaded.reset()
    assert loaded.poison_events == []


def at(minutes: int, event_id: str) -> SweepPosition:
    return SweepPosition(T.replace(minute=minutes), event_id)


def test_the_watermark_moves_its_own_mark_through_main_and_late_streams() -> None:
    w = new_watermark(P, "hash:1024")
    w.consume_main(at(10, "e2"), 5, embedded=[uuid.uuid4()], skipped=1)
    assert w.mark == WatermarkMark(at(10, "e2"), 5)
    # A late message (ingested as 6, placed before the position) starts a catch-up to 7.
    w.consume_late(7, at(3, "late1"), caught_up=False, embedded=[uuid.uuid4()], skipped=0)
    assert w.mark == WatermarkMark(at(10, "e2"), 5, LateCatchUp(7, at(3, "late1")))
    w.consume_late(7, None, caught_up=True, embedded=(), skipped=0)
    assert w.mark == WatermarkMark(at(10, "e2"), 7)
    assert (w.windows_embedded, w.windows_skipped) == (2, 1)


def test_the_main_stream_waits_while_a_catch_up_is_in_progress() -> None:
    w = new_watermark(P, "hash:1024")
    w.consume_main(at(10, "e2"), 5, embedded=(), skipped=1)
    w.consume_late(7, at(3, "late1"), caught_up=False, embedded=(), skipped=1)
    with pytest.raises(ValueError, match="waits"):
        w.consume_main(at(20, "e3"), 8, embedded=(), skipped=1)
    assert w.mark.position == at(10, "e2")


def test_closing_forgets_progress_once_until_the_sweep_advances_again() -> None:
    w = new_watermark(P, "hash:1024")
    w.consume_main(at(10, "e1"), 5, embedded=(), skipped=0)
    assert w.close() is True
    assert (w.closed, w.mark.position, w.mark.seen_seq) == (True, None, 0)
    assert w.close() is False  # no second event
    w.consume_main(at(11, "e2"), 1, embedded=(), skipped=0)
    assert w.closed is False
    store = app()
    store.save(w)
    assert store.repository.get(w.id).closed is False
