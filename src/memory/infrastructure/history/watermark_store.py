"""`SweepWatermarks` on the eventsourcing library's PostgreSQL persistence, in the same
database as everything else (its own tables, `historysweep_events`)."""

from __future__ import annotations

from memory.application.history.watermarks import HISTORY_SWEEP_APPLICATION, SweepWatermarks
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.event_store import EventStoreConnection


def open_sweep_watermarks(database: Database) -> SweepWatermarks:
    """Construct the application (creating its tables if needed) under the migration lock,
    so processes starting together do not race on the library's DDL."""
    with database.migration_lock():
        connection = EventStoreConnection.for_database(database)
        return SweepWatermarks(connection.env(HISTORY_SWEEP_APPLICATION))
