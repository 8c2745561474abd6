from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.domain.history.conversation import ChatMessage, TokenBudget
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import (
    LateCatchUp,
    PartitionRead,
    WatermarkMark,
    plan,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BUDGET = TokenBudget(10_000, lambda text: len(text.split()))


def msg(i: int, minutes: float) -> ChatMessage:
    return ChatMessage(f"e{i:03d}", "ali", "some words here", T0 + timedelta(minutes=minutes))


def pos(minutes: float, event_id: str = "x") -> SweepPosition:
    return SweepPosition(T0 + timedelta(minutes=minutes), event_id)


def test_only_the_run_of_closed_windows_from_the_start_is_consumed() -> None:
    read = PartitionRead((msg(1, 0), msg(2, 100), msg(3, 200)), complete=True)
    swept = plan(read, now=T0 + timedelta(minutes=210), budget=BUDGET)
    assert [w.event_ids for w in swept.closed] == [("e001",), ("e002",)]
    assert swept.open_windows == 1
    assert swept.end_after(2) == msg(2, 100).position
    assert not swept.exhausts_after(2)


def test_a_stream_is_exhausted_when_everything_read_is_closed_and_nothing_follows() -> None:
    read = PartitionRead((msg(1, 0), msg(2, 100)), complete=True)
    swept = plan(read, now=T0 + timedelta(days=1), budget=BUDGET)
    assert swept.exhausts_after(2)
    assert not swept.exhausts_after(1)
    cut = plan(
        PartitionRead(read.messages, complete=False), now=T0 + timedelta(days=1), budget=BUDGET
    )
    assert not cut.exhausts_after(len(cut.closed))


def test_an_empty_read_is_exhausted() -> None:
    swept = plan(PartitionRead((), complete=True), now=T0, budget=BUDGET)
    assert swept.closed == () and swept.exhausts_after(0)


def test_end_after_checks_its_count() -> None:
    swept = plan(
        PartitionRead((msg(1, 0),), complete=True), now=T0 + timedelta(hours=1), budget=BUDGET
    )
    with pytest.raises(ValueError):
        swept.end_after(0)
    with pytest.raises(ValueError):
        swept.end_after(2)


def test_the_main_stream_advances_position_and_horizon() -> None:
    mark = WatermarkMark(None, 0).after_main(pos(10), horizon_seq=42)
    assert mark == WatermarkMark(pos(10), 42)
    assert mark.after_main(pos(20), horizon_seq=50) == WatermarkMark(pos(20), 50)


def test_the_main_stream_never_moves_back() -> None:
    mark = WatermarkMark(pos(10), 5)
    with pytest.raises(ValueError):
        mark.after_main(pos(10), horizon_seq=9)
    with pytest.raises(ValueError):
        mark.after_main(pos(5), horizon_seq=9)


def test_a_late_catch_up_keeps_the_position_and_moves_its_cursor_then_the_horizon() -> None:
    mark = WatermarkMark(pos(100), 10).begin_late(horizon_seq=20)
    assert mark.late == LateCatchUp(20, None)
    assert mark.begin_late(horizon_seq=99) is mark  # a catch-up in progress keeps its horizon
    moved = mark.after_late(pos(30), caught_up=False)
    assert moved == WatermarkMark(pos(100), 10, LateCatchUp(20, pos(30)))
    done = moved.after_late(pos(60), caught_up=True)
    assert done == WatermarkMark(pos(100), 20)


def test_the_main_stream_waits_for_a_late_catch_up() -> None:
    mark = WatermarkMark(pos(100), 10).begin_late(horizon_seq=20)
    with pytest.raises(ValueError):
        mark.after_main(pos(200), horizon_seq=30)
    with pytest.raises(ValueError):
        mark.after_late(None, caught_up=False)
    with pytest.raises(ValueError):
        WatermarkMark(pos(100), 10).after_late(pos(1), caught_up=True)


def test_marks_reject_impossible_states() -> None:
    with pytest.raises(ValueError):
        WatermarkMark(None, -1)
    with pytest.raises(ValueError):
        WatermarkMark(None, 0, LateCatchUp(3))
    with pytest.raises(ValueError):
        WatermarkMark(pos(1), 10, LateCatchUp(5))
