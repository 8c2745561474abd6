"""Erasure in PostgreSQL: each one transaction under the org's exclusive retention lock, the
lock the sweep's window upsert takes shared (see `embeddings._UPSERT`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from psycopg import Connection, sql

from memory.application.history.erasure import ErasedOrg, ErasureReport
from memory.domain.history.partition import Partition
from memory.infrastructure.history.locks import RETENTION_LOCK_CLASS
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes
from memory.infrastructure.postgres.database import Database

# Windows first, found by the events they cover (`source_event_ids` holds every covered id),
# then the events: both in the transaction that holds the lock.
_ERASE_EVENTS = sql.SQL("""
WITH erased AS (
    SELECT event_id FROM dw_chat_events
    WHERE org_id = %(org_id)s AND {condition}
), windows AS (
    DELETE FROM dw_message_embeddings
    WHERE org_id = %(org_id)s
      AND source_event_ids && ARRAY(SELECT event_id FROM erased)::text[]
    RETURNING 1
), events AS (
    DELETE FROM dw_chat_events
    WHERE org_id = %(org_id)s AND event_id IN (SELECT event_id FROM erased)
    RETURNING 1
)
SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM windows) AS windows
""")
_BY_IDS = sql.SQL("event_id = ANY(%(ids)s::text[])")
_BY_SENDER = sql.SQL("sender = %(sender)s")


class PostgresErasure:
    def __init__(self, database: Database, *, indexes: PostgresWindowIndexes | None = None) -> None:
        """`indexes`: the org search indexes an erasure that shrinks an org retires, and
        that erasing an org drops."""
        self._db = database
        self._indexes = indexes if indexes is not None else PostgresWindowIndexes(database)

    def erase_events(self, org_id: str, event_ids: Sequence[str]) -> ErasureReport:
        return self._erase(org_id, _BY_IDS, {"ids": list(event_ids)})

    def erase_sender(self, org_id: str, sender: str) -> ErasureReport:
        return self._erase(org_id, _BY_SENDER, {"sender": sender})

    def erase_org(self, org_id: str) -> ErasedOrg:
        params = {"org_id": org_id}
        with self._db.connection() as conn:
            self._lock(conn, org_id)
            partitions = [
                Partition(org_id, str(r["provider"]), str(r["external_channel_id"]))
                for r in conn.execute(
                    "SELECT provider, external_channel_id FROM dw_chat_partitions"
                    " WHERE org_id = %(org_id)s ORDER BY provider, external_channel_id",
                    params,
                ).fetchall()
            ]
            models = [
                str(r["model"])
                for r in conn.execute(
                    "SELECT DISTINCT model FROM dw_message_embeddings WHERE org_id = %(org_id)s",
                    params,
                ).fetchall()
            ]
            windows = conn.execute(
                "DELETE FROM dw_message_embeddings WHERE org_id = %(org_id)s", params
            ).rowcount
            events = conn.execute(
                "DELETE FROM dw_chat_events WHERE org_id = %(org_id)s", params
            ).rowcount
            conn.execute("DELETE FROM dw_chat_partitions WHERE org_id = %(org_id)s", params)
            conn.execute("DELETE FROM dw_sweep_partition_state WHERE org_id = %(org_id)s", params)
            flags = conn.execute(
                "DELETE FROM org_feature_flags WHERE org_id = %(org_id)s", params
            ).rowcount
            retention = conn.execute(
                "DELETE FROM dw_org_retention WHERE org_id = %(org_id)s", params
            ).rowcount
        # The org's search indexes (docs/adr/0134) go after, in a short transaction: DROP
        # INDEX locks the whole table, which must not last as long as the deletes above.
        self._indexes.drop_org(org_id)
        return ErasedOrg(
            events_deleted=events,
            windows_deleted=windows,
            partitions=partitions,
            models=models,
            flags_deleted=flags,
            retention_deleted=retention > 0,
        )

    def _erase(
        self, org_id: str, condition: sql.Composable, params: dict[str, Any]
    ) -> ErasureReport:
        statement = _ERASE_EVENTS.format(condition=condition)
        with self._db.connection() as conn:
            self._lock(conn, org_id)
            row = conn.execute(statement, {"org_id": org_id, **params}).fetchone()
            assert row is not None
            # An org left below its search index's drop line (docs/adr/0141).
            if row["windows"]:
                self._indexes.retire_shrunk(conn, org_id)
        return ErasureReport(
            events_deleted=cast(int, row["events"]), windows_deleted=cast(int, row["windows"])
        )

    @staticmethod
    def _lock(conn: Connection[Any], org_id: str) -> None:
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (RETENTION_LOCK_CLASS, org_id)
        )
