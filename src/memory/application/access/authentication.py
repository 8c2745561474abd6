"""`Authentication`: which key a secret is, with this process's caches in front of the key
store, and what a key's holder may learn about it.

Every request but `/healthz` authenticates, so a known key is answered from memory for
`KEY_CACHE_SECONDS` and a secret found to be no live key for `UNKNOWN_SECRET_SECONDS`
(`cached` never does I/O, so the HTTP layer answers most requests without a thread hop);
only a miss looks the digest up (`authenticate`). Key administration tells it what changed
(`forget_key`, `forget_secret`), so a revocation is refused at once in this process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from memory.application.access.errors import KeyExpired
from memory.application.access.ports import KeyStore
from memory.application.access.unknown_secrets import UnknownSecrets
from memory.domain.access.api_key import (
    ApiKey,
    digests_match,
    is_secret_format,
    secret_digest,
)
from memory.domain.access.scopes import ALL_SCOPES, Scope
from memory.domain.errors import InvalidInput

# A looked-up key is trusted this long in one process: revocation reaches every process
# within it, and a busy key costs one database lookup per second instead of one per request.
KEY_CACHE_SECONDS = 1.0
# Cached known keys per process before the cache starts afresh (unknown secrets have a cache
# of their own, so a spray of random secrets never empties this one).
KEY_CACHE_MAX_ENTRIES = 10_000
# A secret found to be no live key is refused without a lookup this long in one process,
# and this many such secrets are remembered (the oldest go first): a client repeating one
# unknown or revoked key costs one lookup per `UNKNOWN_SECRET_SECONDS`, and the failed
# authentications limit (`FailedAuthentications`) bounds the lookups of new ones.
UNKNOWN_SECRET_SECONDS = 10.0
UNKNOWN_SECRET_MAX_ENTRIES = 10_000
# `last_used_at` is written at most this often per key: it answers "is this key still in
# use?", which needs no per-request precision and should cost no per-request write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# A MEMORY_ADMIN_TOKEN shorter than this is refused at start-up.
MIN_ADMIN_TOKEN_CHARS = 32
ADMIN_TOKEN_KEY_ID = "admin-token"


class KeySource(StrEnum):
    """Where a key comes from: the key store, or the service's configuration."""

    API_KEY = "api_key"
    ADMIN_TOKEN = "admin_token"


@dataclass(frozen=True, slots=True)
class OwnKey:
    """What the holder of a key may learn about it (`GET /v1/api-keys/self`): never its
    secret or digest, which `ApiKey` does not hold. `created_at` None: MEMORY_ADMIN_TOKEN,
    configuration that was never created (the process's start is no creation date)."""

    key_id: str
    name: str
    source: KeySource
    org_id: str | None
    scopes: frozenset[Scope]
    created_at: datetime | None
    expires_at: datetime | None


class Miss:
    """`Authentication.cached` does not know: look the secret up."""


MISS = Miss()


class Authentication:
    def __init__(
        self,
        store: KeyStore,
        *,
        admin_token: str | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Raises `InvalidInput` for an `admin_token` shorter than `MIN_ADMIN_TOKEN_CHARS`."""
        self._store = store
        self._now = now
        self._monotonic = monotonic
        self._cache: dict[bytes, tuple[float, ApiKey]] = {}
        self._unknown = UnknownSecrets(
            ttl=UNKNOWN_SECRET_SECONDS, max_entries=UNKNOWN_SECRET_MAX_ENTRIES, monotonic=monotonic
        )
        self._lock = threading.Lock()
        self._admin_digest: bytes | None = None
        if admin_token is not None:
            if len(admin_token) < MIN_ADMIN_TOKEN_CHARS:
                raise InvalidInput(
                    "MEMORY_ADMIN_TOKEN", f"must be at least {MIN_ADMIN_TOKEN_CHARS} characters"
                )
            self._admin_digest = secret_digest(admin_token)
        self._admin_key = ApiKey(
            ADMIN_TOKEN_KEY_ID, "MEMORY_ADMIN_TOKEN", None, ALL_SCOPES, self._now()
        )

    def cached(self, secret: str) -> ApiKey | Miss | None:
        """The key for `secret` if this process looked it up less than `KEY_CACHE_SECONDS`
        ago; None for a malformed secret or one found unknown or revoked less than
        `UNKNOWN_SECRET_SECONDS` ago; otherwise `MISS`. Never does I/O. Raises `KeyExpired`
        for a key whose expiry has come, even while it is cached."""
        digest = secret_digest(secret)
        if self._admin_digest is not None and digests_match(digest, self._admin_digest):
            return self._admin_key
        if not is_secret_format(secret):
            return None
        with self._lock:
            hit = self._cache.get(digest)
        if hit is not None and self._monotonic() - hit[0] < KEY_CACHE_SECONDS:
            if hit[1].expired(self._now()):
                raise KeyExpired(hit[1])
            return hit[1]
        if digest in self._unknown:
            return None
        return MISS

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live key whose secret this is; None for a malformed, unknown or revoked one.
        Raises `KeyExpired` for a known, unrevoked key past its expiry."""
        found = self.cached(secret)
        if not isinstance(found, Miss):
            return found
        digest = secret_digest(secret)
        key = self._store.find(digest)
        if key is None or key.revoked:
            self._unknown.add(digest)
            return None
        now = self._now()
        expired = key.expired(now)
        if not expired and (
            key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION
        ):
            self._store.touch(key.key_id, now)
        with self._lock:
            if len(self._cache) >= KEY_CACHE_MAX_ENTRIES:
                self._cache.clear()
            self._cache[digest] = (self._monotonic(), key)
        if expired:
            raise KeyExpired(key)
        return key

    def own_key(self, caller: ApiKey) -> OwnKey:
        """The key `caller` authenticated with, as its holder may see it. Any key may ask
        (it holds the secret already); nothing is read or written."""
        configured = caller.key_id == ADMIN_TOKEN_KEY_ID
        return OwnKey(
            key_id=caller.key_id,
            name=caller.name,
            source=KeySource.ADMIN_TOKEN if configured else KeySource.API_KEY,
            org_id=caller.org_id,
            scopes=caller.scopes,
            created_at=None if configured else caller.created_at,
            expires_at=caller.expires_at,
        )

    def forget_key(self, key_id: str) -> None:
        """A key was revoked: no cached lookup of it answers in this process any more."""
        with self._lock:
            stale = [d for d, (_, k) in self._cache.items() if k.key_id == key_id]
            for digest in stale:
                del self._cache[digest]

    def forget_secret(self, digest: bytes) -> None:
        """A key with this secret's digest was created: it is no longer known as unknown."""
        self._unknown.forget(digest)
