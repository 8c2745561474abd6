"""LISTEN for the ingest trigger's notifications, to wake the sweep when events arrive.

With several replicas, only one listens: the holder of a session advisory lock taken on the
listening connection itself (docs/adr/0062). The others wait for the lock, trying every
`LEADER_RETRY_SECONDS`; when the holder dies or its connection drops, PostgreSQL releases
the lock with the session and one of them starts listening (and sweeps once for whatever it
could not hear). Every replica still sweeps on its interval and on request.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import psycopg

from memory.infrastructure.history.locks import INGEST_LISTENER_LOCK_CLASS
from memory.infrastructure.postgres.database import DEFAULT_TIMEOUT_SECONDS, connect_timeout

INGEST_CHANNEL = "memory_history_ingest"
# A standby listener tries for the lock this often: how long ingests go unheard (and the
# sweep waits for its interval) after the listening replica dies.
LEADER_RETRY_SECONDS = 1.0


async def listen_for_ingest(
    url: str,
    on_ingest: Callable[[str], None],
    *,
    on_listening: Callable[[], None] | None = None,
    on_standby: Callable[[], None] | None = None,
    connect_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    leader_retry_seconds: float = LEADER_RETRY_SECONDS,
) -> None:
    """Once this process holds the listener lock, call `on_ingest(org_id)` for each
    notification until cancelled; until then call `on_standby()` after each failed try.
    `url` must reach PostgreSQL directly (a session: LISTEN and the lock). Connection errors
    propagate (the caller restarts it; a missed wake-up only delays the sweep to its next
    periodic pass)."""
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=connect_timeout(connect_seconds)
    )
    async with conn:
        while True:
            cursor = await conn.execute(
                "SELECT pg_try_advisory_lock(%s, 0)", (INGEST_LISTENER_LOCK_CLASS,)
            )
            row = await cursor.fetchone()
            if row is not None and row[0]:
                break
            if on_standby is not None:
                on_standby()
            await anyio.sleep(leader_retry_seconds)
        await conn.execute(f"LISTEN {INGEST_CHANNEL}")
        if on_listening is not None:
            on_listening()
        async for notification in conn.notifies():
            on_ingest(notification.payload)
