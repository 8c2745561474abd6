"""`SweepWatermarks` on the eventsourcing library's PostgreSQL persistence, in the same
database as everything else (its own tables, `historysweep_events`)."""

from __future__ import annotations

import getpass

from psycopg.conninfo import conninfo_to_dict

from memory.application.history.watermarks import HISTORY_SWEEP_APPLICATION, SweepWatermarks
from memory.infrastructure.postgres.database import MIGRATION_LOCK_KEY, Database

# The library's own pool: the sweep saves from one thread at a time, plus status reads.
WATERMARK_POOL_SIZE = 2
WATERMARK_POOL_OVERFLOW = 4


def persistence_env(url: str) -> dict[str, str]:
    """The library's POSTGRES_* settings from a libpq URL or conninfo string (the host may
    be a Unix socket directory, as for the embedded cluster). Keys carry the application's
    prefix, so they win over unprefixed POSTGRES_* variables in the process environment."""
    params = conninfo_to_dict(url)
    values = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": str(params.get("dbname") or getpass.getuser()),
        "POSTGRES_HOST": str(params.get("host") or "localhost"),
        "POSTGRES_PORT": str(params.get("port") or 5432),
        "POSTGRES_USER": str(params.get("user") or getpass.getuser()),
        "POSTGRES_PASSWORD": str(params.get("password") or ""),
        "POSTGRES_POOL_SIZE": str(WATERMARK_POOL_SIZE),
        "POSTGRES_MAX_OVERFLOW": str(WATERMARK_POOL_OVERFLOW),
        "CREATE_TABLE": "y",
    }
    prefix = HISTORY_SWEEP_APPLICATION.upper()
    return {f"{prefix}_{key}": value for key, value in values.items()}


def open_sweep_watermarks(database: Database) -> SweepWatermarks:
    """Construct the application (creating its tables if needed) under the migration lock,
    so processes starting together do not race on the library's DDL."""
    with database.connection() as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        conn.commit()
        try:
            return SweepWatermarks(persistence_env(database.url))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
            conn.commit()
