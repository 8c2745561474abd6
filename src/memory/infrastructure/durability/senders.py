"""The senders of an org's stored events: how a restore finds the person a journaled sender
erasure names by digest only (docs/adr/0106)."""

from __future__ import annotations

from memory.infrastructure.postgres.database import Database


class PostgresSenders:
    """`SenderDirectory` on the history tables. Run only by `memory db restore`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def senders(self, org_id: str) -> list[str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT sender FROM dw_chat_events WHERE org_id = %s", (org_id,)
            ).fetchall()
        return [str(row["sender"]) for row in rows]
