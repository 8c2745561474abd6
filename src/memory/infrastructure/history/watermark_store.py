"""`SweepWatermarks` on the eventsourcing library's PostgreSQL persistence, in the same
database as everything else (its own tables, `historysweep_events`).

`get_many` loads a slice's watermarks in two statements (docs/adr/0091): the newest snapshot
of each, then each one's events after its snapshot, from the library's own tables, mapped
and projected by the library's own mapper and projector exactly as its repository does for
one aggregate.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any, cast

from eventsourcing.application import project_aggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder
from psycopg.sql import SQL, Identifier

from memory.application.history.watermarks import HISTORY_SWEEP_APPLICATION, SweepWatermarks
from memory.domain.history.partition import Partition
from memory.domain.history.watermark import SweepWatermark, new_watermark, watermark_id
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.event_store import EventStoreConnection

_NEWEST_SNAPSHOTS = SQL(
    "SELECT DISTINCT ON (originator_id) originator_id, originator_version, topic, state"
    " FROM {table} WHERE originator_id = ANY(%s::uuid[])"
    " ORDER BY originator_id, originator_version DESC"
)
_EVENTS_AFTER = SQL(
    "SELECT e.originator_id, e.originator_version, e.topic, e.state"
    " FROM {table} e JOIN unnest(%s::uuid[], %s::bigint[]) AS g(id, after)"
    " ON e.originator_id = g.id AND e.originator_version > g.after"
    " ORDER BY e.originator_id, e.originator_version"
)


class PostgresSweepWatermarks(SweepWatermarks):
    # The library names an application (its env prefix, its tables) after its class unless
    # the class says otherwise: the same application, the same tables.
    name = HISTORY_SWEEP_APPLICATION

    def get_many(
        self, partitions: Sequence[Partition], model: str
    ) -> dict[Partition, SweepWatermark]:
        ids = {watermark_id(p, model): p for p in partitions}
        if not ids:
            return {}
        recorder = cast(PostgresAggregateRecorder, self.recorder)
        snapshots: dict[uuid.UUID, StoredEvent] = {}
        events: dict[uuid.UUID, list[StoredEvent]] = defaultdict(list)
        with recorder.datastore.get_connection() as conn, conn.cursor() as curs:
            if self.snapshots is not None:
                table = cast(PostgresAggregateRecorder, self.snapshots.recorder).events_table_name
                curs.execute(_NEWEST_SNAPSHOTS.format(table=Identifier(table)), (list(ids),))
                snapshots = {row["originator_id"]: _stored(row) for row in curs.fetchall()}
            after = [snapshots[i].originator_version if i in snapshots else 0 for i in ids]
            curs.execute(
                _EVENTS_AFTER.format(table=Identifier(recorder.events_table_name)),
                (list(ids), after),
            )
            for row in curs.fetchall():
                events[row["originator_id"]].append(_stored(row))
        return {
            partition: self._project(snapshots.get(i), events[i]) or new_watermark(partition, model)
            for i, partition in ids.items()
        }

    def _project(
        self, snapshot: StoredEvent | None, events: list[StoredEvent]
    ) -> SweepWatermark | None:
        loaded: list[Any] = []
        if snapshot is not None:
            assert self.snapshots is not None
            loaded.append(self.snapshots.mapper.to_domain_event(snapshot))
        loaded += [self.mapper.to_domain_event(e) for e in events]
        found: SweepWatermark | None = project_aggregate(None, chain(loaded))
        return found


def _stored(row: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        originator_id=row["originator_id"],
        originator_version=row["originator_version"],
        topic=row["topic"],
        state=bytes(row["state"]),
    )


def open_sweep_watermarks(database: Database) -> SweepWatermarks:
    """Construct the application (creating its tables if needed) under the migration lock,
    so processes starting together do not race on the library's DDL."""
    with database.migration_lock():
        connection = EventStoreConnection.for_database(database)
        return PostgresSweepWatermarks(connection.env(HISTORY_SWEEP_APPLICATION))
