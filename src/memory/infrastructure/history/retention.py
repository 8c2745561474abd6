"""Per-org retention and the purge, in PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from memory.domain.time_range import AcceptedTimeRange
from memory.infrastructure.history.locks import RETENTION_LOCK_CLASS
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes
from memory.infrastructure.postgres.database import Database


class PostgresRetention:
    def __init__(self, database: Database, *, indexes: PostgresWindowIndexes | None = None) -> None:
        """`indexes`: the org search indexes a purge that shrinks an org retires."""
        self._db = database
        self._indexes = indexes if indexes is not None else PostgresWindowIndexes(database)

    def days(self, org_id: str) -> int | None:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT retention_days FROM dw_org_retention WHERE org_id = %s", (org_id,)
            ).fetchone()
        return None if row is None else int(cast(int, row["retention_days"]))

    def set_days(self, org_id: str, days: int) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO dw_org_retention (org_id, retention_days) VALUES (%s, %s)"
                " ON CONFLICT (org_id) DO UPDATE"
                " SET retention_days = excluded.retention_days, updated_at = now()",
                (org_id, days),
            )

    def orgs_with_events(self) -> list[str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT org_id FROM dw_chat_partitions ORDER BY org_id"
            ).fetchall()
        return [str(r["org_id"]) for r in rows]

    def purge(self, org_id: str, cutoff: datetime, stored: AcceptedTimeRange) -> tuple[int, int]:
        """One transaction. A window covering a purged event starts before the cutoff
        (its first message is at or before that event), so `first_occurred_at < cutoff`
        finds exactly the rows covering purged events; likewise a window covering an event
        past the stored range ends past it. Both conditions are index range scans. An org
        left below its search index's drop line has the index marked for dropping in the
        same transaction (docs/adr/0141)."""
        params = {
            "org_id": org_id,
            "before": max(cutoff, stored.earliest),
            "after": stored.latest,
        }
        with self._db.connection() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (RETENTION_LOCK_CLASS, org_id)
            )
            rows = conn.execute(
                "DELETE FROM dw_message_embeddings WHERE org_id = %(org_id)s"
                " AND (first_occurred_at < %(before)s OR last_occurred_at > %(after)s)",
                params,
            ).rowcount
            if rows:
                self._indexes.retire_shrunk(conn, org_id)
            events = conn.execute(
                "DELETE FROM dw_chat_events WHERE org_id = %(org_id)s"
                " AND (occurred_at < %(before)s OR occurred_at > %(after)s)",
                params,
            ).rowcount
        return events, rows
