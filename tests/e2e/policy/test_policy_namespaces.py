"""Policy namespaces over HTTP (docs/adr/0102): two orgs with their own policies and global
ones; every policy route and search, for every kind of key, sees exactly what the table says,
and a write a key may not make is refused naming the field, changing nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from tests.conftest import TEST_ADMIN_TOKEN

pytestmark = pytest.mark.anyio

TEXT = "travel expenses need approval before booking"
# (namespace, policy id) of every policy the setup stores. "shared" exists twice: a global
# one and acme's own, which shadows it for acme's reads by id.
GLOBAL_POLICIES = {("global", "handbook"), ("global", "shared")}
ACME_POLICIES = {("org:acme", "acme-rule"), ("org:acme", "shared")}
GLOBEX_POLICIES = {("org:globex", "globex-rule")}


@dataclass(frozen=True)
class Keys:
    admin: str
    global_key: str
    acme: str
    globex: str
    acme_reader: str

    def of(self, kind: str) -> str:
        return str(getattr(self, kind))


async def _keys(admin: httpx.AsyncClient) -> Keys:
    async def new(name: str, org: str | None, *scopes: str) -> str:
        created = await admin.post(
            "/v1/api-keys", json={"name": name, "org_id": org, "scopes": list(scopes)}
        )
        assert created.status_code == 201, created.text
        return str(created.json()["secret"])

    rw = ("policies:read", "policies:write")
    return Keys(
        admin=TEST_ADMIN_TOKEN,
        global_key=await new("global writer", None, *rw),
        acme=await new("acme writer", "acme", *rw),
        globex=await new("globex writer", "globex", *rw),
        acme_reader=await new("acme reader", "acme", "policies:read"),
    )


class KeyClient:
    """The app's client, each request sent with one key instead of the admin token."""

    def __init__(self, client: httpx.AsyncClient, secret: str) -> None:
        self._client = client
        self._auth = {"Authorization": f"Bearer {secret}"}

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._client.get(path, headers=self._auth, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._client.post(path, headers=self._auth, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._client.put(path, headers=self._auth, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._client.delete(path, headers=self._auth, **kwargs)


def _client(client: httpx.AsyncClient, secret: str) -> KeyClient:
    return KeyClient(client, secret)


async def _store(
    client: httpx.AsyncClient | KeyClient, policy_id: str, **params: str
) -> dict[str, Any]:
    stored = await client.post(
        "/v1/policies", params=params, json={"policy_id": policy_id, "content": TEXT}
    )
    assert stored.status_code == 201, stored.text
    return dict(stored.json())


async def _seeded(client: httpx.AsyncClient) -> tuple[Keys, dict[tuple[str, str], str]]:
    """The policies of the table, each stored by its owner's key; their embedding refs."""
    keys = await _keys(client)
    refs: dict[tuple[str, str], str] = {}
    writers: list[tuple[httpx.AsyncClient | KeyClient, str, dict[str, str]]] = [
        (client, "handbook", {}),
        (_client(client, keys.global_key), "shared", {"namespace": "global"}),
        (_client(client, keys.acme), "acme-rule", {}),
        (client, "shared", {"namespace": "org:acme"}),
        (_client(client, keys.globex), "globex-rule", {"namespace": "org:globex"}),
    ]
    for writer, policy_id, params in writers:
        receipt = await _store(writer, policy_id, **params)
        refs[(receipt["namespace"], policy_id)] = receipt["embedding_ref"]
    assert set(refs) == GLOBAL_POLICIES | ACME_POLICIES | GLOBEX_POLICIES
    return keys, refs


# What each kind of key sees by default (no `namespace`) and with one named; None: 403.
SEES: dict[tuple[str, str | None], set[tuple[str, str]] | None] = {
    ("admin", None): GLOBAL_POLICIES,
    ("admin", "global"): GLOBAL_POLICIES,
    ("admin", "org:acme"): GLOBAL_POLICIES | ACME_POLICIES,
    ("admin", "org:globex"): GLOBAL_POLICIES | GLOBEX_POLICIES,
    ("global_key", None): GLOBAL_POLICIES,
    ("global_key", "global"): GLOBAL_POLICIES,
    ("global_key", "org:acme"): GLOBAL_POLICIES | ACME_POLICIES,
    ("global_key", "org:globex"): GLOBAL_POLICIES | GLOBEX_POLICIES,
    ("acme", None): GLOBAL_POLICIES | ACME_POLICIES,
    ("acme", "global"): GLOBAL_POLICIES,
    ("acme", "org:acme"): GLOBAL_POLICIES | ACME_POLICIES,
    ("acme", "org:globex"): None,
    ("globex", None): GLOBAL_POLICIES | GLOBEX_POLICIES,
    ("globex", "global"): GLOBAL_POLICIES,
    ("globex", "org:acme"): None,
    ("globex", "org:globex"): GLOBAL_POLICIES | GLOBEX_POLICIES,
    ("acme_reader", None): GLOBAL_POLICIES | ACME_POLICIES,
    ("acme_reader", "global"): GLOBAL_POLICIES,
    ("acme_reader", "org:acme"): GLOBAL_POLICIES | ACME_POLICIES,
    ("acme_reader", "org:globex"): None,
}
ALL = GLOBAL_POLICIES | ACME_POLICIES | GLOBEX_POLICIES


def _params(namespace: str | None) -> dict[str, str]:
    return {} if namespace is None else {"namespace": namespace}


def _by_id(seen: set[tuple[str, str]]) -> dict[str, str]:
    """Which namespace a read by id finds each id in: its own first, then global."""
    found: dict[str, str] = {}
    for namespace, policy_id in sorted(seen, key=lambda p: p[0] == "global"):
        found.setdefault(policy_id, namespace)
    return found


def _forbidden_on_namespace(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "forbidden"
    assert error["details"] == {"field": "namespace"}


async def test_every_read_route_and_search_sees_exactly_its_namespaces(policy_app: Any) -> None:
    async with policy_app() as admin:
        keys, refs = await _seeded(admin)
        for (kind, namespace), seen in SEES.items():
            client = _client(admin, keys.of(kind))
            where = f"{kind} namespace={namespace}"
            if seen is None:
                await _refused_every_read(client, _params(namespace), refs)
            else:
                await _reads_see(client, _params(namespace), seen, refs, where)


async def _reads_see(
    client: KeyClient,
    params: dict[str, str],
    seen: set[tuple[str, str]],
    refs: dict[tuple[str, str], str],
    where: str,
) -> None:
    listed = await client.get("/v1/policies", params=params)
    assert listed.status_code == 200, (where, listed.text)
    assert {(p["namespace"], p["policy_id"]) for p in listed.json()["policies"]} == seen, where
    found = await client.post(
        "/v1/policies/search",
        params=params,
        json={"query": TEXT, "similarity_threshold": 0.5, "limit": 50},
    )
    assert found.status_code == 200, (where, found.text)
    assert {(r["namespace"], r["policy_id"]) for r in found.json()["results"]} == seen, where
    by_id = _by_id(seen)
    for policy_id in ("handbook", "shared", "acme-rule", "globex-rule"):
        got = await client.get(f"/v1/policies/{policy_id}", params=params)
        versions = await client.get(f"/v1/policies/{policy_id}/versions", params=params)
        if policy_id in by_id:
            assert got.status_code == 200, (where, policy_id, got.text)
            assert got.json()["namespace"] == by_id[policy_id], (where, policy_id)
            assert versions.status_code == 200, (where, versions.text)
            assert versions.json()["namespace"] == by_id[policy_id], (where, policy_id)
        else:
            assert got.status_code == 404, (where, policy_id, got.text)
            assert versions.status_code == 404, (where, policy_id)
    for policy, ref in refs.items():
        document = await client.get(f"/v1/embeddings/{ref}", params=params)
        assert document.status_code == (200 if policy in seen else 404), (where, policy)


async def _refused_every_read(
    client: KeyClient, params: dict[str, str], refs: dict[tuple[str, str], str]
) -> None:
    _forbidden_on_namespace(await client.get("/v1/policies", params=params))
    _forbidden_on_namespace(
        await client.post("/v1/policies/search", params=params, json={"query": TEXT})
    )
    for policy_id in ("handbook", "acme-rule", "globex-rule"):
        _forbidden_on_namespace(await client.get(f"/v1/policies/{policy_id}", params=params))
        _forbidden_on_namespace(
            await client.get(f"/v1/policies/{policy_id}/versions", params=params)
        )
    for ref in refs.values():
        _forbidden_on_namespace(await client.get(f"/v1/embeddings/{ref}", params=params))


# Writes: (key kind, namespace named) -> where the write lands, or None when it is refused
# (403 naming `namespace`); every write kind (store, update, delete) follows the same rule.
WRITES: dict[tuple[str, str | None], str | None] = {
    ("admin", None): "global",
    ("admin", "global"): "global",
    ("admin", "org:acme"): "org:acme",
    ("global_key", None): "global",
    ("global_key", "org:globex"): "org:globex",
    ("acme", None): "org:acme",
    ("acme", "org:acme"): "org:acme",
    ("acme", "global"): None,
    ("acme", "org:globex"): None,
    ("globex", None): "org:globex",
    ("globex", "global"): None,
    ("globex", "org:acme"): None,
}


async def test_every_write_goes_where_the_key_may_write_and_nowhere_else(
    policy_app: Any,
) -> None:
    async with policy_app() as admin:
        keys, _ = await _seeded(admin)
        for (kind, namespace), lands in WRITES.items():
            where = f"{kind} namespace={namespace}"
            policy_id = f"w-{kind}-{namespace or 'home'}".replace(":", "-")
            params = _params(namespace)
            client = _client(admin, keys.of(kind))
            before = await _everything(admin)
            stored = await client.post(
                "/v1/policies", params=params, json={"policy_id": policy_id, "content": TEXT}
            )
            if lands is None:
                _forbidden_on_namespace(stored)
                # Nor may it change or delete a policy that namespace has.
                _forbidden_on_namespace(
                    await client.put(
                        "/v1/policies/shared", params=params, json={"content": TEXT + " v2"}
                    )
                )
                _forbidden_on_namespace(await client.delete("/v1/policies/shared", params=params))
                assert await _everything(admin) == before, where  # nothing changed
                continue
            assert stored.status_code == 201, (where, stored.text)
            assert stored.json()["namespace"] == lands, where
            owner = {"namespace": lands}
            got = await admin.get(f"/v1/policies/{policy_id}", params=owner)
            assert got.status_code == 200 and got.json()["namespace"] == lands, where
            changed = await client.put(
                f"/v1/policies/{policy_id}", params=params, json={"content": TEXT + " v2"}
            )
            assert changed.status_code == 200, (where, changed.text)
            assert changed.json()["version"] == 2, where
            deleted = await client.delete(f"/v1/policies/{policy_id}", params=params)
            assert deleted.status_code == 204, (where, deleted.text)
            gone = await admin.get(f"/v1/policies/{policy_id}", params=owner)
            assert gone.status_code == 404, where


async def _everything(admin: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Every policy of every namespace of the test, as the admin lists them."""
    policies: list[dict[str, Any]] = []
    for namespace in ("org:acme", "org:globex"):
        listed = await admin.get("/v1/policies", params={"namespace": namespace})
        assert listed.status_code == 200, listed.text
        policies += listed.json()["policies"]
    return sorted(policies, key=lambda p: (p["namespace"], p["policy_id"]))


async def test_a_read_only_key_writes_nothing(policy_app: Any) -> None:
    async with policy_app() as admin:
        keys, _ = await _seeded(admin)
        reader = _client(admin, keys.acme_reader)
        for namespace in (None, "org:acme", "global"):
            params = _params(namespace)
            refused = [
                await reader.post(
                    "/v1/policies", params=params, json={"policy_id": "x", "content": TEXT}
                ),
                await reader.put("/v1/policies/acme-rule", params=params, json={"content": "y"}),
                await reader.delete("/v1/policies/acme-rule", params=params),
            ]
            for response in refused:
                assert response.status_code == 403, response.text
                assert "policies:write" in response.json()["error"]["message"]
        rule = await admin.get("/v1/policies/acme-rule", params={"namespace": "org:acme"})
        assert rule.json()["version"] == 1


async def test_a_malformed_namespace_is_a_422_naming_it_and_changes_nothing(
    policy_app: Any,
) -> None:
    async with policy_app() as admin:
        keys, _ = await _seeded(admin)
        acme = _client(admin, keys.acme)
        for bad in ("acme", "org:", "org:bad/org", "GLOBAL", ""):
            params = {"namespace": bad}
            for response in (
                await acme.post(
                    "/v1/policies", params=params, json={"policy_id": "n", "content": TEXT}
                ),
                await acme.put("/v1/policies/acme-rule", params=params, json={"content": "z"}),
                await acme.delete("/v1/policies/acme-rule", params=params),
                await acme.get("/v1/policies/acme-rule", params=params),
                await acme.get("/v1/policies", params=params),
                await acme.post("/v1/policies/search", params=params, json={"query": TEXT}),
            ):
                assert response.status_code == 422, (bad, response.text)
                fields = response.json()["error"]["details"]["fields"]
                assert [f["field"] for f in fields] == ["namespace"], (bad, fields)
        # Type errors and a bad namespace in one answer (docs/adr/0088).
        both = await acme.post(
            "/v1/policies", params={"namespace": "nope"}, json={"policy_id": 7, "content": ""}
        )
        assert both.status_code == 422
        assert {f["field"] for f in both.json()["error"]["details"]["fields"]} == {
            "namespace",
            "policy_id",
            "content",
        }
        rule = await admin.get("/v1/policies/acme-rule", params={"namespace": "org:acme"})
        assert rule.json()["version"] == 1
        missing = await admin.get("/v1/policies/n", params={"namespace": "org:acme"})
        assert missing.status_code == 404
