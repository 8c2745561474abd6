"""API keys through `AccessService` (`Authentication` and `KeyAdministration`) over the
in-memory key store and audit trail (tests/fakes.py; the port contract cases hold them to
the PostgreSQL adapters, docs/adr/0125): revocation, coarse last use, who may create and
revoke what, expiry, the admin token, a key describing itself, the caches of known and
unknown secrets. What needs PostgreSQL itself (only digests stored; one bootstrap among
concurrent starters) is in tests/integration/access/test_keys.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import InMemoryAuditTrail, InMemoryKeyStore

from memory.application.access.authentication import (
    KEY_CACHE_SECONDS,
    LAST_USED_RESOLUTION,
    UNKNOWN_SECRET_MAX_ENTRIES,
    UNKNOWN_SECRET_SECONDS,
    KeySource,
    OwnKey,
)
from memory.application.access.errors import Forbidden, KeyExpired
from memory.application.access.key_administration import operator_key
from memory.application.access.ports import KeyStore
from memory.application.access.service import AccessService
from memory.domain.access.api_key import SECRET_BYTES, ApiKey, new_secret
from memory.domain.access.scopes import Scope
from memory.domain.errors import InvalidInput, NotFound

OPERATOR = operator_key("cli:test")


class Ticks:
    """The cache's monotonic clock and the wall clock, moved by the test."""

    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += timedelta(seconds=seconds)


@pytest.fixture
def store() -> InMemoryKeyStore:
    return InMemoryKeyStore()


@pytest.fixture
def audit() -> InMemoryAuditTrail:
    return InMemoryAuditTrail()


def _service(store: KeyStore, audit: InMemoryAuditTrail, ticks: Ticks) -> AccessService:
    return AccessService(
        store,
        audit,
        now=lambda: ticks.wall,
        monotonic=lambda: ticks.mono,
    )


def test_revocation_reaches_another_process_within_the_cache_time(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    ticks = Ticks()
    here, there = _service(store, audit, ticks), _service(store, audit, ticks)
    created = here.create(OPERATOR, "bot", "acme", ["history:read"])
    assert there.authenticate(created.secret) is not None
    here.revoke(OPERATOR, created.key.key_id)
    assert here.authenticate(created.secret) is None  # this process: at once
    ticks.advance(KEY_CACHE_SECONDS)
    assert there.authenticate(created.secret) is None  # another one: within the cache time


def test_last_used_is_written_coarsely(store: InMemoryKeyStore, audit: InMemoryAuditTrail) -> None:
    ticks = Ticks()
    service = _service(store, audit, ticks)
    created = service.create(OPERATOR, "bot", None, ["policies:read"])
    service.authenticate(created.secret)
    first = _last_used(store)
    assert first == ticks.wall
    ticks.advance(KEY_CACHE_SECONDS * 5)  # cache expired, but within the resolution
    service.authenticate(created.secret)
    assert _last_used(store) == first
    ticks.advance(LAST_USED_RESOLUTION.total_seconds())
    service.authenticate(created.secret)
    assert _last_used(store) == ticks.wall


def _last_used(store: KeyStore) -> datetime | None:
    (key,) = store.keys(None)
    return key.last_used_at


def test_malformed_and_unknown_secrets_are_refused(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    service = _service(store, audit, Ticks())
    assert service.authenticate("not a key") is None
    assert service.authenticate("mem_" + "A" * 43) is None


def test_who_may_create_what(store: InMemoryKeyStore, audit: InMemoryAuditTrail) -> None:
    service = _service(store, audit, Ticks())
    org_admin = service.create(
        OPERATOR, "acme admin", "acme", ["admin", "history:read", "history:write"]
    ).key
    reader = service.create(OPERATOR, "reader", "acme", ["history:read"]).key
    with pytest.raises(Forbidden):
        service.create(org_admin, "everything", None, ["history:read"])
    with pytest.raises(Forbidden):
        service.create(org_admin, "other", "globex", ["history:read"])
    with pytest.raises(Forbidden):
        service.create(reader, "more", "acme", ["history:read"])
    own = service.create(org_admin, "acme bot", "acme", ["history:write"]).key
    assert {k.key_id for k in service.keys(org_admin)} == {
        org_admin.key_id,
        reader.key_id,
        own.key_id,
    }
    with pytest.raises(InvalidInput) as bad:
        service.create(OPERATOR, "x", None, ["history:delete"])
    assert bad.value.field == "scopes"
    with pytest.raises(InvalidInput):
        service.create(OPERATOR, "   ", None, ["admin"])


def test_an_org_admin_cannot_see_or_revoke_other_keys(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    service = _service(store, audit, Ticks())
    org_admin = service.create(OPERATOR, "acme admin", "acme", ["admin"]).key
    other = service.create(OPERATOR, "globex bot", "globex", ["history:read"]).key
    everything = service.create(OPERATOR, "all", None, ["history:read"]).key
    for key_id in (other.key_id, everything.key_id, "key_0000000000000000"):
        with pytest.raises(NotFound):
            service.revoke(org_admin, key_id)
    assert other.key_id not in {k.key_id for k in service.keys(org_admin)}


def test_the_admin_token_is_an_admin_key_for_every_org(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    token = "t" * 40
    service = AccessService(store, audit, admin_token=token)
    key = service.authenticate(token)
    assert isinstance(key, ApiKey) and key.all_orgs and key.has(Scope.ADMIN)
    assert service.authenticate(token + "x") is None
    with pytest.raises(InvalidInput):
        AccessService(store, audit, admin_token="short")


def test_an_expired_key_is_refused_as_expired_even_while_cached(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    ticks = Ticks()
    here, there = _service(store, audit, ticks), _service(store, audit, ticks)
    half = KEY_CACHE_SECONDS / 2
    created = here.create(
        OPERATOR, "bot", "acme", ["history:read"], expires_at=ticks.wall + timedelta(seconds=half)
    )
    assert here.authenticate(created.secret) is not None  # cached from now on
    ticks.advance(half)
    with pytest.raises(KeyExpired) as expired:
        here.cached(created.secret)  # a cache hit: no lookup, still refused at the expiry
    assert expired.value.code == "key_expired"
    assert expired.value.details == {
        "key_id": created.key.key_id,
        "expired_at": created.key.expires_at.isoformat() if created.key.expires_at else None,
    }
    with pytest.raises(KeyExpired):
        here.authenticate(created.secret)
    with pytest.raises(KeyExpired):
        there.authenticate(created.secret)  # another process, from the database


def test_a_key_is_good_until_its_expiry_and_listed_with_it(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    ticks = Ticks()
    service = _service(store, audit, ticks)
    created = service.create(OPERATOR, "rotating bot", None, ["policies:read"], expires_in_days=30)
    assert created.key.expires_at == ticks.wall + timedelta(days=30)
    (listed,) = service.keys(OPERATOR)
    assert listed.expires_at == created.key.expires_at
    ticks.advance(timedelta(days=30).total_seconds() - 1)
    assert service.authenticate(created.secret) is not None
    ticks.advance(1)
    with pytest.raises(KeyExpired):
        service.authenticate(created.secret)
    # A revoked key is refused as unknown, expired or not: revocation says more than expiry.
    service.revoke(OPERATOR, created.key.key_id)
    assert service.authenticate(created.secret) is None
    assert service.keys(OPERATOR)[0].expires_at == created.key.expires_at


def test_an_expiry_out_of_bounds_creates_nothing(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    ticks = Ticks()
    service = _service(store, audit, ticks)
    with pytest.raises(InvalidInput) as past:
        service.create(OPERATOR, "bot", None, ["admin"], expires_at=ticks.wall)
    assert past.value.field == "expires_at"
    with pytest.raises(InvalidInput) as far:
        service.create(OPERATOR, "bot", None, ["admin"], expires_in_days=10_000)
    assert far.value.field == "expires_in_days"
    assert store.count() == 0


def test_a_key_describes_itself_and_the_admin_token_as_configuration(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    ticks = Ticks()
    token = "t" * 40
    service = AccessService(
        store,
        audit,
        admin_token=token,
        now=lambda: ticks.wall,
        monotonic=lambda: ticks.mono,
    )
    created = service.create(OPERATOR, "acme reader", "acme", ["history:read"], expires_in_days=7)
    ticks.advance(60)
    caller = service.authenticate(created.secret)
    assert caller is not None
    own = service.own_key(caller)
    assert own == OwnKey(
        key_id=created.key.key_id,
        name="acme reader",
        source=KeySource.API_KEY,
        org_id="acme",
        scopes=frozenset({Scope.HISTORY_READ}),
        created_at=created.key.created_at,
        expires_at=created.key.created_at + timedelta(days=7),
    )
    admin = service.authenticate(token)
    assert admin is not None
    configured = service.own_key(admin)
    assert configured.key_id == "admin-token" and configured.source is KeySource.ADMIN_TOKEN
    assert configured.name == "MEMORY_ADMIN_TOKEN"
    assert configured.org_id is None and configured.scopes == frozenset(Scope)
    # Configuration, never created: the process's start is no creation date.
    assert configured.created_at is None and configured.expires_at is None


def test_keys_name_their_creator_and_outlive_it(
    store: InMemoryKeyStore, audit: InMemoryAuditTrail
) -> None:
    service = _service(store, audit, Ticks())
    every = ["admin", "history:read", "history:write"]
    parent = service.create(OPERATOR, "acme admin", "acme", every).key
    assert parent.created_by == "cli"
    child = service.create(parent, "acme deputy", "acme", ["admin", "history:read"]).key
    grandchild = service.create(child, "acme reader", "acme", ["history:read"]).key
    service.create(OPERATOR, "unrelated", "acme", ["history:read"])
    assert [k.created_by for k in service.keys(OPERATOR) if k.key_id == grandchild.key_id] == [
        child.key_id
    ]
    made = service.keys(OPERATOR, created_by=parent.key_id)
    assert {k.key_id for k in made} == {child.key_id, grandchild.key_id}
    # An org's admin sees only its org's part of what a key created.
    globex_admin = service.create(OPERATOR, "globex admin", "globex", every).key
    assert service.keys(globex_admin, created_by=parent.key_id) == []
    service.revoke(OPERATOR, parent.key_id)
    # Revoking the creator leaves what it created (docs/adr/0098); an admin revokes them.
    assert {k.key_id for k in service.keys(OPERATOR) if not k.revoked} >= {
        child.key_id,
        grandchild.key_id,
    }
    # A key may revoke only what it could have created: not its own, mightier creator.
    with pytest.raises(Forbidden) as refused:
        service.revoke(child, parent.key_id)
    assert refused.value.details["lacking"] == {"scopes": ["history:write"]}


class CountingStore(InMemoryKeyStore):
    """The in-memory key store, counting lookups by digest."""

    def __init__(self) -> None:
        super().__init__()
        self.finds = 0

    def find(self, digest: bytes) -> ApiKey | None:
        self.finds += 1
        return super().find(digest)


def test_an_unknown_secret_is_looked_up_once_until_its_miss_goes_stale(
    audit: InMemoryAuditTrail,
) -> None:
    ticks = Ticks()
    store = CountingStore()
    service = AccessService(
        store,
        audit,
        now=lambda: ticks.wall,
        monotonic=lambda: ticks.mono,
        random_bytes=lambda n: (b"\x01" if n == SECRET_BYTES else b"\x07") * n,
    )
    secret = new_secret(b"\x01" * SECRET_BYTES)
    for _ in range(100):
        assert service.authenticate(secret) is None
    assert store.finds == 1
    ticks.advance(UNKNOWN_SECRET_SECONDS)
    assert service.authenticate(secret) is None
    assert store.finds == 2
    # Created in this process after a miss of its very secret: known at once, not refused
    # for what is left of the miss.
    created = service.create(OPERATOR, "late", "acme", ["history:read"])
    assert created.secret == secret
    found = service.authenticate(secret)
    assert found is not None and found.key_id == created.key.key_id


def test_a_spray_of_unknown_secrets_never_evicts_a_known_key(
    audit: InMemoryAuditTrail,
) -> None:
    ticks = Ticks()
    store = CountingStore()
    service = AccessService(store, audit, now=lambda: ticks.wall, monotonic=lambda: ticks.mono)
    known = service.create(OPERATOR, "busy", "acme", ["history:read"]).secret
    assert service.authenticate(known) is not None
    finds = store.finds
    for n in range(UNKNOWN_SECRET_MAX_ENTRIES + 10):
        assert service.cached(new_secret(n.to_bytes(SECRET_BYTES, "big"))) is not None
    assert service.authenticate(known) is not None
    assert store.finds == finds
