"""Integration fixtures of access control and the audit trail: a migrated database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conftest import migrated_database

from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    with migrated_database(database_url, max_size=4) as database:
        yield database


@pytest.fixture
def audit(database: Database) -> PostgresAuditTrail:
    return PostgresAuditTrail(database)
