"""Secrets this process found to be no live key: answered without a database lookup for a
while (issue 17: an unknown key cost a lookup per request, twice a known key's time).

Keyed by the secret's digest, never the secret. Bounded: past `max_entries` the oldest
entry goes, so a client spraying random secrets cannot grow it, and it never evicts the
cache of known keys. An entry turns stale after `ttl` seconds, and at once in this process
when a key with that digest is created (`forget`); in another process a created key could
be refused for at most `ttl`, which needs its secret presented before it existed: with 256
random bits, only a secret copied from the answer that created it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable


class UnknownSecrets:
    def __init__(self, *, ttl: float, max_entries: int, monotonic: Callable[[], float]) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._monotonic = monotonic
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, digest: bytes) -> bool:
        """Whether `digest` was found unknown or revoked less than `ttl` seconds ago."""
        with self._lock:
            at = self._seen.get(digest)
            if at is None:
                return False
            if self._monotonic() - at < self._ttl:
                return True
            del self._seen[digest]
            return False

    def add(self, digest: bytes) -> None:
        with self._lock:
            self._seen[digest] = self._monotonic()
            self._seen.move_to_end(digest)
            while len(self._seen) > self._max_entries:
                self._seen.popitem(last=False)

    def forget(self, digest: bytes) -> None:
        with self._lock:
            self._seen.pop(digest, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)
