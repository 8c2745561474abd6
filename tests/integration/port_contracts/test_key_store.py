"""`KeyStore`: API keys by digest and by id, listings, revocation and last use, against
`InMemoryKeyStore` and `PostgresKeyStore` (docs/adr/0125)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.application.access.ports import KeyStore
from memory.domain.access.api_key import ApiKey, secret_digest
from memory.domain.access.scopes import Scope

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def key(
    key_id: str,
    org_id: str | None = "acme",
    *,
    at: datetime = T0,
    created_by: str | None = "cli",
    expires_at: datetime | None = None,
) -> ApiKey:
    return ApiKey(
        key_id,
        f"bot {key_id}",
        org_id,
        frozenset({Scope.HISTORY_READ, Scope.ADMIN}),
        at,
        expires_at=expires_at,
        created_by=created_by,
    )


def digest(key_id: str) -> bytes:
    return secret_digest(f"secret of {key_id}")


def test_a_key_is_found_by_its_digest_and_by_its_id_as_it_was_added(
    key_store: KeyStore,
) -> None:
    assert key_store.count() == 0
    added = key("key_a", expires_at=T0 + timedelta(days=30))
    key_store.add(added, digest("key_a"))
    key_store.add(key("key_b", None, created_by=None), digest("key_b"))
    assert key_store.find(digest("key_a")) == added
    assert key_store.get("key_a") == added
    everything = key_store.get("key_b")
    assert everything is not None and everything.all_orgs and everything.created_by is None
    assert key_store.find(digest("key_c")) is None and key_store.get("key_c") is None
    assert key_store.count() == 2


def test_a_second_key_with_a_stored_digest_is_refused(key_store: KeyStore) -> None:
    key_store.add(key("key_a"), digest("key_a"))
    with pytest.raises(Exception):  # noqa: B017 - the port names no error; both refuse
        key_store.add(key("key_b"), digest("key_a"))
    assert key_store.count() == 1 and key_store.get("key_b") is None


def test_keys_are_listed_oldest_first_by_org_and_by_creator_through_its_descendants(
    key_store: KeyStore,
) -> None:
    later = T0 + timedelta(minutes=1)
    for added in (
        key("key_c", at=later, created_by="key_b"),  # created by a key key_a created
        key("key_b", at=T0, created_by="key_a"),
        key("key_a", None, at=T0, created_by="cli"),
        key("key_d", "globex", at=later, created_by="key_a"),
        key("key_e", at=later, created_by="cli"),
    ):
        key_store.add(added, digest(added.key_id))
    assert [k.key_id for k in key_store.keys(None)] == [
        "key_a",
        "key_b",
        "key_c",
        "key_d",
        "key_e",
    ]
    assert [k.key_id for k in key_store.keys("acme")] == ["key_b", "key_c", "key_e"]
    assert [k.key_id for k in key_store.keys(None, "key_a")] == ["key_b", "key_c", "key_d"]
    assert [k.key_id for k in key_store.keys("globex", "key_a")] == ["key_d"]
    assert [k.key_id for k in key_store.keys(None, "key_b")] == ["key_c"]
    assert key_store.keys(None, "key_e") == []


def test_a_revoked_key_is_still_found_and_keeps_its_first_revocation(
    key_store: KeyStore,
) -> None:
    key_store.add(key("key_a"), digest("key_a"))
    key_store.revoke("key_a", T0 + timedelta(hours=1))
    key_store.revoke("key_a", T0 + timedelta(hours=2))
    key_store.revoke("key_unknown", T0)
    found = key_store.find(digest("key_a"))
    assert found is not None and found.revoked_at == T0 + timedelta(hours=1)
    assert key_store.keys("acme") == [found]


def test_a_use_is_recorded_only_forwards(key_store: KeyStore) -> None:
    key_store.add(key("key_a"), digest("key_a"))
    key_store.touch("key_a", T0 + timedelta(minutes=5))
    key_store.touch("key_a", T0 + timedelta(minutes=2))  # a slower process, an older use
    used = key_store.get("key_a")
    assert used is not None and used.last_used_at == T0 + timedelta(minutes=5)
    key_store.touch("key_a", T0 + timedelta(minutes=7))
    again = key_store.get("key_a")
    assert again is not None and again.last_used_at == T0 + timedelta(minutes=7)
