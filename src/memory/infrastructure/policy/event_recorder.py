"""The event store's recorder, without psycopg's pipeline mode.

The library's `PostgresApplicationRecorder.insert_events` sends LOCK, NOTIFY and the INSERT
in one pipeline. With psycopg 3.3 the client deadlocks when that pipeline's INSERT carries
more than about 0.5 MB of event state (measured here; psycopg/psycopg#685 describes the same
hang): a large policy, or a batch of stores, would hang its thread forever. This recorder
runs the same statements, in the same transaction and order, as plain round trips (three on
a local socket cost well under a millisecond). See docs/adr/0027.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent

from memory.infrastructure.postgres.event_persistence import (
    OutageAwareApplicationRecorder,
    retry_unless_outage,
)


class PolicyEventRecorder(OutageAwareApplicationRecorder):
    @retry_unless_outage
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            self._insert_events(curs, stored_events, **kwargs)
            if not stored_events:
                return None
            # Locks the table (commit order = notification order), NOTIFYs, inserts.
            self._insert_stored_events(curs, stored_events, **kwargs)
            ids: Sequence[int] | None = self._fetch_ids_after_insert_events(
                curs, stored_events, **kwargs
            )
            return ids
