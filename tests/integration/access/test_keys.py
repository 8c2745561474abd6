"""API keys on a real database: digests only, revocation, coarse last use, bootstrap once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from memory.application.access.service import (
    KEY_CACHE_SECONDS,
    LAST_USED_RESOLUTION,
    AccessService,
    Forbidden,
    operator_key,
)
from memory.domain.access.api_key import ApiKey, secret_digest
from memory.domain.access.scopes import Scope
from memory.domain.errors import InvalidInput, NotFound
from memory.infrastructure.access.key_store import PostgresKeyStore
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database

OPERATOR = operator_key("cli:test")


class Ticks:
    """The cache's monotonic clock and the wall clock, moved by the test."""

    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += timedelta(seconds=seconds)


def _service(database: Database, audit: PostgresAuditTrail, ticks: Ticks) -> AccessService:
    return AccessService(
        PostgresKeyStore(database),
        audit,
        now=lambda: ticks.wall,
        monotonic=lambda: ticks.mono,
    )


def test_only_the_digest_is_stored(database: Database, audit: PostgresAuditTrail) -> None:
    service = _service(database, audit, Ticks())
    created = service.create(OPERATOR, "ingest bot", "acme", ["history:write"])
    assert created.secret.startswith("mem_")
    with database.connection() as conn:
        dump = str(conn.execute("SELECT * FROM api_keys").fetchall())
    assert created.secret not in dump
    with database.connection() as conn:
        row = conn.execute("SELECT secret_sha256 FROM api_keys").fetchone()
    assert row is not None and bytes(row["secret_sha256"]) == secret_digest(created.secret)
    key = service.authenticate(created.secret)
    assert key is not None and key.key_id == created.key.key_id
    assert key.scopes == frozenset({Scope.HISTORY_WRITE}) and key.org_id == "acme"


def test_revocation_reaches_another_process_within_the_cache_time(
    database: Database, audit: PostgresAuditTrail
) -> None:
    ticks = Ticks()
    here, there = _service(database, audit, ticks), _service(database, audit, ticks)
    created = here.create(OPERATOR, "bot", "acme", ["history:read"])
    assert there.authenticate(created.secret) is not None
    here.revoke(OPERATOR, created.key.key_id)
    assert here.authenticate(created.secret) is None  # this process: at once
    ticks.advance(KEY_CACHE_SECONDS)
    assert there.authenticate(created.secret) is None  # another one: within the cache time


def test_last_used_is_written_coarsely(database: Database, audit: PostgresAuditTrail) -> None:
    ticks = Ticks()
    service = _service(database, audit, ticks)
    created = service.create(OPERATOR, "bot", None, ["policies:read"])
    service.authenticate(created.secret)
    first = _last_used(database)
    assert first == ticks.wall
    ticks.advance(KEY_CACHE_SECONDS * 5)  # cache expired, but within the resolution
    service.authenticate(created.secret)
    assert _last_used(database) == first
    ticks.advance(LAST_USED_RESOLUTION.total_seconds())
    service.authenticate(created.secret)
    assert _last_used(database) == ticks.wall


def _last_used(database: Database) -> datetime:
    with database.connection() as conn:
        row = conn.execute("SELECT last_used_at FROM api_keys").fetchone()
    assert row is not None
    value = row["last_used_at"]
    assert isinstance(value, datetime)
    return value


def test_malformed_and_unknown_secrets_are_refused(
    database: Database, audit: PostgresAuditTrail
) -> None:
    service = _service(database, audit, Ticks())
    assert service.authenticate("not a key") is None
    assert service.authenticate("mem_" + "A" * 43) is None


def test_who_may_create_what(database: Database, audit: PostgresAuditTrail) -> None:
    service = _service(database, audit, Ticks())
    org_admin = service.create(OPERATOR, "acme admin", "acme", ["admin"]).key
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
    database: Database, audit: PostgresAuditTrail
) -> None:
    service = _service(database, audit, Ticks())
    org_admin = service.create(OPERATOR, "acme admin", "acme", ["admin"]).key
    other = service.create(OPERATOR, "globex bot", "globex", ["history:read"]).key
    everything = service.create(OPERATOR, "all", None, ["history:read"]).key
    for key_id in (other.key_id, everything.key_id, "key_0000000000000000"):
        with pytest.raises(NotFound):
            service.revoke(org_admin, key_id)
    assert other.key_id not in {k.key_id for k in service.keys(org_admin)}


def test_bootstrap_creates_one_admin_key_among_concurrent_starters(
    database: Database, audit: PostgresAuditTrail
) -> None:
    services = [_service(database, audit, Ticks()) for _ in range(4)]
    results: list[object] = []
    barrier = threading.Barrier(len(services))

    def start(service: AccessService) -> None:
        barrier.wait()
        results.append(service.bootstrap())

    threads = [threading.Thread(target=start, args=(s,)) for s in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    created = [r for r in results if r is not None]
    assert len(created) == 1
    keys = services[0].keys(OPERATOR)
    assert len(keys) == 1 and keys[0].all_orgs and keys[0].has(Scope.ADMIN)
    assert services[0].bootstrap() is None


def test_the_admin_token_is_an_admin_key_for_every_org(
    database: Database, audit: PostgresAuditTrail
) -> None:
    token = "t" * 40
    service = AccessService(PostgresKeyStore(database), audit, admin_token=token)
    key = service.authenticate(token)
    assert isinstance(key, ApiKey) and key.all_orgs and key.has(Scope.ADMIN)
    assert service.authenticate(token + "x") is None
    with pytest.raises(InvalidInput):
        AccessService(PostgresKeyStore(database), audit, admin_token="short")
