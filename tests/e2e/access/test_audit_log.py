"""The audit log over HTTP: every administrative change is in it (who, what, before and
after, never chat text), listed newest first with filters and pages; a change and its
record commit together or not at all, with a failure injected between them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.access.conftest import FullApp

from memory.domain.history.feature_flags import GlobalState
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.history.feature_flags import PostgresFeatureFlags
from memory.infrastructure.history.retention import PostgresRetention

pytestmark = pytest.mark.anyio

SEMANTIC = "digital_worker_semantic_search"
CHAT_TEXT = "my secret salary question, please keep it private"


class Injected(Exception):
    pass


def _event() -> dict[str, Any]:
    return {
        "event_id": "e-1",
        "provider": "slack",
        "channel_id": "C1",
        "sender": "u1",
        "text": CHAT_TEXT,
        "occurred_at": datetime.now(UTC).isoformat(),
    }


async def test_every_administrative_change_is_listed_newest_first(full_app: FullApp) -> None:
    async with full_app() as running:
        admin = running.admin
        await admin.post("/v1/orgs/acme/chat-events", json={"events": [_event()]})
        assert (await admin.put(f"/v1/feature-flags/{SEMANTIC}", json={"enabled": True})).is_success
        org_flag = f"/v1/orgs/acme/feature-flags/{SEMANTIC}"
        assert (await admin.put(org_flag, json={"enabled": False})).is_success
        assert (await admin.delete(org_flag)).is_success
        assert (await admin.put("/v1/orgs/acme/retention", json={"days": 7})).is_success
        assert (await admin.post("/v1/purge", json={"org_id": "acme"})).is_success
        assert (await admin.post("/v1/sweep", json={"org_id": "acme"})).is_success
        created = await admin.post(
            "/v1/api-keys", json={"name": "globex admin", "org_id": "globex", "scopes": ["admin"]}
        )
        key = created.json()
        assert (await admin.delete(f"/v1/api-keys/{key['key_id']}")).status_code == 204
        # Reads and refused changes record nothing.
        await admin.get("/v1/orgs/acme/retention")
        assert (await admin.put("/v1/orgs/acme/retention", json={"days": 0})).status_code == 422
        assert (
            await admin.put("/v1/feature-flags/nope", json={"enabled": True})
        ).status_code == 404

        listed = await admin.get("/v1/audit")
        assert listed.status_code == 200
        entries = listed.json()["entries"]
        assert [e["action"] for e in entries] == [
            "api_key.revoked",
            "api_key.created",
            "sweep.triggered",
            "purge.run",
            "retention.set",
            "feature_flag.org.set",
            "feature_flag.org.set",
            "feature_flag.global.set",
        ]
        assert all(
            e["actor"] == {"key_id": "admin-token", "name": "MEMORY_ADMIN_TOKEN"} for e in entries
        )
        by_action = {e["action"]: e for e in reversed(entries)}
        assert by_action["feature_flag.global.set"]["before"] is None
        assert by_action["feature_flag.global.set"]["after"] is True
        removed, disabled = entries[5], entries[6]
        assert (disabled["before"], disabled["after"], disabled["org_id"]) == (None, False, "acme")
        assert (removed["before"], removed["after"]) == (False, None)
        retention = by_action["retention.set"]
        assert retention["before"] == {"days": 30, "default": True}
        assert retention["after"] == {"days": 7, "default": False}
        assert by_action["purge.run"]["org_id"] == "acme"
        assert by_action["api_key.created"]["after"] == {
            "name": "globex admin",
            "org_id": "globex",
            "scopes": ["admin"],
            "expires_at": None,
        }
        assert CHAT_TEXT not in listed.text and key["secret"] not in listed.text

        acme = (await admin.get("/v1/audit", params={"org_id": "acme"})).json()["entries"]
        assert {e["org_id"] for e in acme} == {"acme"} and len(acme) == 5
        first = (await admin.get("/v1/audit", params={"limit": 3})).json()
        second = (
            await admin.get("/v1/audit", params={"limit": 3, "cursor": first["next_cursor"]})
        ).json()
        assert [e["id"] for e in first["entries"] + second["entries"]] == [
            e["id"] for e in entries[:6]
        ]
        since = (await admin.get("/v1/audit", params={"since": entries[1]["recorded_at"]})).json()
        assert [e["id"] for e in since["entries"]] == [entries[0]["id"], entries[1]["id"]]
        bad = await admin.get("/v1/audit", params={"limit": 0})
        assert bad.status_code == 422


async def test_an_org_admin_changes_its_own_org_under_its_own_name(full_app: FullApp) -> None:
    async with full_app() as running:
        secret = await running.new_key("acme ops", "acme", "admin")
        async with running.client(secret) as org_admin:
            assert (await org_admin.put("/v1/orgs/acme/retention", json={"days": 14})).is_success
            refused = await org_admin.put("/v1/orgs/globex/retention", json={"days": 14})
            assert refused.status_code == 403
            assert (await org_admin.get("/v1/audit")).status_code == 403
        entries = (await running.admin.get("/v1/audit")).json()["entries"]
    assert entries[0]["action"] == "retention.set" and entries[0]["org_id"] == "acme"
    assert entries[0]["actor"]["name"] == "acme ops"
    assert entries[0]["actor"]["key_id"].startswith("key_")
    assert len(entries) == 2  # and the creation of the key


def fail_between_the_change_and_its_record(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise Injected

    monkeypatch.setattr(PostgresAuditTrail, "_append", fail)


def fail_after_writing_the_change(monkeypatch: pytest.MonkeyPatch) -> None:
    set_days, set_global = PostgresRetention.set_days, PostgresFeatureFlags.set_global

    def days_then_fail(self: PostgresRetention, org_id: str, days: int) -> None:
        set_days(self, org_id, days)
        raise Injected

    def flag_then_fail(self: PostgresFeatureFlags, flag: str, state: GlobalState) -> None:
        set_global(self, flag, state)
        raise Injected

    monkeypatch.setattr(PostgresRetention, "set_days", days_then_fail)
    monkeypatch.setattr(PostgresFeatureFlags, "set_global", flag_then_fail)


@pytest.mark.parametrize(
    "inject_failure", [fail_between_the_change_and_its_record, fail_after_writing_the_change]
)
async def test_a_change_that_fails_before_its_record_commits_leaves_nothing(
    full_app: FullApp,
    monkeypatch: pytest.MonkeyPatch,
    inject_failure: Callable[[pytest.MonkeyPatch], None],
) -> None:
    async with (
        full_app() as running,
        running.client(TEST_ADMIN_TOKEN, raise_app_exceptions=False) as client,
    ):
        inject_failure(monkeypatch)
        assert (await client.put("/v1/orgs/acme/retention", json={"days": 7})).status_code == 500
        flag = await client.put(f"/v1/feature-flags/{SEMANTIC}", json={"enabled": True})
        assert flag.status_code == 500
        monkeypatch.undo()
        retention = (await client.get("/v1/orgs/acme/retention")).json()
        flags = (await client.get(f"/v1/feature-flags/{SEMANTIC}")).json()
        entries = (await client.get("/v1/audit")).json()["entries"]
    assert retention["days"] == 30 and retention["default"] is True
    assert flags["enabled"] is False and flags["set"] is False
    assert entries == []


async def test_erasures_and_a_policy_deletion_are_listed_with_the_key_that_made_them(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        admin = running.admin
        secret = await running.new_key("eraser", "acme", "admin", "policies:write")
        async with running.client(secret) as eraser:
            await admin.post("/v1/orgs/acme/chat-events", json={"events": [_event()]})
            erased = await eraser.request(
                "DELETE", "/v1/orgs/acme/chat-events", json={"sender": "u1"}
            )
            assert erased.json() == {"events_deleted": 1, "windows_deleted": 0}
            stored = await eraser.post(
                "/v1/policies", json={"policy_id": "p1", "content": "Keep receipts."}
            )
            assert stored.status_code == 201, stored.text
            assert (await eraser.delete("/v1/policies/p1")).status_code == 204
        assert (await admin.delete("/v1/orgs/globex")).status_code == 200

        entries = (await admin.get("/v1/audit")).json()["entries"]
        org, policy, stored, history = entries[:4]
        # The eraser's key is acme's: its policy is acme's own (docs/adr/0102).
        assert (stored["action"], stored["org_id"], stored["actor"]["name"]) == (
            "policy.stored",
            "acme",
            "eraser",
        )
        assert (org["action"], org["org_id"], org["actor"]["key_id"]) == (
            "org.erased",
            "globex",
            "admin-token",
        )
        assert (policy["action"], policy["target"], policy["actor"]["name"]) == (
            "policy.deleted",
            "p1",
            "eraser",
        )
        assert (history["action"], history["org_id"], history["actor"]["name"]) == (
            "history.erased",
            "acme",
            "eraser",
        )
        assert history["after"]["by"] == "sender" and "u1" not in str(history)


async def test_a_deletion_or_erasure_whose_record_fails_removes_nothing(
    full_app: FullApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `memory serve` wires them: the policy log and the audit trail share one database
    handle, so the `Deleted` event joins the audit transaction and rolls back with it."""

    def fail(*args: object) -> None:
        raise Injected

    async with (
        full_app() as running,
        running.client(TEST_ADMIN_TOKEN, raise_app_exceptions=False) as client,
    ):
        await client.post("/v1/orgs/acme/chat-events", json={"events": [_event()]})
        stored = await client.post("/v1/policies", json={"policy_id": "p1", "content": "Keep."})
        assert stored.status_code == 201, stored.text
        monkeypatch.setattr(PostgresAuditTrail, "_append", fail)
        assert (await client.delete("/v1/policies/p1")).status_code == 500
        erase = await client.request("DELETE", "/v1/orgs/acme/chat-events", json={"sender": "u1"})
        assert erase.status_code == 500
        assert (await client.delete("/v1/orgs/acme")).status_code == 500
        monkeypatch.undo()
        policy = await client.get("/v1/policies/p1")
        versions = (await client.get("/v1/policies/p1/versions")).json()["versions"]
        found = await client.get("/v1/orgs/acme/history/search", params={"q": "salary"})
        entries = (await client.get("/v1/audit")).json()["entries"]
    assert policy.status_code == 200 and [v["change"] for v in versions] == ["stored"]
    assert [r["event_id"] for r in found.json()["results"]] == ["e-1"]
    assert [e["action"] for e in entries] == ["policy.stored"]  # before the failures only
