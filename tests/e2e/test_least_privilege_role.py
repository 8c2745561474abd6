"""The service on an external PostgreSQL as a role with only the grants docs/security.md
lists (issue 17, docs/adr/0101): a login role that owns its database, no superuser, the
`vector` extension created beforehand by an administrator. `memory serve` migrates and
runs every key path on it: keys, ingest, the sweep, history search, policy store, update
and search, erasure, the audit log."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.processes import served_on

from memory.client import ChatEvent, Forbidden, MemoryClient
from memory.infrastructure.postgres.embedded import with_database

SEMANTIC = "digital_worker_semantic_search"


@pytest.fixture
def least_privilege_url(pg_admin_url: str) -> Iterator[str]:
    """What an operator runs once as a superuser, exactly as docs/security.md gives it."""
    role = f"memory_{uuid.uuid4().hex[:12]}"
    password = secrets.token_urlsafe(18)
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(role), sql.Identifier(role)
            )
        )
    with psycopg.connect(with_database(pg_admin_url, role), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    try:
        yield make_conninfo(with_database(pg_admin_url, role), user=role, password=password)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(role))
            )
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_the_key_paths_run_as_a_role_that_is_no_superuser(
    least_privilege_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(least_privilege_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls"
            " FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert row == (False, False, False, False, False)
    now = datetime.now(UTC)
    with (
        served_on(least_privilege_url, tmp_path) as base,
        MemoryClient(base, api_key=TEST_ADMIN_TOKEN) as memory,
    ):
        assert memory.health().status == "ok"
        # Keys: create, list, a bounded grant refused, revoke.
        created = memory.create_api_key("ingest", ["history:write", "history:read"], org_id="acme")
        assert [k.key_id for k in memory.api_keys().keys] == [created.key_id]
        with MemoryClient(base, api_key=created.secret) as ingest_key, pytest.raises(Forbidden):
            ingest_key.create_api_key("more", ["admin"], org_id="acme")
        # Ingest, sweep, search.
        memory.set_global_flag(SEMANTIC, True)
        with MemoryClient(base, api_key=created.secret) as ingest_key:
            receipt = ingest_key.ingest(
                "acme",
                [
                    ChatEvent(
                        event_id=f"m{i}",
                        provider="slack",
                        channel_id="C1",
                        sender="ali",
                        text=f"how can I reset my password, attempt {i}",
                        occurred_at=now - timedelta(hours=2) + timedelta(minutes=i),
                    )
                    for i in range(3)
                ],
            )
            assert receipt.inserted == 3
        assert memory.sweep("acme").windows_embedded == 1
        found = memory.search_history("acme", "password", limit=5)
        assert found.semantic == "on" and found.results
        # Policies: store, update, search (the projector's DDL and writes run as the role).
        memory.store_policy("travel", "EU business travel needs a manager's approval.")
        assert memory.update_policy("travel", "All business travel needs approval.").version == 2
        hits = memory.search_policies("business travel", similarity_threshold=0.0)
        assert [h.policy_id for h in hits.results] == ["travel"]
        # Erasure and the audit log.
        assert memory.erase_events("acme", sender="ali").events_deleted == 3
        memory.revoke_api_key(created.key_id)
        actions = {e.action for e in memory.audit(limit=50).entries}
        assert {"api_key.created", "api_key.revoked", "history.erased"} <= actions
