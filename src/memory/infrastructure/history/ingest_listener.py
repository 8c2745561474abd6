"""LISTEN for the ingest trigger's notifications, to wake the sweep when events arrive."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from memory.infrastructure.postgres.database import DEFAULT_TIMEOUT_SECONDS, connect_timeout

INGEST_CHANNEL = "memory_history_ingest"


async def listen_for_ingest(
    url: str,
    on_ingest: Callable[[str], None],
    *,
    on_listening: Callable[[], None] | None = None,
    connect_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Call `on_ingest(org_id)` for each notification until cancelled. Connection errors
    propagate (the caller restarts it; a missed wake-up only delays the sweep to its next
    periodic pass)."""
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=connect_timeout(connect_seconds)
    )
    async with conn:
        await conn.execute(f"LISTEN {INGEST_CHANNEL}")
        if on_listening is not None:
            on_listening()
        async for notification in conn.notifies():
            on_ingest(notification.payload)
