"""The org directory in PostgreSQL: `dw_orgs` (every known org, its exact message and
partition counts, kept by triggers), `dw_sweep_partition_state` (each partition's sweep
state, written at the end of each visit) and `dw_org_sweep_totals` (its sums per org and
model, kept by triggers), migrations 0206 and 0210, docs/adr/0070 and 0093.

A page is one statement: the page's org ids by primary key, then per org a handful of index
probes (its flags, retention, totals, and the oldest waiting work in the sweep's work state,
migrations 0207 and 0211). Its cost grows with the page's orgs, never with their partitions
or messages. The sweep status reads an org's totals in one row and its partitions a keyset
page at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from psycopg import sql

from memory.application.history.ports import OrgPageQuery, OrgRow, PartitionVisit, SweepTotals
from memory.domain.history.org_directory import prefix_range
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import PartitionKey
from memory.infrastructure.history.locks import RETENTION_LOCK_CLASS
from memory.infrastructure.postgres.database import Database

# dw_orgs.org_id is COLLATE "C" (pages in byte order); the other tables' org_id has the
# database's default collation, so joins name it to keep using those tables' indexes.
_PAGE = sql.SQL(
    """
    WITH page AS (
        SELECT org_id, messages, partitions FROM dw_orgs
        WHERE TRUE {after} {prefix} {visible}
        ORDER BY org_id
        LIMIT %(limit)s
    )
    SELECT
        p.org_id,
        p.messages,
        p.partitions,
        (SELECT coalesce(jsonb_object_agg(f.flag, f.enabled), '{{}}'::jsonb)
         FROM org_feature_flags f WHERE f.org_id = p.org_id COLLATE "default") AS org_flags,
        (SELECT r.retention_days FROM dw_org_retention r
         WHERE r.org_id = p.org_id COLLATE "default") AS retention_days,
        (SELECT min(w.waiting_since) FROM dw_sweep_work w
         WHERE w.org_id = p.org_id COLLATE "default" AND w.model = %(model)s
           AND w.due_at IS NOT NULL AND w.waiting_since <= %(now)s) AS waiting_since,
        coalesce(t.open_windows, 0) AS open_windows,
        coalesce(t.poison_windows, 0) AS poison_windows,
        coalesce(t.poison_events, 0) AS poison_events,
        t.embedded_at AS last_embedded_at,
        t.swept_at AS last_swept_at
    FROM page p
    LEFT JOIN dw_org_sweep_totals t
        ON t.org_id = p.org_id COLLATE "default" AND t.model = %(model)s
    ORDER BY p.org_id
    """
)
_AFTER = sql.SQL("AND org_id > %(after)s")
_PREFIX = sql.SQL("AND org_id >= %(low)s AND org_id < %(high)s")
_VISIBLE = sql.SQL("AND org_id = ANY(%(visible)s::text[])")

# Only a partition that still exists gets a state: an erasure (which holds the org's
# retention lock exclusively, this statement's transaction holds it shared) wins.
# A slice's visits in one statement (docs/adr/0149): its states in key order, each kept only
# while its partition exists (an erasure may have removed it meanwhile); the totals' triggers
# then run once for the statement's inserts and once for its updates (migration 0228).
_RECORD_VISITS = """
INSERT INTO dw_sweep_partition_state AS s (
    org_id, provider, external_channel_id, model, position_at, position_event_id,
    windows_embedded, poison_windows, poison_events, stalled, open_windows, swept_at,
    embedded_at)
SELECT v.org_id, v.provider, v.channel_id, v.model, v.position_at, v.position_event_id,
       v.windows_embedded, v.poison_windows, v.poison_events, v.stalled, v.open_windows,
       v.at, v.embedded_at
FROM unnest(
    %(org_id)s::text[], %(provider)s::text[], %(channel_id)s::text[], %(model)s::text[],
    %(position_at)s::timestamptz[], %(position_event_id)s::text[],
    %(windows_embedded)s::bigint[], %(poison_windows)s::integer[],
    %(poison_events)s::integer[], %(stalled)s::boolean[], %(open_windows)s::integer[],
    %(at)s::timestamptz[], %(embedded_at)s::timestamptz[]
) WITH ORDINALITY AS v(org_id, provider, channel_id, model, position_at, position_event_id,
    windows_embedded, poison_windows, poison_events, stalled, open_windows, at, embedded_at,
    n)
WHERE EXISTS (
    SELECT 1 FROM dw_chat_partitions p
    WHERE p.org_id = v.org_id AND p.provider = v.provider
      AND p.external_channel_id = v.channel_id)
ORDER BY v.n
ON CONFLICT (org_id, provider, external_channel_id, model) DO UPDATE SET
    position_at = excluded.position_at,
    position_event_id = excluded.position_event_id,
    windows_embedded = excluded.windows_embedded,
    poison_windows = excluded.poison_windows,
    poison_events = excluded.poison_events,
    stalled = excluded.stalled,
    open_windows = excluded.open_windows,
    swept_at = excluded.swept_at,
    embedded_at = coalesce(excluded.embedded_at, s.embedded_at)
"""

# A keyset range of the primary key (org_id, provider, external_channel_id): the row compare
# spans the whole key so the index scan starts right after the previous page's last row.
_PARTITIONS = sql.SQL(
    """
    SELECT provider, external_channel_id FROM dw_chat_partitions
    WHERE org_id = %(org_id)s {after}
    ORDER BY org_id, provider, external_channel_id
    LIMIT %(limit)s
    """
)
_PARTITIONS_AFTER = sql.SQL(
    "AND (org_id, provider, external_channel_id) > (%(org_id)s, %(provider)s, %(channel_id)s)"
)

# The page's partitions whose work state (migration 0207) says the sweep has nothing to do:
# primary-key probes of dw_sweep_work, one per partition of the page.
_SETTLED = """
SELECT w.provider, w.external_channel_id
FROM unnest(%(providers)s::text[], %(channels)s::text[]) AS page(provider, channel)
JOIN dw_sweep_work w
  ON w.org_id = %(org_id)s AND w.provider = page.provider
 AND w.external_channel_id = page.channel AND w.model = %(model)s
WHERE w.due_at IS NULL
"""

# Two primary-key probes: the org's counts (0206, 0210) and its sweep totals for the model.
_TOTALS = """
SELECT coalesce(o.partitions, 0) AS partitions,
       coalesce(o.messages, 0) AS messages,
       coalesce(t.partitions, 0) AS partitions_swept,
       coalesce(t.windows_embedded, 0) AS windows_embedded,
       coalesce(t.open_windows, 0) AS open_windows,
       coalesce(t.poison_windows, 0) AS poison_windows,
       coalesce(t.poison_events, 0) AS poison_events,
       coalesce(t.stalled, 0) AS stalled,
       t.swept_at,
       t.embedded_at
FROM (SELECT %(org_id)s::text AS org_id) AS asked
LEFT JOIN dw_orgs o ON o.org_id = asked.org_id COLLATE "C"
LEFT JOIN dw_org_sweep_totals t ON t.org_id = asked.org_id AND t.model = %(model)s
"""


class PostgresOrgDirectory:
    def __init__(self, database: Database) -> None:
        self._db = database

    def page(self, query: OrgPageQuery) -> list[OrgRow]:
        statement, params = page_statement(query)
        with self._db.connection() as conn:
            rows = conn.execute(statement, params).fetchall()
        return [_org_row(r) for r in rows]

    def record_visits(self, visits: Sequence[PartitionVisit]) -> None:
        """A slice's visits in one statement (docs/adr/0149), under the shared retention
        lock of each org (taken in org order, as the window upsert takes them)."""
        if not visits:
            return
        # In key order, so two sweepers recording slices of the same partitions take their
        # rows in one order (no deadlock); a partition visited twice keeps its last visit.
        last = {(v.partition, v.model): v for v in visits}
        ordered = [last[k] for k in sorted(last)]
        rows = [_visit_params(v) for v in ordered]
        params = {key: [r[key] for r in rows] for key in rows[0]}
        with self._db.connection() as conn, conn.pipeline():
            for org_id in sorted({v.partition.org_id for v in visits}):
                conn.execute(
                    "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))",
                    (RETENTION_LOCK_CLASS, org_id),
                )
            conn.execute(_RECORD_VISITS, params)

    def forget_model(self, model: str) -> int:
        with self._db.connection() as conn:
            return conn.execute(
                "DELETE FROM dw_sweep_partition_state WHERE model = %s", (model,)
            ).rowcount

    def partitions_after(
        self, org_id: str, after: PartitionKey | None, limit: int
    ) -> list[Partition]:
        params: dict[str, Any] = {"org_id": org_id, "limit": limit}
        keyset = sql.SQL("")
        if after is not None:
            keyset = _PARTITIONS_AFTER
            params |= {"provider": after.provider, "channel_id": after.channel_id}
        with self._db.connection() as conn:
            rows = conn.execute(_PARTITIONS.format(after=keyset), params).fetchall()
        return [Partition(org_id, str(r["provider"]), str(r["external_channel_id"])) for r in rows]

    def settled(self, org_id: str, model: str, partitions: Sequence[Partition]) -> set[Partition]:
        params = {
            "org_id": org_id,
            "model": model,
            "providers": [p.provider for p in partitions],
            "channels": [p.channel_id for p in partitions],
        }
        with self._db.connection() as conn:
            rows = conn.execute(_SETTLED, params).fetchall()
        return {Partition(org_id, str(r["provider"]), str(r["external_channel_id"])) for r in rows}

    def sweep_totals(self, org_id: str, model: str) -> SweepTotals:
        with self._db.connection() as conn:
            found = conn.execute(_TOTALS, {"org_id": org_id, "model": model}).fetchone()
        assert found is not None  # the statement always answers one row
        row = cast(dict[str, Any], found)
        return SweepTotals(
            partitions=int(row["partitions"]),
            messages=int(row["messages"]),
            partitions_swept=int(row["partitions_swept"]),
            windows_embedded=int(row["windows_embedded"]),
            open_windows=int(row["open_windows"]),
            poison_windows=int(row["poison_windows"]),
            poison_events=int(row["poison_events"]),
            partitions_stalled=int(row["stalled"]),
            last_swept_at=cast(datetime | None, row["swept_at"]),
            last_embedded_at=cast(datetime | None, row["embedded_at"]),
        )


def page_statement(query: OrgPageQuery) -> tuple[sql.Composed, dict[str, Any]]:
    """The one statement of a page and its parameters (also what bench/org_directory.py
    explains)."""
    params: dict[str, Any] = {
        "limit": query.limit,
        "model": query.model,
        "now": query.now,
    }
    after = prefix = visible = sql.SQL("")
    if query.after is not None:
        after, params["after"] = _AFTER, query.after
    if query.prefix is not None:
        prefix = _PREFIX
        params["low"], params["high"] = prefix_range(query.prefix)
    if query.visible is not None:
        visible, params["visible"] = _VISIBLE, sorted(query.visible)
    statement = _PAGE.format(after=after, prefix=prefix, visible=visible)
    return statement, params


def _org_row(row: dict[str, Any]) -> OrgRow:
    flags = cast(dict[str, Any], row["org_flags"])
    return OrgRow(
        org_id=str(row["org_id"]),
        org_flags={str(k): bool(v) for k, v in flags.items()},
        retention_days=None if row["retention_days"] is None else int(row["retention_days"]),
        partitions=int(row["partitions"]),
        messages=int(row["messages"]),
        open_windows=int(row["open_windows"]),
        poison_windows=int(row["poison_windows"]),
        poison_events=int(row["poison_events"]),
        waiting_since=cast(datetime | None, row["waiting_since"]),
        last_embedded_at=cast(datetime | None, row["last_embedded_at"]),
        last_swept_at=cast(datetime | None, row["last_swept_at"]),
    )


def _visit_params(visit: PartitionVisit) -> dict[str, Any]:
    position = visit.position
    return {
        "org_id": visit.partition.org_id,
        "provider": visit.partition.provider,
        "channel_id": visit.partition.channel_id,
        "model": visit.model,
        "position_at": None if position is None else position.occurred_at,
        "position_event_id": None if position is None else position.event_id,
        "windows_embedded": visit.windows_embedded,
        "poison_windows": visit.poison_windows,
        "poison_events": visit.poison_events,
        "stalled": visit.stalled,
        "open_windows": visit.open_windows,
        "at": visit.at,
        "embedded_at": visit.at if visit.embedded else None,
    }
