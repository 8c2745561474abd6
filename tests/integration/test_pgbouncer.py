"""The pooled path through PgBouncer in transaction pooling mode (docs/adr/0061): with a
direct URL beside it, nothing on the pooled URL depends on a server session."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator

import psycopg
import pytest
from tests.e2e.pgbouncer import pgbouncer

from memory.infrastructure.postgres.database import Database

# psycopg prepares a statement after 5 executions on one connection; run well past that on
# every pooled connection.
EXECUTIONS = 40
POOL_SIZE = 4


@pytest.fixture
def pooled_url(database_url: str) -> Iterator[str]:
    with pgbouncer(database_url) as url:
        yield url


def _hammer(database: Database) -> None:
    def one(i: int) -> None:
        with database.connection() as conn:
            row = conn.execute("SELECT %s::int + 1 AS n", (i,)).fetchone()
            assert row is not None and row["n"] == i + 1

    with concurrent.futures.ThreadPoolExecutor(POOL_SIZE) as pool:
        list(pool.map(one, range(EXECUTIONS)))


def test_statements_repeated_on_the_pooled_url_are_never_prepared(
    pooled_url: str, database_url: str
) -> None:
    database = Database(pooled_url, direct_url=database_url, min_size=POOL_SIZE, max_size=4)
    database.open()
    try:
        assert not database.prepared_statements
        _hammer(database)
        database.migrate()  # its session lock goes to the direct URL
    finally:
        database.close()


def test_without_a_direct_url_psycopg_prepares_and_a_transaction_pooler_breaks_it(
    pooled_url: str,
) -> None:
    """Why the pooled path turns prepared statements off: the same workload, prepared,
    fails behind PgBouncer (a statement prepared in one server session is missing in the
    next transaction's)."""
    database = Database(pooled_url, min_size=POOL_SIZE, max_size=4)
    database.open()
    try:
        with pytest.raises(
            (psycopg.errors.DuplicatePreparedStatement, psycopg.errors.InvalidSqlStatementName)
        ):
            _hammer(database)
    finally:
        database.close()
