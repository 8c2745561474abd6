"""The connection pool both contexts share, and versioned SQL migrations for read models.

pgvector types are registered on every pooled connection (`configure=`), so adapters bind
`pgvector.HalfVector`/`Vector` values directly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "memory.infrastructure"
MIGRATIONS_DIR = "migrations"
# Any constant works; it only has to be the same for every process migrating this database.
MIGRATION_LOCK_KEY = 0x6D656D6F7279  # "memory"


def _configure(conn: psycopg.Connection[object]) -> None:
    register_vector(conn)
    conn.commit()


class Database:
    """A psycopg pool with pgvector registered. Use `connection()` for a transaction."""

    def __init__(self, url: str, *, min_size: int = 2, max_size: int = 10) -> None:
        self.url = url
        self.pool: ConnectionPool[psycopg.Connection[dict[str, object]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row},
            configure=_configure,
            open=False,
            name="memory",
        )

    def open(self, *, wait_seconds: float = 30.0) -> None:
        self.pool.open(wait=True, timeout=wait_seconds)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[dict[str, object]]]:
        """A pooled connection inside a transaction: committed on success, rolled back on
        any exception."""
        with self.pool.connection() as conn:
            yield conn

    def ping(self) -> None:
        with self.pool.connection(timeout=2.0) as conn:
            conn.execute("SELECT 1")

    def migrate(self) -> list[str]:
        """Apply the package's SQL migrations not yet applied, in name order, each in its own
        transaction, under an advisory lock so concurrent starters do not race. Returns the
        names applied now."""
        applied_now: list[str] = []
        with self.pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS memory_schema_migrations ("
                    " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                conn.commit()
                done = {
                    str(row["name"])
                    for row in conn.execute("SELECT name FROM memory_schema_migrations")
                }
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
                conn.commit()
        return applied_now


def _migration_files() -> list[tuple[str, str]]:
    root = resources.files(MIGRATIONS_PACKAGE).joinpath(MIGRATIONS_DIR)
    files = [f for f in root.iterdir() if f.name.endswith(".sql")]
    return [(f.name, f.read_text(encoding="utf-8")) for f in sorted(files, key=lambda f: f.name)]
