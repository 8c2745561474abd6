"""The sweep's work-waiting state in PostgreSQL: `dw_sweep_work` and `dw_sweep_models`
(migration 0207, docs/adr/0089).

Ingest marks work in its own transaction (`PostgresChatEventLog.append`); a visit's end
clears or re-times it (`finish`) only when the partition's ingest count is what the visit
started from. Every read here filters on the partial index of due rows, so its cost grows
with the partitions that have work, never with all partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from psycopg import Connection, sql
from psycopg.rows import DictRow

from memory.application.history.ports import (
    BacklogQuery,
    DueQuery,
    DueVisit,
    OrgWaiting,
    SweepBacklog,
    VisitOutcome,
)
from memory.domain.history.partition import Partition
from memory.infrastructure.postgres.database import Database

# Ingest marks work in the transaction that inserts into dw_chat_events (ROW EXCLUSIVE until
# it commits): taking that table SHARE here waits for every ingest in flight and holds new
# ones back until the seed commits, so no ingest slips between "the model is not registered
# yet" and the seed's snapshot.
_REGISTER = (
    "LOCK TABLE dw_chat_events IN SHARE MODE",
    "INSERT INTO dw_sweep_models (model) VALUES (%(model)s) ON CONFLICT DO NOTHING",
)
_SEED = """
INSERT INTO dw_sweep_work AS w (
    org_id, provider, external_channel_id, model, due_at, waiting_since, pending_windows)
SELECT p.org_id, p.provider, p.external_channel_id, %(model)s, '-infinity', %(now)s, 1
FROM dw_chat_partitions p
ON CONFLICT DO NOTHING
"""
# An org whose own layer turns off one of the required flags is not swept.
_ORG_ENABLED = sql.SQL(
    "NOT EXISTS (SELECT 1 FROM org_feature_flags f WHERE f.org_id = w.org_id"
    " AND f.flag = ANY(%(flags)s::text[]) AND NOT f.enabled)"
)
# When a required flag's global state is opt_in (docs/adr/0131), only the orgs that turned
# on every such flag are swept: they are listed first (as many as opted in), and the work
# rows are read per listed org (dw_sweep_work_org_idx), never the other orgs' waiting rows.
_OPT_IN_FLAGS = (
    "SELECT coalesce(array_agg(flag), '{}') AS flags FROM admin_feature_flags"
    " WHERE flag = ANY(%(flags)s::text[]) AND opt_in"
)
_OPTED_IN_ORGS = """
SELECT coalesce(array_agg(org_id), '{}') AS orgs FROM (
    SELECT org_id FROM org_feature_flags WHERE flag = ANY(%(opt_in)s::text[]) AND enabled
    GROUP BY org_id HAVING count(*) = cardinality(%(opt_in)s::text[])
) o
"""
_ORGS_OPTED_IN = sql.SQL(" AND w.org_id = ANY(%(opted_in)s::text[])")
# The orgs with due work, then each one's first `limit` due partitions in turn order from
# dw_sweep_work_turns_idx: a slice numbers at most `limit` rows of each due org, not all of
# its due rows (sorted, that was 26-33 ms per slice with 10,000 due in one org; ADR 0136).
_DUE = sql.SQL(
    """
    WITH orgs AS (
        SELECT DISTINCT w.org_id FROM dw_sweep_work w
        WHERE w.model = %(model)s AND w.due_at <= %(now)s AND {enabled}{org}
    ), due AS (
        SELECT d.*, row_number() OVER (
                   PARTITION BY d.org_id
                   ORDER BY d.due_at, d.waiting_since, d.provider, d.external_channel_id
               ) AS turn
        FROM orgs, LATERAL (
            SELECT w.org_id, w.provider, w.external_channel_id, w.changes, w.due_at,
                   w.waiting_since
            FROM dw_sweep_work w
            WHERE w.model = %(model)s AND w.org_id = orgs.org_id AND w.due_at <= %(now)s
            ORDER BY w.due_at, w.waiting_since, w.provider, w.external_channel_id
            LIMIT %(limit)s) AS d
    )
    SELECT org_id, provider, external_channel_id, changes FROM due
    ORDER BY turn, due_at, waiting_since, org_id
    LIMIT %(limit)s
    """
)
_OUTCOMES = """unnest(%(org_id)s::text[], %(provider)s::text[], %(channel)s::text[],
            %(changes)s::bigint[], %(due_at)s::timestamptz[], %(pending)s::int[])
    AS o(org_id, provider, channel, changes, due_at, pending)"""
# Rows are locked in key order, as ingest's upsert takes them, so the two never deadlock.
_LOCK_OUTCOMES = f"""
SELECT 1 FROM dw_sweep_work AS w, {_OUTCOMES}
WHERE w.org_id = o.org_id AND w.provider = o.provider
  AND w.external_channel_id = o.channel AND w.model = %(model)s
ORDER BY w.org_id, w.provider, w.external_channel_id
FOR UPDATE OF w
"""
_FINISH = f"""
UPDATE dw_sweep_work AS w SET
    due_at = CASE WHEN w.changes = o.changes THEN o.due_at ELSE w.due_at END,
    waiting_since = CASE
        WHEN w.changes <> o.changes THEN w.waiting_since
        WHEN o.due_at IS NULL THEN NULL
        WHEN o.due_at > %(now)s THEN o.due_at
        ELSE w.waiting_since END,
    pending_windows = CASE WHEN w.changes = o.changes THEN o.pending
                           ELSE greatest(o.pending, 1) END
FROM {_OUTCOMES}
WHERE w.org_id = o.org_id AND w.provider = o.provider
  AND w.external_channel_id = o.channel AND w.model = %(model)s
"""
_BACKLOG = sql.SQL(
    """
    WITH due AS (
        SELECT w.org_id, w.waiting_since AS since FROM dw_sweep_work w
        WHERE w.model = %(model)s AND w.due_at <= %(now)s AND {enabled}{org}
        UNION ALL
        -- Before a sweeper first registers the model, every partition waits (since it
        -- first got a message): the only case that reads all of them.
        SELECT w.org_id, w.first_ingested_at FROM dw_chat_partitions w
        WHERE NOT EXISTS (SELECT 1 FROM dw_sweep_models WHERE model = %(model)s)
          AND {enabled}{org}
    ), waiting AS (
        SELECT org_id, count(*) AS partitions, min(since) AS since FROM due GROUP BY org_id
    )
    SELECT (SELECT coalesce(sum(partitions), 0) FROM waiting) AS partitions,
           (SELECT count(*) FROM waiting) AS orgs,
           (SELECT min(since) FROM waiting) AS oldest,
           (SELECT coalesce(jsonb_agg(jsonb_build_array(org_id, partitions, since)
                                      ORDER BY since, org_id), '[]'::jsonb)
            FROM (SELECT * FROM waiting ORDER BY since, org_id LIMIT %(top)s) t) AS longest,
           (SELECT min(since) FROM (SELECT since FROM waiting ORDER BY since, org_id
                                    OFFSET %(top)s) t) AS others,
           (SELECT coalesce(jsonb_agg(jsonb_build_array(b, (
                        SELECT count(*) FROM waiting
                        WHERE since >= %(now)s - make_interval(secs => b))) ORDER BY b),
                    '[]'::jsonb)
            FROM unnest(%(buckets)s::float8[]) AS b) AS by_age
    """
)
# Before a sweeper first registers the model, every partition waits (the registration makes
# them all due): the only case that counts partitions.
# An org's pending windows for a model (also read by search, infrastructure/history/
# search_state.py): before the model's first pass, one per partition.
PENDING_WINDOWS = """
SELECT CASE WHEN EXISTS (SELECT 1 FROM dw_sweep_models WHERE model = %(model)s)
    THEN (SELECT coalesce(sum(pending_windows), 0) FROM dw_sweep_work
          WHERE org_id = %(org_id)s AND model = %(model)s AND due_at IS NOT NULL)
    ELSE (SELECT count(*) FROM dw_chat_partitions WHERE org_id = %(org_id)s)
    END
"""


class PostgresSweepSchedule:
    def __init__(self, database: Database) -> None:
        self._db = database

    def register(self, model: str, now: datetime) -> bool:
        with self._db.connection() as conn:
            known = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM dw_sweep_models WHERE model = %s) AS known",
                (model,),
            ).fetchone()
        if known is not None and known["known"]:
            return False
        with self._db.connection() as conn:
            conn.execute(_REGISTER[0])
            if conn.execute(_REGISTER[1], {"model": model}).rowcount == 0:
                return False
            conn.execute(_SEED, {"model": model, "now": now})
        return True

    def due(self, query: DueQuery) -> list[DueVisit]:
        params: dict[str, Any] = {
            "model": query.model,
            "now": query.now,
            "limit": query.limit,
            "flags": list(query.required_flags),
        }
        with self._db.connection() as conn:
            enabled = _enabled(conn, params)
            statement = _DUE.format(enabled=enabled, org=_org_filter(query.org_id, params))
            rows = conn.execute(statement, params).fetchall()
        return [
            DueVisit(
                Partition(str(r["org_id"]), str(r["provider"]), str(r["external_channel_id"])),
                int(cast(int, r["changes"])),
            )
            for r in rows
        ]

    def finish(self, model: str, outcomes: Sequence[VisitOutcome], now: datetime) -> None:
        if not outcomes:
            return
        params = {
            "model": model,
            "now": now,
            "org_id": [o.partition.org_id for o in outcomes],
            "provider": [o.partition.provider for o in outcomes],
            "channel": [o.partition.channel_id for o in outcomes],
            "changes": [o.changes for o in outcomes],
            "due_at": [o.due_at for o in outcomes],
            "pending": [o.pending_windows for o in outcomes],
        }
        with self._db.connection() as conn:
            conn.execute(_LOCK_OUTCOMES, params)
            conn.execute(_FINISH, params)

    def backlog(self, query: BacklogQuery) -> SweepBacklog:
        now = query.now
        params: dict[str, Any] = {
            "model": query.model,
            "now": now,
            "top": query.top,
            "flags": list(query.required_flags),
            "buckets": list(query.age_buckets),
        }
        org = _org_filter(query.org_id, params)
        with self._db.connection() as conn:
            statement = _BACKLOG.format(enabled=_enabled(conn, params), org=org)
            row = conn.execute(statement, params).fetchone()
        assert row is not None
        longest = cast(list[list[Any]], row["longest"])
        return SweepBacklog(
            now=now,
            partitions=int(cast(int, row["partitions"])),
            orgs=int(cast(int, row["orgs"])),
            oldest_since=cast(datetime | None, row["oldest"]),
            longest=tuple(
                OrgWaiting(str(o), int(n), datetime.fromisoformat(str(since)))
                for o, n, since in longest
            ),
            others_since=cast(datetime | None, row["others"]),
            orgs_by_age=tuple(
                (float(bound), int(n)) for bound, n in cast(list[list[Any]], row["by_age"])
            ),
        )

    def pending_windows(self, org_id: str, model: str) -> int:
        with self._db.connection() as conn:
            row = conn.execute(
                f"SELECT ({PENDING_WINDOWS}) AS pending", {"org_id": org_id, "model": model}
            ).fetchone()
        assert row is not None
        return int(cast(int, row["pending"]))

    def forget(self, model: str) -> None:
        with self._db.connection() as conn:
            conn.execute("DELETE FROM dw_sweep_models WHERE model = %s", (model,))


def _org_filter(org_id: str | None, params: dict[str, Any]) -> sql.Composable:
    if org_id is None:
        return sql.SQL("")
    params["org_id"] = org_id
    return sql.SQL(" AND w.org_id = %(org_id)s")


def _enabled(conn: Connection[DictRow], params: dict[str, Any]) -> sql.Composable:
    """The condition on `w` (a work or partition row) for its org having every required
    flag, with the opted-in orgs looked up first when a required flag is opt_in."""
    row = conn.execute(_OPT_IN_FLAGS, params).fetchone()
    opt_in = [] if row is None else list(cast(list[str], row["flags"]))
    if not opt_in:
        return _ORG_ENABLED
    orgs = conn.execute(_OPTED_IN_ORGS, {"opt_in": opt_in}).fetchone()
    params["opted_in"] = [] if orgs is None else list(cast(list[str], orgs["orgs"]))
    return sql.Composed([_ORG_ENABLED, _ORGS_OPTED_IN])
