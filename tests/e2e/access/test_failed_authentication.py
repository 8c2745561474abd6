"""Failed authentication costs little and is limited (issue 17, docs/security.md): malformed
keys need no lookup, an unknown key is looked up once and then answered from the cache, and
a client address that keeps failing is refused with 429 and `Retry-After` before any lookup,
so the number of database lookups under a flood of unknown keys stays bounded."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest
from tests.e2e.access.conftest import FullApp, Running

from memory.domain.access.api_key import SECRET_BYTES, new_secret
from memory.infrastructure.access.key_store import PostgresKeyStore

pytestmark = pytest.mark.anyio

FAILURES_PER_MINUTE = 20
FLOOD = 300
ROUTE = "/v1/orgs/acme/sweep"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Every digest the key store is asked for, in order."""
    asked: list[bytes] = []
    find = PostgresKeyStore.find

    def counting(self: PostgresKeyStore, digest: bytes) -> object:
        asked.append(digest)
        return find(self, digest)

    monkeypatch.setattr(PostgresKeyStore, "find", counting)
    yield asked


def _client(running: Running, secret: str, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=running.app, client=(address, 40000))
    return httpx.AsyncClient(
        transport=transport,
        base_url="http://memory.test",
        headers={"Authorization": f"Bearer {secret}"},
    )


def _unknown() -> str:
    return new_secret(secrets.token_bytes(SECRET_BYTES))


async def _status(running: Running, secret: str, address: str) -> httpx.Response:
    async with _client(running, secret, address) as client:
        return await client.get(ROUTE)


async def test_a_flood_of_unknown_keys_costs_a_bounded_number_of_lookups(
    full_app: FullApp, lookups: list[bytes]
) -> None:
    async with full_app(failed_auth_per_minute=FAILURES_PER_MINUTE) as running:
        known = await running.new_key("reader", "acme", "history:read")
        fresh = await running.new_key("fresh", "acme", "history:read")
        assert (await _status(running, known, "10.0.0.1")).status_code == 200  # now cached
        lookups.clear()
        answers = [(await _status(running, _unknown(), "10.0.0.1")) for _ in range(FLOOD)]
        codes = [a.status_code for a in answers]
        assert codes[:FAILURES_PER_MINUTE] == [401] * FAILURES_PER_MINUTE
        assert set(codes[FAILURES_PER_MINUTE:]) == {429}
        refused = answers[-1]
        assert refused.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(refused.headers["retry-after"]) <= 60 // FAILURES_PER_MINUTE + 1
        assert len(lookups) == FAILURES_PER_MINUTE
        # The flooding address: a key already cached still works, a new one waits.
        assert (await _status(running, known, "10.0.0.1")).status_code == 200
        assert (await _status(running, fresh, "10.0.0.1")).status_code == 429
        # Another address is not held back by the first one's failures.
        assert (await _status(running, fresh, "10.0.0.2")).status_code == 200
        assert len(lookups) == FAILURES_PER_MINUTE + 1


async def test_malformed_keys_need_no_lookup_and_unknown_ones_one(
    full_app: FullApp, lookups: list[bytes]
) -> None:
    async with full_app(failed_auth_per_minute=0) as running:
        for malformed in ("mem_short", "x" * 47, "mem_" + "!" * 43, "Bearer"):
            response = await _status(running, malformed, "10.0.0.3")
            assert response.status_code == 401, malformed
        assert lookups == []
        unknown = _unknown()
        for _ in range(50):
            assert (await _status(running, unknown, "10.0.0.3")).status_code == 401
        assert len(lookups) == 1
