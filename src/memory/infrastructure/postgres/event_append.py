"""Events appended to a library event store on a connection whose transaction the caller
holds, so that they commit together with other work of that transaction (an administrative
change and its audit event, a policy deletion and its audit event; docs/adr/0058, 0079).

The library's recorders open their own connections. These are the recorder's own statements
in its order: the table lock that keeps notification ids in commit order, the NOTIFY that
wakes its subscribers, the INSERT returning the notification ids. They are never prepared:
the pool may be a transaction-pooling PgBouncer, where a prepared statement does not outlive
the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Connection, sql
from psycopg.types.composite import register_composite


class EventAppender:
    """Appends to `recorder`'s table. Reads the recorder's composite type once, at
    construction, so the recorder's own pool may be closed afterwards."""

    def __init__(self, recorder: PostgresApplicationRecorder) -> None:
        self._recorder = recorder
        self._type = recorder.datastore.psycopg_type_adapters[recorder.stored_event_type_name]
        self._notify = sql.SQL("NOTIFY {}").format(sql.Identifier(recorder.channel_name))

    def append(self, conn: Connection[Any], events: Sequence[StoredEvent]) -> list[int]:
        """Insert `events` in `conn`'s transaction; their notification ids. A version that
        exists already raises psycopg's `UniqueViolation` (the caller's savepoint undoes it)."""
        if conn.adapters.types.get(self._type.oid) is None:
            register_composite(self._type, conn)
        with conn.cursor() as curs:
            for statement in self._recorder.lock_table_statements:
                curs.execute(statement)
            curs.execute(self._notify)
            rows = [
                self._recorder.construct_pg_stored_event(
                    e.originator_id, e.originator_version, e.topic, e.state
                )
                for e in events
            ]
            curs.execute(self._recorder.insert_events_statement, (rows,))
            return [int(_notification_id(row)) for row in curs.fetchall()]


def _notification_id(row: Any) -> Any:
    return row["notification_id"] if isinstance(row, dict) else row[0]
