"""Rate limits of one process: requests per key, and failed authentications per client
address (a token bucket each)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
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


# Client addresses whose failures one process tracks; past this the address that failed
# least recently is forgotten (its bucket would be full again within a minute of quiet), so
# failures from many addresses cannot grow memory without bound.
FAILED_AUTH_MAX_ADDRESSES = 10_000


class FailedAuthentications:
    """Failed authentications (a presented key that is malformed, unknown or revoked) per
    client address: each takes a token from the address's bucket of `per_minute`. While an
    address has none left, a key it presents that is not already cached is refused (429)
    before any database lookup, so a flood of guesses costs at most `per_minute` lookups a
    minute per address; keys found in the cache still pass, so a shared address (a NAT)
    does not lock out the clients behind it that are already known."""

    def __init__(
        self,
        per_minute: int,
        *,
        max_addresses: int = FAILED_AUTH_MAX_ADDRESSES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_minute = per_minute
        self._max_addresses = max_addresses
        self._monotonic = monotonic
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, address: str) -> float:
        """0.0 when `address` may have a key looked up; else the seconds until it may."""
        with self._lock:
            bucket = self._buckets.get(address)
            return 0.0 if bucket is None else bucket.wait(self._monotonic())

    def failed(self, address: str) -> None:
        now = self._monotonic()
        with self._lock:
            bucket = self._buckets.pop(address, None) or TokenBucket.full(self._per_minute, now)
            bucket.take(now)
            self._buckets[address] = bucket
            while len(self._buckets) > self._max_addresses:
                self._buckets.popitem(last=False)
