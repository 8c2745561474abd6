"""When the client tries again: on 429 and 503 (the service says when with `Retry-After`)
and on a connection that failed before any answer; exponential back-off otherwise."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`attempts` in all (1: never retry). The wait before attempt n+1 is the answer's
    `Retry-After` when it gives one, else `backoff * 2**(n-1)` with up to 10 % jitter;
    never more than `max_wait` (a longer `Retry-After` ends the retries instead)."""

    attempts: int = 3
    backoff: float = 0.25
    max_wait: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff < 0 or self.max_wait < 0:
            raise ValueError("backoff and max_wait must not be negative")

    def wait_before_retry(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next attempt after failed attempt `attempt`
        (1-based), or None when there is no next attempt."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        wait: float = self.backoff * 2.0 ** (attempt - 1)
        return min(wait * (1.0 + random.uniform(0.0, 0.1)), self.max_wait)


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds (the service sends an integer); an HTTP date or garbage is
    ignored (back-off applies)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
