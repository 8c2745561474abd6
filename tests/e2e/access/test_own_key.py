"""`GET /v1/api-keys/self` over HTTP: any valid key learns its own id, name, org, scopes,
expiry and the operations it may call (never its secret or digest); the admin token answers
as configuration; no key, an unknown, revoked or expired key is 401; and the operations it
lists are exactly those the access middleware lets through."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

import pytest
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.access.conftest import FullApp

from memory.contract.responses import OwnApiKeyBody
from memory.domain.access.api_key import secret_digest
from memory.entrypoints.http.openapi import OPERATIONS

pytestmark = pytest.mark.anyio

SELF = "/v1/api-keys/self"
PARAMS = {
    "org_id": "acme",
    "flag": "digital_worker_semantic_search",
    "policy_id": "p",
    "embedding_ref": "e",
    "key_id": "key_0000000000000000",
}


async def test_a_read_only_key_for_one_org_learns_about_itself_and_never_its_secret(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        created = await running.admin.post(
            "/v1/api-keys",
            json={
                "name": "acme reader",
                "org_id": "acme",
                "scopes": ["history:read"],
                "expires_in_days": 30,
            },
        )
        assert created.status_code == 201, created.text
        key = created.json()
        async with running.client(key["secret"]) as reader:
            answer = await reader.get(SELF)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert {k: body[k] for k in ("key_id", "name", "org_id", "scopes")} == {
        "key_id": key["key_id"],
        "name": "acme reader",
        "org_id": "acme",
        "scopes": ["history:read"],
    }
    assert body["source"] == "api_key"
    assert body["created_at"] == key["created_at"] and body["expires_at"] == key["expires_at"]
    assert {"searchHistory", "listOrgs", "getOwnApiKey", "health"} <= set(body["operations"])
    for refused in ("setOrgFlag", "setRetention", "ingestChatEvents", "auditLog", "listApiKeys"):
        assert refused not in body["operations"]
    # Nothing secret: no secret field, neither the secret nor its digest in any form.
    assert "secret" not in body
    digest = secret_digest(key["secret"])
    for leaked in (key["secret"], key["secret"][4:], digest.hex()):
        assert leaked not in answer.text
    OwnApiKeyBody.model_validate(body)


async def test_the_admin_token_answers_as_configuration_with_every_operation(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        answer = await running.admin.get(SELF)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["key_id"] == "admin-token" and body["name"] == "MEMORY_ADMIN_TOKEN"
    assert body["source"] == "admin_token" and body["org_id"] is None
    assert body["scopes"] == [
        "history:read",
        "history:write",
        "policies:read",
        "policies:write",
        "admin",
        "metrics:read",
    ]
    assert body["created_at"] is None and body["expires_at"] is None
    assert body["operations"] == [op.operation_id for op in OPERATIONS]
    assert TEST_ADMIN_TOKEN not in answer.text


async def test_no_key_an_unknown_a_revoked_or_an_expired_key_is_401(full_app: FullApp) -> None:
    async with full_app() as running:
        async with running.client(None) as anonymous:
            missing = await anonymous.get(SELF)
        async with running.client("mem_" + "A" * 43) as unknown:
            unknown_answer = await unknown.get(SELF)
        revoked = await running.new_key("gone", "acme", "policies:read")
        async with running.client(revoked) as client:
            assert (await client.get(SELF)).status_code == 200
            key_id = (await client.get(SELF)).json()["key_id"]
            deleted = await running.admin.delete(f"/v1/api-keys/{key_id}")
            assert deleted.status_code == 204
            revoked_answer = await client.get(SELF)
        # Far enough ahead that a slow create still lands before it.
        expires_at = datetime.now(UTC) + timedelta(seconds=3)
        short = await running.admin.post(
            "/v1/api-keys",
            json={
                "name": "brief",
                "scopes": ["policies:read"],
                "expires_at": expires_at.isoformat(),
            },
        )
        assert short.status_code == 201, short.text
        await asyncio.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()))
        async with running.client(short.json()["secret"]) as expired:
            expired_answer = await expired.get(SELF)
    for refused in (missing, unknown_answer, revoked_answer):
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"]["code"] == "unauthenticated"
        assert refused.headers["www-authenticate"].startswith("Bearer")
    assert expired_answer.status_code == 401
    assert expired_answer.json()["error"]["code"] == "key_expired"


@pytest.mark.parametrize(
    ("org_id", "scopes"),
    [("acme", ["history:read"]), ("acme", ["admin", "policies:read"]), (None, ["history:write"])],
)
async def test_the_operations_listed_are_exactly_those_the_key_is_let_through(
    full_app: FullApp, org_id: str | None, scopes: list[str]
) -> None:
    """Each /v1 operation called on the key's own org (or "acme" for an every-org key):
    a listed one is never refused 401/403, an unlisted one always 403. Bodies are empty, so
    a permitted write stops at its 422 and changes nothing."""
    async with full_app() as running:
        secret = await running.new_key("probe", org_id, *scopes)
        async with running.client(secret) as client:
            listed = set((await client.get(SELF)).json()["operations"])
            answers = {}
            for op in OPERATIONS:
                if not op.path.startswith("/v1/"):
                    continue
                path = re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], op.path)
                body = {} if op.method in ("POST", "PUT") else None
                response = await client.request(op.method, path, json=body)
                answers[op.operation_id] = response.status_code
    for operation, status in answers.items():
        if operation in listed:
            assert status not in (401, 403), (operation, status)
        else:
            assert status == 403, (operation, status)
    assert "getOwnApiKey" in listed


async def test_revoking_the_admin_token_is_the_documented_409(full_app: FullApp) -> None:
    async with full_app() as running:
        answer = await running.admin.delete("/v1/api-keys/admin-token")
        still = await running.admin.get(SELF)
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "conflict"
    assert still.status_code == 200
    revoke = next(op for op in OPERATIONS if op.operation_id == "revokeApiKey")
    assert revoke.errors[409] == ["conflict"]
