"""The console's last-hour activity in PostgreSQL (`dw_activity_minutes`, migration 0308,
docs/adr/0122): the replicas' tallies added per (org, minute) in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from memory.domain.history.activity import ActivityCount
from memory.infrastructure.postgres.database import Database

# Rows in key order: two replicas adding the same minutes lock them in the same order.
_ADD = """
INSERT INTO dw_activity_minutes AS a
    (org_id, minute, searches, semantic, degraded, windows_embedded, lag_age_seconds)
SELECT * FROM unnest(
    %(org_id)s::text[], %(minute)s::timestamptz[], %(searches)s::bigint[],
    %(semantic)s::bigint[], %(degraded)s::bigint[], %(windows_embedded)s::bigint[],
    %(lag_age_seconds)s::double precision[])
ON CONFLICT (org_id, minute) DO UPDATE SET
    searches = a.searches + EXCLUDED.searches,
    semantic = a.semantic + EXCLUDED.semantic,
    degraded = a.degraded + EXCLUDED.degraded,
    windows_embedded = a.windows_embedded + EXCLUDED.windows_embedded,
    lag_age_seconds = greatest(a.lag_age_seconds, EXCLUDED.lag_age_seconds)
"""
_MINUTES = (
    "SELECT org_id, minute, searches, semantic, degraded, windows_embedded, lag_age_seconds"
    " FROM dw_activity_minutes WHERE org_id = %s AND minute >= %s ORDER BY minute"
)


class PostgresActivityLog:
    """`ActivityLog` in PostgreSQL."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def add(self, counts: Sequence[ActivityCount], *, forget_before: datetime) -> None:
        rows = sorted(counts, key=lambda c: (c.org_id, c.minute))
        with self._db.connection() as conn:
            conn.execute(
                _ADD,
                {
                    "org_id": [c.org_id for c in rows],
                    "minute": [c.minute for c in rows],
                    "searches": [c.searches for c in rows],
                    "semantic": [c.semantic for c in rows],
                    "degraded": [c.degraded for c in rows],
                    "windows_embedded": [c.windows_embedded for c in rows],
                    "lag_age_seconds": [c.lag_age_seconds for c in rows],
                },
            )
            conn.execute("DELETE FROM dw_activity_minutes WHERE minute < %s", (forget_before,))

    def minutes(self, org_id: str, since: datetime) -> list[ActivityCount]:
        with self._db.connection() as conn:
            rows = conn.execute(_MINUTES, (org_id, since)).fetchall()
        return [
            ActivityCount(
                org_id=str(r["org_id"]),
                minute=cast(datetime, r["minute"]),
                searches=int(cast(int, r["searches"])),
                semantic=int(cast(int, r["semantic"])),
                degraded=int(cast(int, r["degraded"])),
                windows_embedded=int(cast(int, r["windows_embedded"])),
                lag_age_seconds=cast("float | None", r["lag_age_seconds"]),
            )
            for r in rows
        ]
