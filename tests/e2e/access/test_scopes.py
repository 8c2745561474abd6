"""Every row of the scope table over HTTP: each scope against each endpoint family, for the
key's own org and another one, and revoked keys and requests without a key
(docs/security.md, "Who may do what")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.e2e.access.conftest import FullApp, Running

from memory.application.errors import DatabaseUnavailable
from memory.infrastructure.access.key_store import PostgresKeyStore

pytestmark = pytest.mark.anyio

OWN, OTHER, NOWHERE = "acme", "globex", "no-such-org"
SCOPES = [
    "history:read",
    "history:write",
    "policies:read",
    "policies:write",
    "admin",
    "metrics:read",
]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any = None

    def at(self, org: str) -> Call:
        return Call(self.method, self.path.replace("{org}", org), self.body)

    async def send(self, client: httpx.AsyncClient) -> httpx.Response:
        return await client.request(self.method, self.path, json=self.body)


def _event(event_id: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "provider": "slack",
        "channel_id": "C1",
        "sender": "u1",
        "text": "how do I reset my password?",
        "occurred_at": datetime.now(UTC).isoformat(),
    }


@dataclass(frozen=True)
class Family:
    """Endpoints that need the same scope and treat orgs the same way: `per_org` ones act on
    the org in the path; `every_org` ones need a key for every org."""

    name: str
    scope: str
    calls: tuple[Call, ...]
    per_org: bool = False
    every_org: bool = False


FAMILIES = [
    Family(
        "history reads",
        "history:read",
        (
            Call("GET", "/v1/orgs/{org}/history/search?q=password"),
            Call("GET", "/v1/orgs/{org}/sweep"),
            Call("GET", "/v1/orgs/{org}/retention"),
            Call("GET", "/v1/orgs/{org}/feature-flags"),
            Call("GET", "/v1/orgs/{org}/activity"),
        ),
        per_org=True,
    ),
    # The service's last hour counts every org's searches (docs/adr/0122).
    Family("service activity", "history:read", (Call("GET", "/v1/activity"),), every_org=True),
    # Any key with the scope; what it lists depends on the key (below).
    Family("org directory", "history:read", (Call("GET", "/v1/orgs"),)),
    Family(
        "history ingest",
        "history:write",
        (Call("POST", "/v1/orgs/{org}/chat-events", {"events": [_event("e-1")]}),),
        per_org=True,
    ),
    Family(
        "policy reads",
        "policies:read",
        (
            Call("POST", "/v1/policies/search", {"query": "password"}),
            Call("GET", "/v1/policies/seed/versions"),
        ),
    ),
    Family(
        "policy writes",
        "policies:write",
        (
            Call("PUT", "/v1/policies/seed", {"content": "Rotate passwords every 60 days."}),
            Call("POST", "/v1/policies", {"policy_id": "new", "content": "Lock your screen."}),
        ),
    ),
    Family(
        "org administration",
        "admin",
        (
            Call("PUT", "/v1/orgs/{org}/retention", {"days": 45}),
            Call(
                "PUT",
                "/v1/orgs/{org}/feature-flags/digital_worker_semantic_search",
                {"enabled": True},
            ),
        ),
        per_org=True,
    ),
    Family(
        "global administration",
        "admin",
        (
            Call("PUT", "/v1/feature-flags/digital_worker_semantic_search", {"enabled": True}),
            Call("POST", "/v1/sweep", {"org_id": OWN}),
            Call("POST", "/v1/purge", {"org_id": OWN}),
            Call("GET", "/v1/audit"),
        ),
        every_org=True,
    ),
    # A scraper's key: /metrics and nothing else (ADR 0108); admin alone no longer reads it.
    Family("metrics", "metrics:read", (Call("GET", "/metrics"),), every_org=True),
    Family("key management", "admin", (Call("GET", "/v1/api-keys"),)),
]


def _allowed(family: Family, scope: str, key_org: str | None, target_org: str) -> bool:
    if scope != family.scope:
        return False
    if family.every_org and key_org is not None:
        return False
    return not (family.per_org and key_org is not None and key_org != target_org)


async def _seed(running: Running) -> None:
    stored = await running.admin.post(
        "/v1/policies", json={"policy_id": "seed", "content": "Reset passwords every 90 days."}
    )
    assert stored.status_code == 201, stored.text
    # An org's key writes its org's own policies (docs/adr/0102): the seed is there too.
    own = await running.admin.post(
        "/v1/policies",
        params={"namespace": f"org:{OWN}"},
        json={"policy_id": "seed", "content": "Reset passwords every 30 days."},
    )
    assert own.status_code == 201, own.text
    for org in (OWN, OTHER):
        ingested = await running.admin.post(
            f"/v1/orgs/{org}/chat-events", json={"events": [_event(f"seed-{org}")]}
        )
        assert ingested.status_code == 201, ingested.text


@pytest.mark.parametrize("key_org", [OWN, None], ids=["org-key", "all-orgs-key"])
@pytest.mark.parametrize("scope", SCOPES)
async def test_each_scope_against_each_endpoint_family(
    full_app: FullApp, scope: str, key_org: str | None
) -> None:
    async with full_app() as running:
        await _seed(running)
        secret = await running.new_key(f"{scope} key", key_org, scope)
        async with running.client(secret) as client:
            for family in FAMILIES:
                targets = [OWN, OTHER] if family.per_org else [OWN]
                for target in targets:
                    for call in family.calls:
                        response = await call.at(target).send(client)
                        where = f"{scope} key of {key_org} -> {family.name} {call.at(target)}"
                        if _allowed(family, scope, key_org, target):
                            assert response.status_code < 400, f"{where}: {response.text}"
                        else:
                            assert response.status_code == 403, f"{where}: {response.text}"
                            assert response.json()["error"]["code"] == "forbidden"


async def test_another_org_is_refused_without_saying_whether_it_exists(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        await _seed(running)
        secret = await running.new_key("reader", OWN, "history:read")
        async with running.client(secret) as client:
            existing = await client.get(f"/v1/orgs/{OTHER}/history/search?q=password")
            unknown = await client.get(f"/v1/orgs/{NOWHERE}/history/search?q=password")
    assert existing.status_code == unknown.status_code == 403
    assert existing.json() == unknown.json()
    assert OTHER not in existing.text


async def test_the_org_directory_lists_only_the_orgs_a_key_covers(full_app: FullApp) -> None:
    async with full_app() as running:
        await _seed(running)
        retention = await running.admin.put(f"/v1/orgs/{NOWHERE}/retention", json={"days": 9})
        assert retention.status_code == 200
        own = await running.new_key("own reader", OWN, "history:read")
        everything = await running.new_key("all reader", None, "history:read")
        async with running.client(own) as client:
            mine = (await client.get("/v1/orgs")).json()
            # A prefix or cursor cannot widen it.
            others = (await client.get("/v1/orgs", params={"prefix": "g"})).json()
        async with running.client(everything) as client:
            every = (await client.get("/v1/orgs")).json()
    assert [o["org_id"] for o in mine["orgs"]] == [OWN]
    assert mine["next_cursor"] is None
    assert others["orgs"] == []
    assert [o["org_id"] for o in every["orgs"]] == sorted([OWN, OTHER, NOWHERE])


async def test_no_key_and_bad_keys_are_401_with_a_bearer_challenge(full_app: FullApp) -> None:
    async with full_app() as running:
        await _seed(running)
        secret = await running.new_key("writer", OWN, "history:write")
        listed = await running.admin.get("/v1/api-keys")
        key_id = next(k["key_id"] for k in listed.json()["keys"] if k["name"] == "writer")
        revoked = await running.admin.delete(f"/v1/api-keys/{key_id}")
        assert revoked.status_code == 204
        clients = {
            "no key": running.client(None),
            "malformed": running.client("not-a-key"),
            "unknown": running.client("mem_" + "x" * 43),
            "revoked": running.client(secret),
        }
        for label, client in clients.items():
            async with client:
                for family in FAMILIES:
                    for call in family.calls:
                        response = await call.at(OWN).send(client)
                        where = f"{label} -> {call.at(OWN)}"
                        assert response.status_code == 401, f"{where}: {response.text}"
                        assert response.json()["error"]["code"] == "unauthenticated"
                        assert response.headers["www-authenticate"] == "Bearer"
        async with running.client(None) as anonymous:
            wrong_scheme = await anonymous.get(
                "/v1/orgs/acme/sweep", headers={"Authorization": f"Basic {secret}"}
            )
        assert wrong_scheme.status_code == 401


async def test_key_management_over_http(full_app: FullApp) -> None:
    async with full_app() as running:
        created = await running.admin.post(
            "/v1/api-keys",
            json={"name": "acme admin", "org_id": OWN, "scopes": ["admin", "history:write"]},
        )
        assert created.status_code == 201
        body = created.json()
        assert body["secret"].startswith("mem_") and len(body["secret"]) == 47
        assert body["org_id"] == OWN and body["scopes"] == ["history:write", "admin"]
        assert body["created_by"] == "admin-token"
        assert created.headers["cache-control"] == "no-store"
        listed = (await running.admin.get("/v1/api-keys")).json()["keys"]
        assert [k["name"] for k in listed] == ["acme admin"]
        assert "secret" not in listed[0] and body["secret"] not in str(listed)

        async with running.client(body["secret"]) as org_admin:
            everything = await org_admin.post(
                "/v1/api-keys", json={"name": "all", "scopes": ["history:read"]}
            )
            assert everything.status_code == 403
            own = await org_admin.post(
                "/v1/api-keys", json={"name": "bot", "org_id": OWN, "scopes": ["history:write"]}
            )
            assert own.status_code == 201
            other = await org_admin.post(
                "/v1/api-keys", json={"name": "bot", "org_id": OTHER, "scopes": ["history:read"]}
            )
            assert other.status_code == 403

        bad = await running.admin.post(
            "/v1/api-keys", json={"name": "x", "scopes": ["history:delete"]}
        )
        assert bad.status_code == 422
        assert bad.json()["error"]["details"]["fields"][0]["field"] == "scopes"
        missing = await running.admin.delete("/v1/api-keys/key_0000000000000000")
        assert missing.status_code == 404
        config = await running.admin.delete("/v1/api-keys/admin-token")
        assert config.status_code == 409

        revoked = await running.admin.delete(f"/v1/api-keys/{body['key_id']}")
        assert revoked.status_code == 204
        async with running.client(body["secret"]) as gone:
            assert (await gone.get("/v1/api-keys")).status_code == 401
        listed = (await running.admin.get("/v1/api-keys")).json()["keys"]
        assert next(k for k in listed if k["key_id"] == body["key_id"])["revoked_at"] is not None


async def test_a_key_that_cannot_be_looked_up_is_503_not_a_refusal(
    full_app: FullApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with full_app() as running:
        secret = await running.new_key("reader", OWN, "history:read")

        def down(self: object, digest: bytes) -> None:
            raise DatabaseUnavailable("database unavailable")

        monkeypatch.setattr(PostgresKeyStore, "find", down)
        async with running.client(secret) as client:
            response = await client.get(f"/v1/orgs/{OWN}/sweep")
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
