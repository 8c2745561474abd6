"""`memory.client` against a real `memory serve`: every endpoint through the typed client,
typed errors with the service's codes, the cursor iterators, and the async client."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from tests.conftest import TEST_ADMIN_TOKEN

from memory.client import (
    AsyncMemoryClient,
    ChatEvent,
    Conflict,
    Forbidden,
    InvalidRequest,
    KeyExpired,
    MemoryClient,
    NotFound,
    Unauthorized,
)

SEMANTIC = "digital_worker_semantic_search"


def test_the_policy_lifecycle_through_the_client(served: str) -> None:
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
        receipt = memory.store_policy(
            "travel-eu", "EU business travel needs a manager's approval.", {"tags": ["travel"]}
        )
        assert (receipt.version, receipt.searchable) == (1, True)
        with pytest.raises(Conflict) as conflict:
            memory.store_policy("travel-eu", "again")
        assert conflict.value.code == "conflict"
        for i in range(5):
            memory.store_policy(f"extra-{i}", f"travel rule number {i}", {"tags": ["travel"]})

        updated = memory.update_policy(
            "travel-eu", "All business travel needs approval.", {"tags": ["travel"]}
        )
        assert updated.version == 2
        policy = memory.get_policy("travel-eu")
        assert policy.content == "All business travel needs approval." and policy.tags == ["travel"]
        assert [v.change for v in memory.policy_versions("travel-eu").versions] == [
            "stored",
            "content",
        ]

        listed = [p.policy_id for p in memory.iter_policies(page_size=2, tag="travel")]
        assert listed[0] == "travel-eu" and sorted(listed) == sorted(
            ["travel-eu", *[f"extra-{i}" for i in range(5)]]
        )
        hits = list(
            memory.iter_search_policies("business travel", similarity_threshold=0.0, page_size=2)
        )
        assert len(hits) == 6 and len({h.policy_id for h in hits}) == 6
        document = memory.get_by_embedding(
            str(hits[0].embedding_ref), origin="search", query="business travel"
        )
        assert document.similarity is not None

        memory.delete_policy("travel-eu")
        with pytest.raises(NotFound) as gone:
            memory.get_policy("travel-eu")
        assert gone.value.code == "not_found"
        with pytest.raises(InvalidRequest) as invalid:
            memory.list_policies(limit=0)
        assert [f["field"] for f in invalid.value.fields] == ["limit"]


def test_the_history_lifecycle_through_the_client(served: str) -> None:
    now = datetime.now(UTC)
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
        assert memory.health().status == "ok"
        unknown = memory.search_history("nobody", "password")
        assert (unknown.org_known, unknown.semantic) == (False, "off")
        assert unknown.semantic_off_by is not None and unknown.semantic_off_by.layer == "global"

        memory.set_global_flag(SEMANTIC, True)
        assert memory.global_flag(SEMANTIC).enabled is True
        assert SEMANTIC in {f.flag for f in memory.global_flags().flags}
        receipt = memory.ingest(
            "acme",
            [
                ChatEvent(
                    event_id="m1",
                    provider="slack",
                    channel_id="C1",
                    sender="ali",
                    text="how can I reset my password",
                    occurred_at=now - timedelta(hours=2),
                ),
                {
                    "event_id": "m2",
                    "provider": "slack",
                    "channel_id": "C1",
                    "sender": "bob",
                    "text": "the reset link never arrives",
                    "occurred_at": now - timedelta(hours=2) + timedelta(minutes=1),
                },
            ],
        )
        assert (receipt.inserted, receipt.duplicates) == (2, 0)
        assert memory.sweep("acme").windows_embedded == 1
        status = memory.sweep_status("acme")
        assert status.partitions[0].windows_embedded == 1
        assert (status.totals.partitions, status.totals.windows_embedded) == (1, 1)
        assert memory.sweep_status("acme", limit=1).next_cursor is None
        indexes = memory.search_indexes("acme")
        assert (indexes.org_id, indexes.model, indexes.indexes) == ("acme", "hash:1024", [])
        found = memory.search_history("acme", "password", limit=5)
        assert (found.semantic, found.pending_windows) == ("on", 0)
        assert found.results[0].event_id == "m1"

        assert memory.set_org_flag("acme", SEMANTIC, False).effective is False
        assert memory.org_flag("acme", SEMANTIC).org is False
        assert memory.set_org_flag("acme", SEMANTIC, None).org is None
        assert memory.org_flags("acme").semantic_search is True
        assert memory.set_retention("acme", 90).days == 90
        assert memory.retention("acme").default is False
        assert memory.purge("acme").events_deleted == 0

        erased = memory.erase_events("acme", sender="bob")
        assert (erased.events_deleted, erased.windows_deleted) == (1, 1)
        whole = memory.erase_org("acme")
        assert (whole.events_deleted, whole.retention_deleted) == (1, True)
        assert memory.search_history("acme", "password").org_known is False


def test_the_org_directory_through_both_clients(served: str) -> None:
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
        memory.set_retention("dir-a", 12)
        memory.ingest(
            "dir-b",
            [
                ChatEvent(
                    provider="slack",
                    channel_id="C1",
                    sender="ali",
                    text="where is my invoice",
                    occurred_at=datetime.now(UTC) - timedelta(hours=1),
                )
            ],
        )
        first = memory.orgs(prefix="dir-", limit=1)
        assert [(o.org_id, o.retention.days) for o in first.orgs] == [("dir-a", 12)]
        assert first.next_cursor is not None
        second = memory.orgs(prefix="dir-", limit=1, cursor=first.next_cursor)
        (b,) = second.orgs
        assert (b.org_id, b.messages, b.partitions, b.retention.default) == ("dir-b", 1, 1, True)
        assert second.next_cursor is None
        with pytest.raises(InvalidRequest) as bad:
            memory.orgs(limit=500)
        assert bad.value.code == "validation_error"
        reader = memory.create_api_key("dir-b reader", ["history:read"], org_id="dir-b")

    async def listed(secret: str) -> list[str]:
        async with AsyncMemoryClient(served, api_key=secret) as memory:
            page = await memory.orgs(prefix="dir-")
            return [o.org_id for o in page.orgs]

    assert anyio.run(listed, TEST_ADMIN_TOKEN) == ["dir-a", "dir-b"]
    assert anyio.run(listed, reader.secret) == ["dir-b"]


def test_the_async_client(served: str) -> None:
    async def run() -> tuple[int, list[str]]:
        async with AsyncMemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
            await memory.store_policy("async-1", "Laptops are encrypted at rest.")
            await memory.store_policy("async-2", "Laptops lock after five idle minutes.")
            page = await memory.list_policies(limit=1)
            ids = [p.policy_id async for p in memory.iter_policies(page_size=1)]
            return len(page.policies), ids

    size, ids = anyio.run(run)
    assert size == 1
    assert {"async-1", "async-2"} <= set(ids)


def test_keys_and_the_audit_trail_through_the_client(served: str) -> None:
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as admin:
        created = admin.create_api_key("reader", ["policies:read"])
        assert created.secret and created.scopes == ["policies:read"]
        with MemoryClient(served, api_key=created.secret) as reader:
            reader.list_policies()
            own = reader.own_api_key()
            assert (own.key_id, own.name, own.scopes) == (
                created.key_id,
                "reader",
                ["policies:read"],
            )
            assert own.source == "api_key" and own.org_id is None
            assert "searchPolicies" in own.operations and "storePolicy" not in own.operations
            with pytest.raises(Forbidden) as denied:
                reader.store_policy("nope", "not allowed")
            assert denied.value.code == "forbidden"
        assert created.key_id in {k.key_id for k in admin.api_keys().keys}
        admin.revoke_api_key(created.key_id)
        with (
            MemoryClient(served, api_key=created.secret) as revoked,
            pytest.raises(Unauthorized),
        ):
            revoked.list_policies()
        assert any(e.action for e in admin.audit(limit=5).entries)

    async def admin_self() -> str:
        async with AsyncMemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
            return (await memory.own_api_key()).key_id

    assert anyio.run(admin_self) == "admin-token"
    with MemoryClient(served) as anonymous, pytest.raises(Unauthorized):
        anonymous.own_api_key()


def test_an_expiring_key_through_the_client(served: str) -> None:
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as admin:
        expires_at = datetime.now(UTC) + timedelta(seconds=2)
        created = admin.create_api_key("brief", ["policies:read"], expires_at=expires_at)
        assert created.expires_at == expires_at
        monthly = admin.create_api_key("monthly", ["policies:read"], expires_in_days=30)
        assert monthly.expires_at is not None
        listed = {k.key_id: k for k in admin.api_keys().keys}
        assert listed[created.key_id].expires_at == expires_at
        with pytest.raises(InvalidRequest) as refused:
            admin.create_api_key("never", ["policies:read"], expires_in_days=0)
        assert "expires_in_days" in {f["field"] for f in refused.value.fields}
        with MemoryClient(served, api_key=created.secret) as brief:
            brief.list_policies()
            time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()))
            with pytest.raises(KeyExpired) as expired:
                brief.list_policies()
        assert expired.value.status == 401 and expired.value.code == "key_expired"
        assert isinstance(expired.value, Unauthorized)


def test_namespaces_and_actors_through_both_clients(served: str) -> None:
    """docs/adr/0102, 0103: `namespace=` on every policy call, each answer naming it."""
    with MemoryClient(served, api_key=TEST_ADMIN_TOKEN) as admin:
        acme_key = admin.create_api_key(
            "acme policies", ["policies:read", "policies:write"], org_id="acme"
        )
        admin.store_policy("ns-rule", "Global rule on expense receipts.")
        with MemoryClient(served, api_key=acme_key.secret) as acme:
            own = acme.store_policy("ns-rule", "Acme keeps receipts for ten years.")
            assert own.namespace == "org:acme"
            with pytest.raises(Forbidden) as refused:
                acme.store_policy("ns-other", "x", namespace="global")
            assert refused.value.details == {"field": "namespace"}
            with pytest.raises(InvalidRequest) as malformed:
                acme.get_policy("ns-rule", namespace="acme")
            assert [f["field"] for f in malformed.value.fields] == ["namespace"]
            assert acme.get_policy("ns-rule").namespace == "org:acme"
            assert acme.get_policy("ns-rule", namespace="global").namespace == "global"
            listed = {(p.namespace, p.policy_id) for p in acme.iter_policies()}
            assert {("org:acme", "ns-rule"), ("global", "ns-rule")} <= listed
            hits = acme.search_policies("receipts", similarity_threshold=0.0, limit=200)
            assert {("org:acme", "ns-rule"), ("global", "ns-rule")} <= {
                (r.namespace, r.policy_id) for r in hits.results
            }
            acme.update_policy("ns-rule", "Acme keeps receipts for seven years.")
        assert {p.namespace for p in admin.iter_policies()} == {"global"}
        versions = admin.policy_versions("ns-rule", namespace="org:acme")
        assert versions.namespace == "org:acme"
        assert [(v.change, v.actor and v.actor.name) for v in versions.versions] == [
            ("stored", "acme policies"),
            ("content", "acme policies"),
        ]

    async def delete_as_admin() -> list[str]:
        async with AsyncMemoryClient(served, api_key=TEST_ADMIN_TOKEN) as memory:
            await memory.delete_policy("ns-rule", namespace="org:acme")
            history = await memory.policy_versions("ns-rule", namespace="org:acme")
            document = await memory.get_policy("ns-rule", namespace="org:acme")
            assert document.namespace == "global"  # acme's is gone; the global one shows
            return [v.actor.key_id if v.actor else "" for v in history.versions]

    assert anyio.run(delete_as_admin)[-1] == "admin-token"
