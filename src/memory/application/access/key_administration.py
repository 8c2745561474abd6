"""`KeyAdministration`: create, list and revoke API keys, and the first admin key of a fresh
installation. Each change is recorded in the audit trail in the same transaction as the
change itself, and told to `Authentication`, whose caches must not outlive it."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from memory.application.access.authentication import ADMIN_TOKEN_KEY_ID, Authentication
from memory.application.access.errors import Forbidden
from memory.application.access.ports import KeyStore
from memory.application.audit.ports import AuditTrail
from memory.domain.access.api_key import (
    KEY_ID_BYTES,
    SECRET_BYTES,
    ApiKey,
    check_key_name,
    key_expiry,
    new_key_id,
    new_secret,
    secret_digest,
)
from memory.domain.access.grant import Grant, excesses
from memory.domain.access.scopes import ALL_SCOPES, Scope, parse_scopes, sorted_scopes
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.errors import AlreadyExists, FieldChecks, NotFound

BOOTSTRAP_ACTOR = Actor("bootstrap", "memory serve")


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


class KeyAdministration:
    def __init__(
        self,
        store: KeyStore,
        audit: AuditTrail,
        authentication: Authentication,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
    ) -> None:
        self._store = store
        self._audit = audit
        self._authentication = authentication
        self._now = now
        self._random = random_bytes

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
        clean_name, granted, expiry = _new_key_fields(
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
        self._authentication.forget_secret(secret_digest(secret))
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
        _new_key_fields(checks, self._now(), name, scopes, expires_at, expires_in_days)
        checks.raise_any()

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
        self._authentication.forget_key(key_id)
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


class _KeysExist(Exception):
    """Bootstrap found keys: nothing to create (and nothing to record)."""


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
