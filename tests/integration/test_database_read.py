"""`Database.read`: one round trip per statement (autocommit, no liveness check before
use), a connection the server dropped while it was idle retried on a checked one, and the
pool never handed back a connection left in autocommit (docs/adr/0117)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from memory.infrastructure.postgres.database import Connection, Database


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    database = Database(database_url, min_size=1, max_size=1)
    database.open()
    try:
        yield database
    finally:
        database.close()


def backend_pid(conn: Connection) -> int:
    row = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
    assert row is not None
    return int(str(row["pid"]))


def in_transaction(conn: Connection) -> bool:
    """Whether a statement runs inside a transaction block (it does not in autocommit)."""
    row = conn.execute("SELECT now() = statement_timestamp() AS single").fetchone()
    assert row is not None
    return not row["single"]


def test_a_read_runs_its_statements_without_a_transaction_and_lends_no_autocommit_after(
    database: Database,
) -> None:
    statuses: list[bool] = []

    def work(conn: Connection) -> bool:
        statuses.append(conn.autocommit)
        conn.execute("SELECT pg_sleep(0.01)")
        return in_transaction(conn)

    assert database.read(work) is False
    assert statuses == [True]
    # The pool's only connection is back in its usual mode: a block is one transaction.
    with database.connection() as conn:
        assert conn.autocommit is False
        conn.execute("SELECT pg_sleep(0.01)")
        assert in_transaction(conn)


def test_a_failing_read_leaves_the_connection_usable_and_out_of_autocommit(
    database: Database,
) -> None:
    with pytest.raises(psycopg.errors.UndefinedTable):
        database.read(lambda conn: conn.execute("SELECT * FROM no_such_table").fetchall())
    with database.connection() as conn:
        assert conn.autocommit is False
        assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}


def test_a_connection_the_server_dropped_while_idle_is_replaced_and_the_read_runs_again(
    database: Database,
) -> None:
    with database.connection() as conn:
        first = backend_pid(conn)
    with database.session() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
    # The pool's only connection is dead, and `read` does not check it before use.
    attempts: list[int] = []

    def work(conn: Connection) -> int:
        attempts.append(1)
        return backend_pid(conn)

    second = database.read(work)
    assert second != first
    assert len(attempts) == 2
    # The replacement stays in the pool for the next caller.
    assert database.read(backend_pid) == second


def test_inside_a_transaction_a_read_sees_its_uncommitted_writes(database: Database) -> None:
    with database.connection() as conn:
        conn.execute("CREATE TABLE read_probe (n int)")
    with database.transaction() as tx:
        tx.execute("INSERT INTO read_probe VALUES (1)")
        row = database.read(
            lambda conn: conn.execute("SELECT count(*) AS n FROM read_probe").fetchone()
        )
        assert row == {"n": 1}
        assert database.read(in_transaction)
