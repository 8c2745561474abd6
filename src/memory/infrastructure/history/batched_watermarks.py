"""A page's `SweepWatermark` aggregates loaded in one statement (the sweep status, ADR 0093).

The library loads an aggregate with two round trips (its latest snapshot, then the events
after it). A status page of 50 partitions made 100 of them: 12 ms unloaded, most of a
second on a busy machine. This reads the same rows of the library's own tables (names from
its recorders) for every aggregate of the page at once, and rebuilds each aggregate with the
library's mapper and projector, exactly as its repository does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from eventsourcing.application import project_aggregate
from eventsourcing.persistence import StoredEvent
from psycopg import sql

from memory.application.history.watermarks import SweepWatermarks
from memory.domain.history.partition import Partition
from memory.domain.history.watermark import SweepWatermark, new_watermark, watermark_id
from memory.infrastructure.postgres.database import Database

# The latest snapshot of each aggregate, then its events after that snapshot's version (all
# of them without one), ordered for a replay per aggregate: snapshot first, then events.
_WITH_SNAPSHOTS = sql.SQL(
    """
    WITH snap AS (
        SELECT DISTINCT ON (originator_id) originator_id, originator_version, topic, state
        FROM {snapshots} WHERE originator_id = ANY(%(ids)s::uuid[])
        ORDER BY originator_id, originator_version DESC)
    SELECT originator_id, originator_version, topic, state, 0 AS kind FROM snap
    UNION ALL
    SELECT e.originator_id, e.originator_version, e.topic, e.state, 1 AS kind
    FROM {events} e LEFT JOIN snap s ON s.originator_id = e.originator_id
    WHERE e.originator_id = ANY(%(ids)s::uuid[])
      AND e.originator_version > coalesce(s.originator_version, 0)
    ORDER BY originator_id, kind, originator_version
    """
)
_EVENTS_ONLY = sql.SQL(
    """
    SELECT originator_id, originator_version, topic, state, 1 AS kind
    FROM {events} WHERE originator_id = ANY(%(ids)s::uuid[])
    ORDER BY originator_id, originator_version
    """
)


class BatchedWatermarks:
    """`WatermarkPages` on the library's PostgreSQL tables of `SweepWatermarks`."""

    def __init__(self, database: Database, watermarks: SweepWatermarks) -> None:
        self._db = database
        self._mapper = watermarks.mapper
        events = _table(watermarks.events.recorder)
        if watermarks.snapshots is None:
            self._statement = _EVENTS_ONLY.format(events=events)
        else:
            snapshots = _table(watermarks.snapshots.recorder)
            self._statement = _WITH_SNAPSHOTS.format(events=events, snapshots=snapshots)

    def get_many(self, partitions: Sequence[Partition], model: str) -> list[SweepWatermark]:
        ids = {watermark_id(p, model): p for p in partitions}
        with self._db.connection() as conn:
            rows = conn.execute(self._statement, {"ids": list(ids)}).fetchall()
        stored: dict[uuid.UUID, list[Any]] = {}
        for found_row in rows:
            row = cast(dict[str, Any], found_row)
            originator = cast(uuid.UUID, row["originator_id"])
            stored.setdefault(originator, []).append(
                self._mapper.to_domain_event(
                    StoredEvent(
                        originator_id=originator,
                        originator_version=int(row["originator_version"]),
                        topic=str(row["topic"]),
                        state=bytes(row["state"]),
                    )
                )
            )
        found = []
        for aggregate_id, partition in ids.items():
            events = stored.get(aggregate_id)
            aggregate = project_aggregate(None, events) if events else None
            if aggregate is None:
                found.append(new_watermark(partition, model))
                continue
            assert isinstance(aggregate, SweepWatermark)
            found.append(aggregate)
        return found


def _table(recorder: Any) -> sql.Composable:
    """The recorder's table, qualified by its schema as the library itself names it."""
    return sql.Identifier(recorder.datastore.schema, recorder.events_table_name)
