"""The audit trail on a real database: an administrative change and its event commit
together or not at all (a failure injected between them, both ways), and the listing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.application.access.key_administration import operator_key
from memory.application.access.service import AccessService
from memory.application.audit.ports import AuditQuery
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.infrastructure.access.key_store import PostgresKeyStore
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database

OPERATOR = operator_key("cli:test")
ACTOR = Actor("key_1", "ops")


class Injected(Exception):
    pass


def _count(database: Database, table: str) -> int:
    with database.connection() as conn:
        row = conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()
    assert row is not None
    return int(row["n"])  # type: ignore[call-overload]


def test_a_key_change_is_recorded_with_who_and_what_never_the_secret(
    database: Database, audit: PostgresAuditTrail
) -> None:
    service = AccessService(PostgresKeyStore(database), audit)
    created = service.create(OPERATOR, "bot", "acme", ["history:read"])
    service.revoke(OPERATOR, created.key.key_id)
    service.revoke(OPERATOR, created.key.key_id)  # already revoked: nothing new
    entries = audit.entries(AuditQuery()).entries
    assert [e.action for e in entries] == ["api_key.revoked", "api_key.created"]
    revoked, made = entries
    assert made.actor == Actor("cli", "cli:test") and made.org_id == "acme"
    assert made.target == created.key.key_id and made.before is None
    assert made.after == {
        "name": "bot",
        "org_id": "acme",
        "scopes": ["history:read"],
        "expires_at": None,
    }
    assert revoked.before == {"revoked_at": None} and revoked.after["revoked_at"] is not None
    with database.connection() as conn:
        events = str(conn.execute("SELECT state FROM auditlog_events").fetchall())
    assert created.secret not in events and created.secret.encode().hex() not in events


def test_a_failure_after_the_change_before_its_record_leaves_neither(
    database: Database, audit: PostgresAuditTrail, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = AccessService(PostgresKeyStore(database), audit)

    def fail(*args: object) -> None:
        raise Injected

    monkeypatch.setattr(audit, "_append", fail)
    with pytest.raises(Injected):
        service.create(OPERATOR, "bot", None, ["admin"])
    assert _count(database, "api_keys") == 0
    assert _count(database, "audit_log") == 0


def test_a_change_that_fails_after_writing_records_nothing(
    database: Database, audit: PostgresAuditTrail
) -> None:
    store = PostgresKeyStore(database)
    service = AccessService(store, audit)
    created = service.create(OPERATOR, "bot", None, ["admin"])

    def change() -> tuple[None, AuditedChange]:
        store.revoke(created.key.key_id, created.key.created_at + timedelta(seconds=1))
        raise Injected

    with pytest.raises(Injected):
        audit.record(ACTOR, Action.KEY_REVOKED, change)
    key = store.get(created.key.key_id)
    assert key is not None and not key.revoked
    assert [e.action for e in audit.entries(AuditQuery()).entries] == ["api_key.created"]


def test_listing_is_newest_first_with_filters_and_keyset_pages(
    database: Database, audit: PostgresAuditTrail
) -> None:
    for i in range(5):
        org = "acme" if i % 2 == 0 else "globex"
        audit.record(
            ACTOR,
            Action.RETENTION_SET,
            lambda i=i, org=org: (None, AuditedChange(f"t{i}", i, i + 1, org_id=org)),  # type: ignore[misc]
        )
    everything = audit.entries(AuditQuery()).entries
    assert [e.target for e in everything] == ["t4", "t3", "t2", "t1", "t0"]
    assert everything[0].before == 4 and everything[0].after == 5

    first = audit.entries(AuditQuery(limit=2))
    assert [e.target for e in first.entries] == ["t4", "t3"]
    assert first.next_before_id is not None
    second = audit.entries(AuditQuery(limit=2, before_id=first.next_before_id))
    assert [e.target for e in second.entries] == ["t2", "t1"]
    last = audit.entries(AuditQuery(limit=2, before_id=second.next_before_id))
    assert [e.target for e in last.entries] == ["t0"] and last.next_before_id is None

    acme = audit.entries(AuditQuery(org_id="acme")).entries
    assert [e.target for e in acme] == ["t4", "t2", "t0"]
    middle = everything[2].recorded_at
    assert [e.target for e in audit.entries(AuditQuery(since=middle)).entries] == [
        "t4",
        "t3",
        "t2",
    ]
    assert [e.target for e in audit.entries(AuditQuery(until=middle)).entries] == ["t1", "t0"]


def test_the_last_entry_of_an_action_for_a_target_is_found_behind_any_number_of_newer(
    database: Database, audit: PostgresAuditTrail
) -> None:
    """/healthz's last `model.checked` (ADR 0114): more than 10,000 newer entries (what the
    bounded read of ADR 0114 looked through) and a check of another model after it."""

    def checked(model: str, passed: bool) -> tuple[None, AuditedChange]:
        return None, AuditedChange(model, None, {"passed": passed})

    audit.record(ACTOR, Action.MODEL_CHECKED, lambda: checked("local:e5", True))
    audit.record(ACTOR, Action.MODEL_CHECKED, lambda: checked("ollama:bge", False))
    newer = [AuditedChange(f"key_{n}", None, {"revoked_at": "now"}) for n in range(10_001)]
    audit.record_many(ACTOR, Action.KEY_REVOKED, lambda: (None, newer))

    found = audit.latest(Action.MODEL_CHECKED, "local:e5")
    assert found is not None and found.target == "local:e5" and found.after == {"passed": True}
    other = audit.latest(Action.MODEL_CHECKED, "ollama:bge")
    assert other is not None and other.after == {"passed": False}
    assert audit.latest(Action.MODEL_CHECKED, "hash:64") is None
    audit.record(ACTOR, Action.MODEL_CHECKED, lambda: checked("local:e5", False))
    newest = audit.latest(Action.MODEL_CHECKED, "local:e5")
    assert newest is not None and newest.after == {"passed": False}


def test_an_entry_written_before_the_target_column_is_still_found(
    database: Database, audit: PostgresAuditTrail
) -> None:
    audit.record(
        ACTOR,
        Action.MODEL_CHECKED,
        lambda: (None, AuditedChange("local:e5", None, {"passed": True})),
    )
    with database.connection() as conn:
        conn.execute("UPDATE audit_log SET target = NULL")  # as migration 0307 left it
    found = audit.latest(Action.MODEL_CHECKED, "local:e5")
    assert found is not None and found.after == {"passed": True}
    assert audit.latest(Action.MODEL_CHECKED, "hash:64") is None
