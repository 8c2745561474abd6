"""One projector per model across all processes: a session-level advisory lock, held on a
dedicated connection for as long as the projector runs."""

from __future__ import annotations

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

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self) -> bool:
        if self._conn is not None:
            return True
        conn = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout)
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
        if not row or not row[0]:
            conn.close()
            return False
        self._conn = conn
        return True

    def alive(self) -> bool:
        """False if the connection holding the lock is gone (and with it the lock)."""
        if self._conn is None:
            return False
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def release(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except psycopg.Error:
            pass  # the session is gone, and the lock with it
        finally:
            conn.close()
