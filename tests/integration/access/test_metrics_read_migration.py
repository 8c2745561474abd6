"""Migration 0306: every key that could read /metrics before `metrics:read` existed (an
admin key for every org) keeps that right after the upgrade; no other key gains it."""

from __future__ import annotations

from memory.infrastructure.postgres.database import Database

MIGRATION = "0306_metrics_read_scope.sql"


def _add(database: Database, key_id: str, org_id: str | None, scopes: list[str]) -> None:
    with database.connection() as conn:
        conn.execute(
            "INSERT INTO api_keys (key_id, name, org_id, scopes, secret_sha256)"
            " VALUES (%s, %s, %s, %s, %s)",
            (key_id, key_id, org_id, scopes, key_id.encode()),
        )


def test_every_org_admin_keys_keep_reading_metrics_and_no_other_key_gains_it(
    database: Database,
) -> None:
    _add(database, "all-admin", None, ["history:read", "admin"])
    _add(database, "org-admin", "acme", ["admin"])
    _add(database, "all-reader", None, ["history:read"])
    _add(database, "scraper", None, ["metrics:read"])
    with database.connection() as conn:
        # The keys above existed before the upgrade: run 0306 again as the upgrade would.
        conn.execute("DELETE FROM memory_schema_migrations WHERE name = %s", (MIGRATION,))
    assert database.migrate() == [MIGRATION]
    with database.connection() as conn:
        rows = conn.execute("SELECT key_id, scopes FROM api_keys ORDER BY key_id").fetchall()
    assert {row["key_id"]: row["scopes"] for row in rows} == {
        "all-admin": ["history:read", "admin", "metrics:read"],
        "all-reader": ["history:read"],
        "org-admin": ["admin"],
        "scraper": ["metrics:read"],
    }
