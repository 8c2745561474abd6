"""Per-key request rate limits of one process (a token bucket per key)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memory.domain.access.rate_limit import TokenBucket


class RateLimits:
    """Buckets live in this process only: N processes allow N times the rate (documented
    in docs/security.md; a shared limit belongs in the reverse proxy)."""

    def __init__(self, per_minute: int, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._per_minute = per_minute
        self._monotonic = monotonic
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str) -> float:
        """0.0 when the key may make this request; else the seconds until it may."""
        now = self._monotonic()
        with self._lock:
            bucket = self._buckets.get(key_id)
            if bucket is None:
                bucket = self._buckets[key_id] = TokenBucket.full(self._per_minute, now)
            return bucket.take(now)
