"""`WatermarkRepository`: the sweep's watermarks as saved and loaded, one by one and a slice
at a time, against the in-memory `SweepWatermarks` (what the unit tests' `InMemoryHistory`
uses) and `PostgresSweepWatermarks` (docs/adr/0125, 0091, 0148)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from eventsourcing.persistence import IntegrityError

from memory.application.history.ports import WatermarkRepository
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import WatermarkMark
from memory.domain.history.watermark import PoisonEventReason, StallReason, SweepWatermark

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MODEL = "hash:1024"
C1, C2, C3 = (Partition("acme", "slack", c) for c in ("C1", "C2", "C3"))


def at(n: int) -> WatermarkMark:
    return WatermarkMark(SweepPosition(T, f"e{n:04d}"), n)


def state(w: SweepWatermark) -> tuple[object, ...]:
    """What the sweep and its status read of a watermark."""
    return (
        w.id,
        w.version,
        w.mark,
        w.windows_embedded,
        w.windows_skipped,
        w.is_stalled,
        w.last_stall_reason,
        w.poison_windows,
        w.poison_events,
        w.closed,
    )


def test_a_watermark_is_new_until_stored_and_is_read_back_as_it_was_saved(
    watermarks: WatermarkRepository,
) -> None:
    assert watermarks.find(C1, MODEL) is None
    new = watermarks.get(C1, MODEL)
    assert (new.partition, new.model, new.mark, new.windows_embedded) == (
        C1,
        MODEL,
        WatermarkMark(None, 0),
        0,
    )
    assert watermarks.find(C1, MODEL) is None  # getting one stores nothing
    window = uuid.uuid4()
    new.advance(at(3), embedded=[uuid.uuid4(), uuid.uuid4()], skipped=1)
    new.skip_poison_window(window, SweepPosition(T, "e0004"), SweepPosition(T, "e0005"), 2, "x")
    new.skip_poison_event(
        "e0009", "0001-01-01 00:00:00+00 BC", PoisonEventReason.OCCURRED_AT_OUT_OF_RANGE
    )
    new.stall(StallReason.MODEL_UNAVAILABLE)
    watermarks.store(new)
    found = watermarks.find(C1, MODEL)
    assert found is not None and state(found) == state(new)
    assert found.poison_windows[0].window_id == window and found.is_stalled
    assert watermarks.find(C1, "other:model") is None
    watermarks.store(found)  # nothing pending: nothing is recorded
    again = watermarks.get(C1, MODEL)
    assert again.version == new.version
    again.close()
    watermarks.store(again)
    closed = watermarks.get(C1, MODEL)
    assert closed.closed and closed.mark == WatermarkMark(None, 0)


def test_a_slice_is_stored_together_and_loaded_together_however_long_its_history(
    watermarks: WatermarkRepository,
) -> None:
    long = watermarks.get(C1, MODEL)
    for n in range(1, 105):  # a long history: more than the old store's snapshot interval
        long.advance(at(n), embedded=[], skipped=1)
        watermarks.store(long)
    short, other_model = watermarks.get(C2, MODEL), watermarks.get(C2, "other:model")
    short.advance(at(7), embedded=[uuid.uuid4()], skipped=0)
    other_model.advance(at(9), embedded=[], skipped=2)
    long.advance(at(500), embedded=[uuid.uuid4()], skipped=0)
    watermarks.store_many([long, short, other_model])
    watermarks.store_many([])

    loaded = watermarks.get_many([C1, C2, C3], MODEL)
    assert set(loaded) == {C1, C2, C3}
    for partition in (C1, C2, C3):
        assert state(loaded[partition]) == state(watermarks.get(partition, MODEL))
    assert state(loaded[C1]) == state(long) and loaded[C1].mark == at(500)
    assert loaded[C2].mark == at(7) and loaded[C3].mark == WatermarkMark(None, 0)
    assert watermarks.get_many([], MODEL) == {}
    # A loaded watermark saves like any other.
    loaded[C2].advance(at(8), embedded=[], skipped=1)
    watermarks.store(loaded[C2])
    assert watermarks.get(C2, MODEL).mark == at(8)


def test_a_stale_copy_is_refused_and_a_slice_holding_one_stores_nothing(
    watermarks: WatermarkRepository,
) -> None:
    first = watermarks.get(C1, MODEL)
    first.advance(at(1), embedded=[], skipped=0)
    watermarks.store(first)
    mine, theirs = watermarks.get(C1, MODEL), watermarks.get(C1, MODEL)
    theirs.advance(at(2), embedded=[], skipped=0)
    watermarks.store(theirs)
    mine.advance(at(3), embedded=[], skipped=0)
    with pytest.raises(IntegrityError):
        watermarks.store(mine)
    stale = watermarks.get(C1, MODEL)
    theirs.advance(at(4), embedded=[], skipped=0)
    watermarks.store(theirs)
    fresh = watermarks.get(C2, MODEL)
    fresh.advance(at(4), embedded=[], skipped=0)
    stale.advance(at(5), embedded=[], skipped=0)
    with pytest.raises(IntegrityError):
        watermarks.store_many([fresh, stale])
    assert watermarks.find(C2, MODEL) is None
    assert watermarks.get(C1, MODEL).mark == at(4)
