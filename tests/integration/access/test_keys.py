"""API keys on a real database: only digests are stored, and one bootstrap among
concurrent starters (the rest of the keys' behaviour runs over the in-memory store in
tests/unit/access/test_keys.py; the port contract cases hold that store to this one)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from memory.application.access.key_administration import operator_key
from memory.application.access.service import AccessService
from memory.domain.access.api_key import secret_digest
from memory.domain.access.scopes import Scope
from memory.infrastructure.access.key_store import PostgresKeyStore
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database

OPERATOR = operator_key("cli:test")


class Ticks:
    """The cache's monotonic clock and the wall clock."""

    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


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
