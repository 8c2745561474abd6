"""A time budget shared by the steps of one request (embed the query, then query)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from memory.application.errors import DeadlineExceeded

Clock = Callable[[], float]


@dataclass(frozen=True)
class Deadline:
    budget: float
    expires_at: float
    clock: Clock = field(default=time.monotonic, compare=False)

    @classmethod
    def after(cls, seconds: float, *, clock: Clock = time.monotonic) -> Deadline:
        return cls(seconds, clock() + seconds, clock)

    def remaining(self) -> float:
        return self.expires_at - self.clock()

    def check(self, stage: str) -> float:
        """Seconds left; raises `DeadlineExceeded` naming the stage if none are."""
        left = self.remaining()
        if left <= 0:
            raise DeadlineExceeded(
                f"search timed out after {self.budget:g}s ({stage})",
                details={"timeout_seconds": self.budget, "stage": stage},
            )
        return left
