"""The pooled path through PgBouncer in transaction pooling mode (docs/adr/0061): with a
direct URL beside it, nothing on the pooled URL depends on a server session."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from tests.e2e.pgbouncer import pgbouncer

from memory.infrastructure.postgres.database import Database

# psycopg prepares a statement on its 5th execution on one connection; run past that on each
# of two client connections.
EXECUTIONS = 8


@pytest.fixture
def pooled_url(empty_database_url: str) -> Iterator[str]:
    # One server session: every client's transactions run on it, as they may on any. An
    # unmigrated database: the test below applies every migration through the direct URL.
    with pgbouncer(empty_database_url, pool_size=1) as url:
        yield url


def _two_clients(database: Database) -> None:
    """Two pooled client connections, each running one statement past psycopg's prepare
    threshold, one transaction per execution. Both name their first prepared statement
    `_pg3_0`, which their shared server session cannot hold twice."""
    clients = [database.pool.getconn(), database.pool.getconn()]
    try:
        for conn in clients:
            for i in range(EXECUTIONS):
                row = conn.execute("SELECT %s::int + 1 AS n", (i,)).fetchone()
                assert row is not None and row["n"] == i + 1
                conn.commit()
    finally:
        for conn in clients:
            conn.rollback()
            database.pool.putconn(conn)


def test_statements_repeated_on_the_pooled_url_are_never_prepared(
    pooled_url: str, empty_database_url: str
) -> None:
    database = Database(pooled_url, direct_url=empty_database_url, min_size=2, max_size=2)
    database.open()
    try:
        assert not database.prepared_statements
        _two_clients(database)
        assert database.migrate()  # its session lock and its DDL go to the direct URL
    finally:
        database.close()


def test_without_a_direct_url_psycopg_prepares_and_a_transaction_pooler_breaks_it(
    pooled_url: str,
) -> None:
    """Why the pooled path turns prepared statements off: the same workload, prepared,
    fails behind PgBouncer in transaction mode."""
    database = Database(pooled_url, min_size=2, max_size=2)
    database.open()
    try:
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
            _two_clients(database)
    finally:
        database.close()
