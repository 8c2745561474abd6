"""The sweep's watermarks in `dw_sweep_watermarks` (docs/adr/0148): one row per partition and
model, the aggregate's state as the library snapshots it.

A slice's watermarks load in one statement; a batch's changed watermarks are saved by one
statement (an update of those stored, an insert of the new ones), which refuses the whole
batch when a row is not at the version its copy was loaded from. Through `Database`, so a
batch's save joins the transaction that writes its windows (`Database.transaction()`,
docs/adr/0148) and commits with them.

Before, each watermark was an event stream in the eventsourcing library's tables
(`historysweep_events`, `historysweep_snapshots`, docs/adr/0091). `carry_over` reads those
once, when a process starts on a database that still has them: every watermark is
projected from its newest snapshot and the events after it, as the library's repository did,
and written here in the same transaction that renames the old tables (`_carried`, kept).
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any, cast

from eventsourcing.application import project_aggregate
from eventsourcing.persistence import IntegrityError, StoredEvent
from psycopg import Connection

from memory.application.history.watermarks import (
    HISTORY_SWEEP_APPLICATION,
    WatermarkCodec,
    WatermarkRecord,
)
from memory.domain.history.partition import Partition
from memory.domain.history.watermark import SweepWatermark, new_watermark, watermark_id
from memory.infrastructure.postgres.database import Database

log = logging.getLogger(__name__)

_LOAD = (
    "SELECT id AS originator_id, version AS originator_version, topic, state"
    " FROM dw_sweep_watermarks WHERE id = ANY(%s::uuid[])"
)
# Rows at the version their copies were loaded from are replaced (`expected` > 0: the id
# condition keeps the update on the primary key under any plan); new ones are inserted
# unless a row appeared meanwhile. The count of both tells whether every one was saved.
_SAVE = """
WITH g AS (
    SELECT * FROM unnest(
        %(ids)s::uuid[], %(orgs)s::text[], %(providers)s::text[], %(channels)s::text[],
        %(models)s::text[], %(expected)s::bigint[], %(versions)s::bigint[],
        %(position_at)s::timestamptz[], %(position_id)s::text[], %(seen)s::bigint[],
        %(embedded)s::bigint[], %(topics)s::text[], %(states)s::bytea[]
    ) AS g(id, org_id, provider, channel, model, expected, version, position_at,
           position_event_id, seen_seq, windows_embedded, topic, state)
), updated AS (
    UPDATE dw_sweep_watermarks w
    SET version = g.version, position_at = g.position_at,
        position_event_id = g.position_event_id, seen_seq = g.seen_seq,
        windows_embedded = g.windows_embedded, topic = g.topic, state = g.state,
        updated_at = now()
    FROM g
    WHERE w.id = ANY(%(ids)s::uuid[]) AND w.id = g.id AND g.expected > 0
      AND w.version = g.expected
    RETURNING w.id
), inserted AS (
    INSERT INTO dw_sweep_watermarks (id, org_id, provider, external_channel_id, model,
        version, position_at, position_event_id, seen_seq, windows_embedded, topic, state)
    SELECT id, org_id, provider, channel, model, version, position_at, position_event_id,
        seen_seq, windows_embedded, topic, state
    FROM g WHERE g.expected = 0
    ON CONFLICT (id) DO NOTHING
    RETURNING id
)
SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted) AS saved
"""
# The library's table names for the application (its name, lower-cased, as prefix).
_OLD_EVENTS = f"{HISTORY_SWEEP_APPLICATION.lower()}_events"
_OLD_SNAPSHOTS = f"{HISTORY_SWEEP_APPLICATION.lower()}_snapshots"
CARRIED_SUFFIX = "_carried"
# Watermarks carried over per statement pair (bounds the memory of a large carry-over).
CARRY_CHUNK = 1000


class PostgresSweepWatermarks:
    def __init__(self, database: Database) -> None:
        self._db = database
        self._codec = WatermarkCodec()

    def find(self, partition: Partition, model: str) -> SweepWatermark | None:
        return self._load([watermark_id(partition, model)]).get(watermark_id(partition, model))

    def get(self, partition: Partition, model: str) -> SweepWatermark:
        return self.find(partition, model) or new_watermark(partition, model)

    def get_many(
        self, partitions: Sequence[Partition], model: str
    ) -> dict[Partition, SweepWatermark]:
        ids = {watermark_id(p, model): p for p in partitions}
        if not ids:
            return {}
        found = self._load(list(ids))
        return {p: found.get(i) or new_watermark(p, model) for i, p in ids.items()}

    def _load(self, ids: list[uuid.UUID]) -> dict[uuid.UUID, SweepWatermark]:
        rows = self._db.read(lambda conn: conn.execute(_LOAD, (ids,)).fetchall())
        return {cast(uuid.UUID, r["originator_id"]): self._codec.decode(_stored(r)) for r in rows}

    def store(self, watermark: SweepWatermark) -> None:
        self.store_many([watermark])

    def store_many(self, watermarks: Sequence[SweepWatermark]) -> None:
        """One statement for all the watermarks that changed; `IntegrityError` (nothing
        saved, the transaction rolled back) when one was saved meanwhile by another."""
        records = self._codec.pending(watermarks)
        if not records:
            return
        with self._db.connection() as conn:
            row = conn.execute(_SAVE, _params(records)).fetchone()
            if row is None or row["saved"] != len(records):
                raise IntegrityError("a watermark of the batch was saved meanwhile")

    def close(self) -> None:
        """Nothing of its own to release: it runs on the service's pool."""


def _params(records: Sequence[WatermarkRecord]) -> dict[str, list[Any]]:
    marks = [r.watermark.mark for r in records]
    return {
        "ids": [r.watermark.id for r in records],
        "orgs": [r.watermark.org_id for r in records],
        "providers": [r.watermark.provider for r in records],
        "channels": [r.watermark.channel_id for r in records],
        "models": [r.watermark.model for r in records],
        "expected": [r.expected for r in records],
        "versions": [r.stored.originator_version for r in records],
        "position_at": [m.position.occurred_at if m.position else None for m in marks],
        "position_id": [m.position.event_id if m.position else None for m in marks],
        "seen": [m.seen_seq for m in marks],
        "embedded": [r.watermark.windows_embedded for r in records],
        "topics": [r.stored.topic for r in records],
        "states": [r.stored.state for r in records],
    }


def _stored(row: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        originator_id=row["originator_id"],
        originator_version=row["originator_version"],
        topic=row["topic"],
        state=bytes(row["state"]),
    )


def carry_over(database: Database) -> int:
    """Move the watermarks of the event-sourced tables (before ADR 0148) into
    `dw_sweep_watermarks`, in one transaction that locks the old tables against writers and
    renames them afterwards; nothing when they are gone (carried over before, or a database
    that never had them). A row already in the new table (saved since) is kept. Returns the
    watermarks carried."""
    with database.connection() as conn:
        row = conn.execute("SELECT to_regclass(%s) AS events", (_OLD_EVENTS,)).fetchone()
        if row is None or row["events"] is None:
            return 0
        snapshots = conn.execute("SELECT to_regclass(%s) AS t", (_OLD_SNAPSHOTS,)).fetchone()
        has_snapshots = snapshots is not None and snapshots["t"] is not None
        tables = [_OLD_EVENTS] + ([_OLD_SNAPSHOTS] if has_snapshots else [])
        conn.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
        ids = [
            cast(uuid.UUID, r["originator_id"])
            for r in conn.execute(
                f"SELECT DISTINCT originator_id FROM {_OLD_EVENTS} ORDER BY originator_id"
            ).fetchall()
        ]
        codec = WatermarkCodec()
        carried = 0
        for start in range(0, len(ids), CARRY_CHUNK):
            chunk = ids[start : start + CARRY_CHUNK]
            loaded = _load_event_sourced(conn, codec, chunk, has_snapshots)
            # As new rows: `expected` 0 inserts, and a row saved since is left as it is.
            records = [codec.record(w, expected=0) for w in loaded]
            if records:
                saved = conn.execute(_SAVE, _params(records)).fetchone()
                carried += int(cast(int, saved["saved"])) if saved else 0
        for table in tables:
            conn.execute(f"ALTER TABLE {table} RENAME TO {_free_name(conn, table)}")
    log.info("history sweep: carried %d watermark(s) over from %s", carried, _OLD_EVENTS)
    return carried


def _free_name(conn: Connection[Any], table: str) -> str:
    """`table` with the carried suffix, numbered when an earlier carry-over took the name (an
    older version ran again meanwhile and created the library's tables anew)."""
    name, n = f"{table}{CARRIED_SUFFIX}", 1
    while True:
        row = conn.execute("SELECT to_regclass(%s) AS t", (name,)).fetchone()
        if row is None or row["t"] is None:
            return name
        n += 1
        name = f"{table}{CARRIED_SUFFIX}_{n}"


def _load_event_sourced(
    conn: Connection[Any],
    codec: WatermarkCodec,
    ids: list[uuid.UUID],
    has_snapshots: bool,
) -> list[SweepWatermark]:
    """The watermarks `ids` as the library's repository loaded them: the newest snapshot,
    then the events after it, projected."""
    snapshots: dict[uuid.UUID, StoredEvent] = {}
    if has_snapshots:
        rows = conn.execute(
            f"SELECT DISTINCT ON (originator_id) originator_id, originator_version, topic,"
            f" state FROM {_OLD_SNAPSHOTS} WHERE originator_id = ANY(%s::uuid[])"
            " ORDER BY originator_id, originator_version DESC",
            (ids,),
        ).fetchall()
        snapshots = {cast(uuid.UUID, r["originator_id"]): _stored(r) for r in rows}
    after = [snapshots[i].originator_version if i in snapshots else 0 for i in ids]
    events: dict[uuid.UUID, list[StoredEvent]] = defaultdict(list)
    for r in conn.execute(
        f"SELECT e.originator_id, e.originator_version, e.topic, e.state FROM {_OLD_EVENTS} e"
        " JOIN unnest(%s::uuid[], %s::bigint[]) AS g(id, after)"
        " ON e.originator_id = g.id AND e.originator_version > g.after"
        " ORDER BY e.originator_id, e.originator_version",
        (ids, after),
    ).fetchall():
        events[cast(uuid.UUID, r["originator_id"])].append(_stored(r))
    loaded: list[SweepWatermark] = []
    for i in ids:
        history: list[Any] = []
        if i in snapshots:
            history.append(codec.mapper.to_domain_event(snapshots[i]))
        history += [codec.mapper.to_domain_event(e) for e in events[i]]
        found: SweepWatermark | None = project_aggregate(None, chain(history))
        if found is not None:
            loaded.append(found)
    return loaded


def open_sweep_watermarks(database: Database) -> PostgresSweepWatermarks:
    """The store, after carrying the event-sourced watermarks over if the database still has
    them (under the migration lock, so processes starting together do it once)."""
    with database.migration_lock():
        carry_over(database)
    return PostgresSweepWatermarks(database)
