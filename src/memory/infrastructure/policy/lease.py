"""One projector per model across all processes: a session-level advisory lock, held on a
dedicated connection (on the database's direct URL: a transaction pooler would hand the
lock's session to someone else) for as long as the projector runs.

When the holder dies (`kill -9`) or its connection drops, PostgreSQL ends the session and
releases the lock with it; a standby's next `try_acquire` gets it. A standby keeps its
connection between tries, so trying every second costs one round trip, not a connection.
"""

from __future__ import annotations

import contextlib

import psycopg

from memory.infrastructure.policy.model_objects import ModelObjects
from memory.infrastructure.postgres.database import DEFAULT_TIMEOUT_SECONDS, connect_timeout


class ProjectionLease:
    def __init__(
        self, database_url: str, model_id: str, *, connect_seconds: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self._url = database_url
        self._connect_timeout = connect_timeout(connect_seconds)
        self._key = ModelObjects(model_id).lease_key
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._held = False
        # Why `alive()` last found the lease gone: what a caller raises its failure from, so
        # that a lease lost to a restart reads as an outage, not as a bug.
        self.lost_because: psycopg.Error | None = None

    @property
    def held(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        if self._held:
            return True
        if self._conn is not None:
            try:
                return self._try(self._conn)
            except psycopg.OperationalError:
                # A standby's connection that died (the server restarted): try a new one.
                self._close()
        self._conn = psycopg.connect(
            self._url, autocommit=True, connect_timeout=self._connect_timeout
        )
        try:
            return self._try(self._conn)
        except psycopg.Error:
            self._close()
            raise

    def _try(self, conn: psycopg.Connection[tuple[object, ...]]) -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
        self._held = bool(row and row[0])
        return self._held

    def alive(self) -> bool:
        """False if the connection holding the lock is gone (and with it the lock)."""
        if not self._held or self._conn is None:
            return False
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error as exc:
            self.lost_because = exc
            return False
        return True

    def release(self) -> None:
        """Give the lock up (if held) and close the connection."""
        if self._conn is not None and self._held:
            # If the session is gone, so is the lock.
            with contextlib.suppress(psycopg.Error):
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        self._close()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        self._held = False
        if conn is not None:
            conn.close()
