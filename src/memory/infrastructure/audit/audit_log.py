"""The audit trail: `AdminAction` events in the event store (the eventsourcing library's
table `auditlog_events`), each written in the transaction of the change it records.

The library's own recorders open their own connections, so a write through them could
commit while the change it describes rolls back (or the reverse). The library's
`ProcessRecorder` solves the same problem for tracking records by doing both inside one
transaction (`_insert_events(curs, ...)`); here the change runs in the service's ambient
transaction (`Database.transaction()`) and the event goes into that same transaction through
the recorder's own statements (table lock for commit-ordered notification ids, NOTIFY,
INSERT), with an index row in `audit_log` for filtering (docs/adr/0058).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar, cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import sql
from psycopg.rows import DictRow

from memory.application.audit.ports import AuditEntry, AuditPage, AuditQuery
from memory.domain.audit.admin_action import Action, Actor, AdminAction, AuditedChange
from memory.infrastructure.postgres.database import Connection, Database
from memory.infrastructure.postgres.event_append import EventAppender
from memory.infrastructure.postgres.event_store import EventStoreConnection
from memory.infrastructure.postgres.keyset import NewestFirst

T = TypeVar("T")
AUDIT_APPLICATION = "AuditLog"
# Entries of one action written before audit_log had a target column (migration 0307) that
# `latest` decodes at most, newest first, when no entry with the column matches.
LEGACY_TARGET_LOOKBACK = 1_000


class AuditLogApplication(Application[UUID]):
    """Its name makes the library's table `auditlog_events`."""

    name = AUDIT_APPLICATION


class PostgresAuditTrail:
    """`AuditTrail` on the service's database."""

    def __init__(self, database: Database) -> None:
        self._db = database
        # Constructing the application creates the event table (under the migration lock,
        # as for the sweep's watermarks) and reads its composite type; after that the
        # library's own pool is not needed: every read and write runs on the service's.
        with database.migration_lock():
            env = EventStoreConnection.for_database(database).env(AUDIT_APPLICATION)
            app = AuditLogApplication(env=env)
        recorder = app.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        self._appender = EventAppender(recorder)
        self._mapper = app.mapper
        recorder.datastore.close()
        self._events_table = sql.Identifier(recorder.events_table_name)

    def record(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, AuditedChange]]
    ) -> T:
        with self._db.transaction() as conn:
            result, audited = change()
            self._append(conn, [AdminAction.record(actor, action, audited)])
        return result

    def record_many(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, list[AuditedChange]]]
    ) -> T:
        with self._db.transaction() as conn:
            result, audited = change()
            if audited:
                self._append(conn, [AdminAction.record(actor, action, a) for a in audited])
        return result

    def _append(self, conn: Connection, entries: list[AdminAction]) -> None:
        """One append (one table lock, one NOTIFY) and one index insert for all of them."""
        stored = [
            self._mapper.to_stored_event(e) for entry in entries for e in entry.collect_events()
        ]
        notification_ids = self._appender.append(conn, stored)
        with conn.cursor() as curs:
            curs.executemany(
                "INSERT INTO audit_log (notification_id, originator_id, recorded_at, org_id,"
                " action, target) VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (
                        notification_id,
                        entry.id,
                        entry.created_on,
                        entry.org_id,
                        entry.action,
                        entry.target,
                    )
                    for notification_id, entry in zip(notification_ids, entries, strict=True)
                ],
            )

    def entries(self, query: AuditQuery) -> AuditPage:
        keyset = NewestFirst(["a.notification_id"], query.limit)
        keyset.where("a.recorded_at >= %(since)s", since=query.since)
        keyset.where("a.recorded_at < %(until)s", until=query.until)
        keyset.where("a.org_id = %(org_id)s", org_id=query.org_id)
        keyset.after(None if query.before_id is None else [query.before_id])
        statement = keyset.statement(
            sql.SQL(
                "SELECT e.notification_id, e.originator_id, e.originator_version, e.topic,"
                " e.state FROM audit_log a JOIN {events} e"
                " ON e.notification_id = a.notification_id"
            ).format(events=self._events_table)
        )
        with self._db.connection() as conn:
            rows, more = keyset.page(conn.execute(statement, keyset.params).fetchall())
        entries = [self._entry(cast(DictRow, row)) for row in rows]
        return AuditPage(entries, entries[-1].id if more and entries else None)

    def latest(self, action: Action, target: str) -> AuditEntry | None:
        """The newest entry of `action` for `target` (for /healthz, ADR 0114): one probe of
        the (action, target) index, whatever the log's size. Entries written before
        migration 0307 have no target column; only when none has it are they read, newest
        first, at most `LEGACY_TARGET_LOOKBACK` of the action's, decoding each."""
        select = sql.SQL(
            "SELECT e.notification_id, e.originator_id, e.originator_version, e.topic, e.state"
            " FROM audit_log a JOIN {events} e ON e.notification_id = a.notification_id"
            " WHERE a.action = %(action)s AND a.target {test}"
            " ORDER BY a.notification_id DESC LIMIT %(limit)s"
        )
        params = {"action": action.value, "target": target}
        with self._db.connection() as conn:
            row = conn.execute(
                select.format(events=self._events_table, test=sql.SQL("= %(target)s")),
                {**params, "limit": 1},
            ).fetchone()
            if row is not None:
                return self._entry(cast(DictRow, row))
            legacy = conn.execute(
                select.format(events=self._events_table, test=sql.SQL("IS NULL")),
                {**params, "limit": LEGACY_TARGET_LOOKBACK},
            ).fetchall()
        for row in legacy:
            entry = self._entry(cast(DictRow, row))
            if entry.target == target:
                return entry
        return None

    def _entry(self, row: DictRow) -> AuditEntry:
        event = self._mapper.to_domain_event(
            StoredEvent(
                originator_id=row["originator_id"],
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=bytes(row["state"]),
            )
        )
        assert isinstance(event, AdminAction.Recorded)
        return AuditEntry(
            id=int(row["notification_id"]),
            recorded_at=event.timestamp,
            actor=Actor(event.actor_key_id, event.actor_name),
            action=event.action,
            org_id=event.org_id,
            target=event.target,
            before=json.loads(event.before),
            after=json.loads(event.after),
        )
