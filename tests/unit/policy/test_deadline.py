from __future__ import annotations

import pytest

from memory.application.errors import DeadlineExceeded
from memory.application.policy.deadline import Deadline


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_remaining_time_counts_down_and_expiry_names_the_stage() -> None:
    clock = FakeClock()
    deadline = Deadline.after(2.0, clock=clock)
    assert deadline.check("start") == 2.0
    clock.now += 1.5
    assert deadline.remaining() == pytest.approx(0.5)
    clock.now += 0.5
    with pytest.raises(DeadlineExceeded) as err:
        deadline.check("embedding the query")
    assert err.value.code == "timeout"
    assert err.value.details == {"timeout_seconds": 2.0, "stage": "embedding the query"}
