"""API keys in PostgreSQL (`api_keys`, migrations 0300, 0302 and 0303): digests only, never
secrets."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from memory.domain.access.api_key import ApiKey
from memory.domain.access.scopes import Scope, sorted_scopes
from memory.infrastructure.postgres.database import Database

# Any constant works; it only has to be the same in every process bootstrapping this database.
BOOTSTRAP_LOCK_KEY = 0x6D656D6B6579  # "memkey"
_COLUMNS = (
    "key_id, name, org_id, scopes, created_at, last_used_at, revoked_at, expires_at, created_by"
)
# The keys a key created, and the keys those created, and so on (docs/adr/0098).
_DESCENDANTS = (
    "WITH RECURSIVE made (key_id) AS ("
    " SELECT key_id FROM api_keys WHERE created_by = %(creator)s"
    " UNION"
    " SELECT k.key_id FROM api_keys k JOIN made m ON k.created_by = m.key_id)"
)


class PostgresKeyStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def add(self, key: ApiKey, digest: bytes) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO api_keys"
                " (key_id, name, org_id, scopes, secret_sha256, created_at, expires_at,"
                " created_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    key.key_id,
                    key.name,
                    key.org_id,
                    sorted_scopes(key.scopes),
                    digest,
                    key.created_at,
                    key.expires_at,
                    key.created_by,
                ),
            )

    def find(self, digest: bytes) -> ApiKey | None:
        with self._db.connection() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE secret_sha256 = %s", (digest,)
            ).fetchone()
        return None if row is None else _key(row)

    def get(self, key_id: str) -> ApiKey | None:
        with self._db.connection() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)
            ).fetchone()
        return None if row is None else _key(row)

    def keys(self, org_id: str | None, created_by: str | None = None) -> list[ApiKey]:
        where: list[str] = []
        params: dict[str, object] = {"org": org_id, "creator": created_by}
        if org_id is not None:
            where.append("org_id = %(org)s")
        if created_by is not None:
            where.append("key_id IN (SELECT key_id FROM made)")
        query = (
            (_DESCENDANTS + " " if created_by is not None else "")
            + f"SELECT {_COLUMNS} FROM api_keys"
            + ("" if not where else " WHERE " + " AND ".join(where))
            + " ORDER BY created_at, key_id"
        )
        with self._db.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return [_key(r) for r in rows]

    def revoke(self, key_id: str, at: datetime) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL",
                (at, key_id),
            )

    def touch(self, key_id: str, at: datetime) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE api_keys SET last_used_at = %s"
                " WHERE key_id = %s AND (last_used_at IS NULL OR last_used_at < %s)",
                (at, key_id, at),
            )

    def lock_bootstrap(self) -> None:
        with self._db.connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (BOOTSTRAP_LOCK_KEY,))

    def count(self) -> int:
        with self._db.connection() as conn:
            row = conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()
        assert row is not None
        return int(cast(int, row["n"]))


def _key(row: dict[str, Any]) -> ApiKey:
    return ApiKey(
        key_id=str(row["key_id"]),
        name=str(row["name"]),
        org_id=None if row["org_id"] is None else str(row["org_id"]),
        scopes=frozenset(Scope(s) for s in row["scopes"]),
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        expires_at=row["expires_at"],
        created_by=row["created_by"],
    )
