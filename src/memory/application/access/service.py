"""`AccessService`: API keys — authenticate a secret, create, list and revoke keys, and the
first admin key of a fresh installation.

HTTP (`/v1/api-keys`, and the authentication in front of every route) and `memory keys`
call this; key changes are recorded in the audit trail in the same transaction as the
change itself.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import partial

from memory.application.access.ports import KeyStore
from memory.application.access.unknown_secrets import UnknownSecrets
from memory.application.audit.ports import AuditTrail
from memory.domain.access.api_key import (
    KEY_ID_BYTES,
    SECRET_BYTES,
    ApiKey,
    check_key_name,
    digests_match,
    is_secret_format,
    key_expiry,
    new_key_id,
    new_secret,
    secret_digest,
)
from memory.domain.access.grant import Excess, Grant, excesses
from memory.domain.access.scopes import ALL_SCOPES, Scope, parse_scopes, sorted_scopes
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.errors import AlreadyExists, DomainError, FieldChecks, InvalidInput, NotFound

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
BOOTSTRAP_ACTOR = Actor("bootstrap", "memory serve")


class Forbidden(DomainError):
    """A valid key that may not do this (HTTP 403). The message never says whether an org
    the key does not cover exists."""

    code = "forbidden"

    @classmethod
    def beyond(cls, excess: list[Excess]) -> Forbidden:
        """A grant beyond what the granter holds: every field it exceeds, what is lacking."""
        return cls(
            "; ".join(e.reason for e in excess),
            details={
                "fields": [{"field": e.field, "reason": e.reason} for e in excess],
                "lacking": {e.field: e.lacking for e in excess},
            },
        )


class KeyExpired(DomainError):
    """A known key past its expiry (HTTP 401 `key_expired`): unlike an unknown or revoked
    one, its holder is told why, so that an expiry reads as "rotate" rather than "attack".
    Only the key's holder can present its secret, so naming the key tells nobody else
    anything."""

    code = "key_expired"

    def __init__(self, key: ApiKey) -> None:
        assert key.expires_at is not None
        expired_at = key.expires_at.isoformat()
        super().__init__(
            f"this API key expired at {expired_at}; use or create another one",
            details={"key_id": key.key_id, "expired_at": expired_at},
        )


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


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key and its secret, which is shown this once and stored only as a digest."""

    key: ApiKey
    secret: str


def operator_key(name: str) -> ApiKey:
    """The operator at the command line: whoever can run `memory` against the database
    already holds its credentials, so the CLI acts with every scope on every org."""
    return ApiKey("cli", name, None, ALL_SCOPES, datetime.now(UTC))


def actor_of(key: ApiKey) -> Actor:
    return Actor(key.key_id, key.name)


_MISS = object()


class AccessService:
    def __init__(
        self,
        store: KeyStore,
        audit: AuditTrail,
        *,
        admin_token: str | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
    ) -> None:
        self._store = store
        self._audit = audit
        self._now = now
        self._monotonic = monotonic
        self._random = random_bytes
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

    # Authentication ---------------------------------------------------------------------

    def cached(self, secret: str) -> ApiKey | object | None:
        """The key for `secret` if this process looked it up less than `KEY_CACHE_SECONDS`
        ago; None for a malformed secret or one found unknown or revoked less than
        `UNKNOWN_SECRET_SECONDS` ago; otherwise the `MISS` marker. Never does I/O, so the
        HTTP layer can answer most requests without a thread hop. Raises `KeyExpired` for
        a key whose expiry has come, even while it is cached."""
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
        return _MISS

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live key whose secret this is; None for a malformed, unknown or revoked one.
        Raises `KeyExpired` for a known, unrevoked key past its expiry."""
        found = self.cached(secret)
        if found is not _MISS:
            assert found is None or isinstance(found, ApiKey)
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

    @staticmethod
    def is_miss(value: object) -> bool:
        return value is _MISS

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

    # Key management ---------------------------------------------------------------------

    def create(
        self,
        caller: ApiKey,
        name: str,
        org_id: str | None,
        scopes: Iterable[str],
        *,
        expires_at: datetime | None = None,
        expires_in_days: int | None = None,
    ) -> CreatedKey:
        """A new key, expiring at `expires_at` or `expires_in_days` from now (or never).
        `caller` grants no more than it holds (docs/adr/0098): only its own scopes, only on
        orgs it covers, expiring no later than it does; `Forbidden` names each excess."""
        _require_admin(caller)
        now = self._now()
        checks = FieldChecks()
        clean_name, granted, expiry = self._new_key_fields(
            checks, now, name, scopes, expires_at, expires_in_days
        )
        checks.raise_any()
        assert clean_name is not None and granted is not None
        excess = excesses(caller, Grant(org_id, granted, expiry))
        if excess:
            raise Forbidden.beyond(excess)
        secret = new_secret(self._random(SECRET_BYTES))
        key = ApiKey(
            new_key_id(self._random(KEY_ID_BYTES)),
            clean_name,
            org_id,
            granted,
            now,
            expires_at=expiry,
            created_by=caller.key_id,
        )

        def change() -> tuple[CreatedKey, AuditedChange]:
            self._store.add(key, secret_digest(secret))
            return CreatedKey(key, secret), AuditedChange(
                target=key.key_id, before=None, after=_described(key), org_id=org_id
            )

        created = self._audit.record(actor_of(caller), Action.KEY_CREATED, change)
        self._unknown.forget(secret_digest(secret))
        return created

    def check_new_key(
        self,
        name: str | None = None,
        scopes: Iterable[str] | None = None,
        *,
        expires_at: datetime | None = None,
        expires_in_days: int | None = None,
    ) -> None:
        """`create`'s field rules alone, over the fields given (None: not checked):
        `InvalidInput` naming every broken field. Pure; changes nothing. For a door that
        found other fields of the wrong type, so that one error names them all
        (docs/adr/0088)."""
        checks = FieldChecks()
        self._new_key_fields(checks, self._now(), name, scopes, expires_at, expires_in_days)
        checks.raise_any()

    @staticmethod
    def _new_key_fields(
        checks: FieldChecks,
        now: datetime,
        name: str | None,
        scopes: Iterable[str] | None,
        expires_at: datetime | None,
        expires_in_days: int | None,
    ) -> tuple[str | None, frozenset[Scope] | None, datetime | None]:
        clean_name = None if name is None else checks.run(partial(check_key_name, name))
        granted = None if scopes is None else checks.run(partial(parse_scopes, scopes))
        expiry = checks.run(
            partial(key_expiry, now, expires_at=expires_at, expires_in_days=expires_in_days)
        )
        return clean_name, granted, expiry

    def keys(self, caller: ApiKey, *, created_by: str | None = None) -> list[ApiKey]:
        """Every key an all-orgs admin sees; an org's admin sees its org's keys. With
        `created_by`, only those that key id created, directly or through keys it created
        (what to review after revoking it, docs/adr/0098)."""
        _require_admin(caller)
        return self._store.keys(caller.org_id, created_by)

    def revoke(self, caller: ApiKey, key_id: str) -> ApiKey:
        """Refused from the next request of every process on (within `KEY_CACHE_SECONDS`;
        at once in this one). Revoking a revoked key changes nothing and records nothing.
        `caller` may revoke only a key it could have created (docs/adr/0098); the keys the
        revoked key created stay as they are."""
        _require_admin(caller)
        if key_id == ADMIN_TOKEN_KEY_ID:
            raise AlreadyExists(
                "MEMORY_ADMIN_TOKEN is configuration: unset it and restart to revoke it",
                details={"key_id": key_id},
            )
        key = self._store.get(key_id)
        # Another org's key is "not found", like an unknown one: no hint that it exists.
        if key is None or (key.org_id is None and not caller.all_orgs):
            raise NotFound(f"no API key {key_id!r}", details={"key_id": key_id})
        if key.org_id is not None and not caller.covers(key.org_id):
            raise NotFound(f"no API key {key_id!r}", details={"key_id": key_id})
        excess = excesses(caller, Grant.of(key))
        if excess:
            raise Forbidden.beyond(excess)
        if key.revoked:
            return key
        at = self._now()

        def change() -> tuple[ApiKey, AuditedChange]:
            self._store.revoke(key_id, at)
            revoked = key.revoked_as_of(at)
            return revoked, AuditedChange(
                target=key_id,
                before={"revoked_at": None},
                after={"revoked_at": at.isoformat()},
                org_id=key.org_id,
            )

        revoked = self._audit.record(actor_of(caller), Action.KEY_REVOKED, change)
        self._forget(key_id)
        return revoked

    def bootstrap(self, name: str = "bootstrap admin") -> CreatedKey | None:
        """Create one admin key for every org when no key exists yet (a fresh installation
        without MEMORY_ADMIN_TOKEN); None when keys exist. Concurrent callers on one
        database create one key between them."""
        secret = new_secret(self._random(SECRET_BYTES))
        key = ApiKey(
            new_key_id(self._random(KEY_ID_BYTES)),
            name,
            None,
            ALL_SCOPES,
            self._now(),
            created_by=BOOTSTRAP_ACTOR.key_id,
        )

        def change() -> tuple[CreatedKey, AuditedChange]:
            self._store.lock_bootstrap()
            if self._store.count() > 0:
                raise _KeysExist
            self._store.add(key, secret_digest(secret))
            return CreatedKey(key, secret), AuditedChange(
                target=key.key_id, before=None, after=_described(key)
            )

        try:
            return self._audit.record(BOOTSTRAP_ACTOR, Action.KEY_CREATED, change)
        except _KeysExist:
            return None

    def _forget(self, key_id: str) -> None:
        with self._lock:
            stale = [d for d, (_, k) in self._cache.items() if k.key_id == key_id]
            for digest in stale:
                del self._cache[digest]


class _KeysExist(Exception):
    """Bootstrap found keys: nothing to create (and nothing to record)."""


def _require_admin(caller: ApiKey) -> None:
    if not caller.has(Scope.ADMIN):
        raise Forbidden("this key lacks the admin scope")


def _described(key: ApiKey) -> dict[str, object]:
    return {
        "name": key.name,
        "org_id": key.org_id,
        "scopes": sorted_scopes(key.scopes),
        "expires_at": None if key.expires_at is None else key.expires_at.isoformat(),
    }
