"""Integration fixtures of access control and the audit trail: a migrated database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    db = Database(database_url, min_size=1, max_size=4)
    db.open()
    db.migrate()
    try:
        yield db
    finally:
        db.close()


@pytest.fixture
def audit(database: Database) -> PostgresAuditTrail:
    return PostgresAuditTrail(database)
