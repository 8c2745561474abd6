"""Over HTTP, every policy write names the key that made it: in `versions` (from the event
itself) and in `GET /v1/audit` (without the policy's content)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SECRET_WORDS = "zqxcontent"


async def test_versions_and_the_audit_log_name_the_key_of_every_write(policy_app: Any) -> None:
    async with policy_app() as admin:
        created = await admin.post(
            "/v1/api-keys",
            json={"name": "acme editor", "org_id": "acme", "scopes": ["policies:write"]},
        )
        assert created.status_code == 201, created.text
        editor = created.json()
        auth = {"Authorization": f"Bearer {editor['secret']}"}

        stored = await admin.post(
            "/v1/policies",
            headers=auth,
            json={"policy_id": "travel", "content": f"Travel {SECRET_WORDS} needs approval."},
        )
        assert stored.status_code == 201, stored.text
        acme = {"namespace": "org:acme"}
        changed = await admin.put(
            "/v1/policies/travel", params=acme, json={"content": "Travel needs two approvals."}
        )
        assert changed.status_code == 200, changed.text
        retitled = await admin.put(
            "/v1/policies/travel",
            headers=auth,
            json={"content": "Travel needs two approvals.", "metadata": {"title": "Travel"}},
        )
        assert retitled.status_code == 200, retitled.text
        assert (await admin.delete("/v1/policies/travel", params=acme)).status_code == 204

        versions = await admin.get("/v1/policies/travel/versions", params=acme)
        assert versions.status_code == 200, versions.text
        admin_actor = {"key_id": "admin-token", "name": "MEMORY_ADMIN_TOKEN"}
        editor_actor = {"key_id": editor["key_id"], "name": "acme editor"}
        assert [(v["change"], v["actor"]) for v in versions.json()["versions"]] == [
            ("stored", editor_actor),
            ("content", admin_actor),
            ("metadata", editor_actor),
            ("deleted", admin_actor),
        ]

        audit = await admin.get("/v1/audit", params={"org_id": "acme"})
        assert audit.status_code == 200, audit.text
        entries = [e for e in audit.json()["entries"] if e["action"].startswith("policy.")]
        assert [(e["action"], e["actor"], e["target"]) for e in reversed(entries)] == [
            ("policy.stored", editor_actor, "travel"),
            ("policy.updated", admin_actor, "travel"),
            ("policy.updated", editor_actor, "travel"),
            ("policy.deleted", admin_actor, "travel"),
        ]
        assert [e["after"]["version"] for e in reversed(entries)] == [1, 2, 3, 4]
        assert {e["after"]["namespace"] for e in entries} == {"org:acme"}
        assert SECRET_WORDS not in audit.text and "approval" not in audit.text
