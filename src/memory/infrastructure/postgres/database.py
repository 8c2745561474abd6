"""The connection pool both contexts share, and versioned SQL migrations for read models.

pgvector types are registered on every pooled connection (`configure=`), so adapters bind
`pgvector.HalfVector`/`Vector` values directly.

While the database is down, a request waits for a connection at most `timeout` seconds and
then fails with `DatabaseUnavailable` (docs/adr/0047); the pool keeps reconnecting by itself
and serves again as soon as the database is back.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import resources
from typing import TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from memory.infrastructure.postgres.availability import (
    DatabaseMisconfigured,
    database_boundary,
    reach,
)
from memory.infrastructure.postgres.database_waits import waiting_on_database

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "memory.infrastructure"
MIGRATIONS_DIR = "migrations"
# Any constant works; it only has to be the same for every process migrating this database.
MIGRATION_LOCK_KEY = 0x6D656D6F7279  # "memory"
# How long a request waits for a pooled connection unless told otherwise
# (`MEMORY_DATABASE_TIMEOUT`).
DEFAULT_TIMEOUT_SECONDS = 2.0
# psycopg_pool retries a lost connection in the background with exponential backoff (1, 2, 4,
# ... s) for `reconnect_timeout` (5 minutes by default), and lets only one attempt grow the
# pool at a time: after a long outage its next attempt could be minutes away when the
# database returns. Giving up after a couple of seconds (attempts at once, after 1 s and at
# 2 s) instead hands reconnection to demand: a pending attempt holds its slot in the pool, so
# while attempts are pending a full pool cannot grow; once they gave up, the next request
# grows the pool at once, and service resumes as soon as the database is back. Giving up
# never closes the pool (no `reconnect_failed` callback).
RECONNECT_GIVE_UP_SECONDS = 2.0


def _configure(conn: psycopg.Connection[object]) -> None:
    register_vector(conn)
    conn.commit()


def connect_timeout(wait_seconds: float) -> int:
    """libpq's `connect_timeout` for a wait: whole seconds, and libpq takes less than 2 as 2."""
    return max(2, math.ceil(wait_seconds))


Connection = psycopg.Connection[dict[str, object]]
T = TypeVar("T")


class Database:
    """A psycopg pool with pgvector registered. Use `connection()` for a transaction,
    `transaction()` to make several adapters' writes one transaction, and `session()` for
    what needs a session of its own.

    `direct_url` is the same database without a pooler in between. When it is given, the
    pool's `url` may be a transaction-pooling PgBouncer, where consecutive transactions of
    one client connection run on different server sessions: the pool then never prepares a
    statement (a prepared statement lives in one server session), and whatever needs a
    session (session advisory locks, LISTEN, migrations) uses `direct_url` (docs/adr/0061).

    `timeout` bounds the wait for a connection (and a new connection's handshake). A
    connection that died while idle (the server restarted) is noticed when it is taken and
    replaced, instead of failing the request that got it. (psycopg_pool's own `check=` does
    the same but backs off 1, 2, 4 s between dead connections inside the same wait, so after
    an outage the first request could time out on a pool full of them.)"""

    def __init__(
        self,
        url: str,
        *,
        direct_url: str | None = None,
        min_size: int = 2,
        max_size: int = 10,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.url = url
        self.direct_url = direct_url or url
        # Statements on `url` may be prepared: only when nothing pools transactions there.
        self.prepared_statements = self.direct_url == url
        self.timeout = timeout
        kwargs: dict[str, object] = {
            "row_factory": dict_row,
            "connect_timeout": connect_timeout(timeout),
        }
        if not self.prepared_statements:
            kwargs["prepare_threshold"] = None
        self.pool: ConnectionPool[psycopg.Connection[dict[str, object]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs=kwargs,
            configure=_configure,
            timeout=timeout,
            reconnect_timeout=RECONNECT_GIVE_UP_SECONDS,
            open=False,
            name="memory",
        )
        # The connection of the `transaction()` open in this thread (context), if any.
        self._ambient: ContextVar[Connection | None] = ContextVar(
            f"memory_transaction_{id(self)}", default=None
        )

    def open(self, *, wait_seconds: float = 30.0) -> None:
        """Open the pool once one connection succeeds. A database that cannot be reached
        fails at once with `DatabaseUnavailable`, one that refuses this configuration with
        `DatabaseMisconfigured`, rather than after `wait_seconds` of the pool's retries."""
        self.reach()
        self.pool.open(wait=True, timeout=wait_seconds)

    def reach(self) -> None:
        """One connection to each URL, opened and closed: `DatabaseUnavailable` while the
        database cannot be reached, `DatabaseMisconfigured` if it refuses us."""
        for url in dict.fromkeys((self.url, self.direct_url)):
            reach(url, connect_timeout=connect_timeout(self.timeout))

    def check_schema(self) -> None:
        """`DatabaseMisconfigured` if a newer version of memory migrated this database
        (it holds migrations this code does not know): this code would misread it."""
        with self.session() as conn:
            exists = conn.execute(
                "SELECT to_regclass('memory_schema_migrations') IS NOT NULL AS yes"
            ).fetchone()
            if exists is None or not exists["yes"]:
                return
            applied = [
                str(row["name"])
                for row in conn.execute("SELECT name FROM memory_schema_migrations")
            ]
        _refuse_unknown_migrations(applied)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(
        self, *, timeout: float | None = None
    ) -> Iterator[psycopg.Connection[dict[str, object]]]:
        """A pooled connection inside a transaction: committed on success, rolled back on
        any exception. Waits for it at most `timeout` (default: the database's); a
        connection failure, then or in the block, raises `DatabaseUnavailable`. Inside
        `transaction()` it is that transaction's connection, and the work is a savepoint of
        it: it commits only when the whole transaction does."""
        ambient = self._ambient.get()
        if ambient is not None:
            with waiting_on_database(), database_boundary(), ambient.transaction():
                yield ambient
            return
        wait = self.timeout if timeout is None else min(timeout, self.timeout)
        with waiting_on_database(), database_boundary():
            conn = self._live_connection(wait)
            try:
                # As the pool's `connection()`: commit on success, roll back on error.
                with conn:
                    yield conn
            finally:
                self.pool.putconn(conn)

    def read(self, work: Callable[[Connection], T], *, timeout: float | None = None) -> T:
        """`work(conn)` for reads that need no transaction of their own (a statement with
        its own snapshot): one round trip per statement, where `connection()` costs four
        (a liveness check, BEGIN, the statement, COMMIT; docs/adr/0117). The connection
        runs in autocommit while lent and is not checked before use: if it turns out broken
        (the server restarted while it was idle), it is discarded and `work` runs again on
        a checked one, so `work` must only read. Inside `transaction()` it runs on that
        transaction's connection, as with `connection()`."""
        if self._ambient.get() is not None:
            with self.connection(timeout=timeout) as conn:
                return work(conn)
        wait = self.timeout if timeout is None else min(timeout, self.timeout)
        deadline = time.monotonic() + wait
        with waiting_on_database(), database_boundary():
            conn = self.pool.getconn(timeout=wait)
            try:
                return self._autocommit(conn, work)
            except psycopg.OperationalError:
                if not conn.broken:
                    raise
            conn = self._live_connection(max(deadline - time.monotonic(), 0.001))
            return self._autocommit(conn, work)

    def _autocommit(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        """`work(conn)` with `conn` in autocommit, then `conn` back to the pool."""
        try:
            conn.autocommit = True
            return work(conn)
        finally:
            try:
                conn.autocommit = False
            except psycopg.Error:
                # Broken, or still busy: never lent again in autocommit, where the writes
                # of a `connection()` block would not be one transaction.
                conn.close()
            self.pool.putconn(conn)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction that every `connection()` of this database joins while it is
        open in the same thread: adapters written for their own transactions become parts
        of one (how an administrative change and its audit event commit together,
        docs/adr/0058). Nested calls join the outer transaction."""
        with self.connection() as conn, conn.transaction():
            if self._ambient.get() is not None:
                yield conn
                return
            token = self._ambient.set(conn)
            try:
                yield conn
            finally:
                self._ambient.reset(token)

    @property
    def in_transaction(self) -> bool:
        """Whether this thread is inside `transaction()` (its `connection()`s join it)."""
        return self._ambient.get() is not None

    def _live_connection(self, wait: float) -> psycopg.Connection[dict[str, object]]:
        deadline = time.monotonic() + wait
        while True:
            conn = self.pool.getconn(timeout=max(deadline - time.monotonic(), 0.001))
            try:
                ConnectionPool.check_connection(conn)
            except psycopg.OperationalError:
                self.pool.putconn(conn)  # broken: the pool discards and replaces it
                continue
            return conn

    @contextmanager
    def session(self) -> Iterator[psycopg.Connection[dict[str, object]]]:
        """A connection of its own on `direct_url` (autocommit), for session state: session
        advisory locks, LISTEN. Closed afterwards, which ends whatever the session held."""
        with (
            database_boundary(),
            psycopg.connect(
                self.direct_url,
                autocommit=True,
                row_factory=dict_row,
                connect_timeout=connect_timeout(self.timeout),
            ) as conn,
        ):
            yield conn

    def ping(self, *, timeout: float | None = None) -> None:
        """Raise `DatabaseUnavailable` unless the database answers within `timeout`."""
        wait = self.timeout if timeout is None else timeout
        with self.connection(timeout=wait) as conn:
            conn.execute(
                "SELECT set_config('statement_timeout', %s, true)",
                (f"{math.ceil(wait * 1000)}ms",),
            )
            conn.execute("SELECT 1")

    @contextmanager
    def migration_lock(self) -> Iterator[None]:
        """Hold the lock migrations take, so that DDL run by a library (the eventsourcing
        library creates its tables and types when an application is constructed) does not
        race with another process starting at the same time. A session lock: on
        `direct_url`."""
        with self.session() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))

    def migrate(self) -> list[str]:
        """Apply the package's SQL migrations not yet applied, in name order, each in its own
        transaction, under an advisory lock so concurrent starters do not race. Returns the
        names applied now. The lock is a session lock: on `direct_url`."""
        applied_now: list[str] = []
        with self.session() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS memory_schema_migrations ("
                    " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                done = {
                    str(row["name"])
                    for row in conn.execute("SELECT name FROM memory_schema_migrations")
                }
                _refuse_unknown_migrations(done)
                for name, text in _migration_files():
                    if name in done:
                        continue
                    log.info("applying migration %s", name)
                    with conn.transaction():
                        conn.execute(text)
                        conn.execute(
                            "INSERT INTO memory_schema_migrations (name) VALUES (%s)", (name,)
                        )
                    applied_now.append(name)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
        return applied_now


def _refuse_unknown_migrations(applied: Iterable[str]) -> None:
    known = {name for name, _ in _migration_files()}
    unknown = sorted(set(applied) - known)
    if unknown:
        raise DatabaseMisconfigured(
            "the database schema is newer than this version of memory (it has migrations "
            f"{', '.join(unknown)}, which this version does not know): run the newer version"
        )


def _migration_files() -> list[tuple[str, str]]:
    root = resources.files(MIGRATIONS_PACKAGE).joinpath(MIGRATIONS_DIR)
    files = [f for f in root.iterdir() if f.name.endswith(".sql")]
    return [(f.name, f.read_text(encoding="utf-8")) for f in sorted(files, key=lambda f: f.name)]
