"""Request rate limits (per key; failed authentications per client address): a token
bucket, pure (the caller passes the time)."""

from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_MINUTE = 60.0


@dataclass(slots=True)
class TokenBucket:
    """Holds up to `capacity` tokens (one minute's allowance, so a client may spend its
    minute in a burst) and refills `per_minute` of them per minute. Each request takes one."""

    per_minute: int
    tokens: float
    updated_at: float

    @classmethod
    def full(cls, per_minute: int, now: float) -> TokenBucket:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        return cls(per_minute, float(per_minute), now)

    def wait(self, now: float) -> float:
        """Seconds until a token is there (0.0: one is), taking none."""
        rate = self.per_minute / SECONDS_PER_MINUTE
        elapsed = max(0.0, now - self.updated_at)
        self.tokens = min(float(self.per_minute), self.tokens + elapsed * rate)
        self.updated_at = now
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / rate

    def take(self, now: float) -> float:
        """Take a token: 0.0 if there was one, else the seconds until there will be one
        (nothing is taken then)."""
        wait = self.wait(now)
        if wait == 0.0:
            self.tokens -= 1.0
        return wait


def retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up (a client waiting that long finds a token)."""
    return str(max(1, math.ceil(seconds)))
