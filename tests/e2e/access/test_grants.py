"""A key grants no more than it holds, over HTTP (docs/adr/0098): the route walk of issue 17.

For each route that creates or changes a key (`POST /v1/api-keys`, `DELETE
/v1/api-keys/{key_id}`), every combination of the granter's scopes, org and expiry against
the requested (or the target key's) ones: only subsets pass; the others answer 403
`forbidden` naming each field that exceeds, and change nothing. The escalations the
adversarial run found (an org's admin-only key minting a `policies:write` key; a one-day key
minting a key that never expires) are among the combinations.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import combinations, product
from typing import Any

import httpx
import pytest
from tests.e2e.access.conftest import FullApp, Running

from memory.domain.access.scopes import Scope, sorted_scopes

pytestmark = pytest.mark.anyio

OWN, OTHER = "acme", "globex"
SCOPES = list(Scope)
# Every scope set a granter may hold and still reach the key routes (they need `admin`),
# and every scope set a key may be asked for.
GRANTER_SCOPES = [
    frozenset({Scope.ADMIN, *c}) for n in range(len(SCOPES)) for c in combinations(SCOPES[:-1], n)
]
WANTED_SCOPES = [frozenset(c) for n in range(1, len(SCOPES) + 1) for c in combinations(SCOPES, n)]
GRANTER_ORGS = (None, OWN)
WANTED_ORGS = (None, OWN, OTHER)


def _expiries(now: datetime) -> tuple[datetime, tuple[datetime | None, ...]]:
    """A granter's expiry, and the requested ones: never, at it (the latest that passes;
    anything earlier passes as well, tests/unit/access/test_grant.py walks that too), a
    second after it."""
    own = now + timedelta(days=10)
    return own, (None, own, own + timedelta(seconds=1))


def _fields(
    held: frozenset[Scope],
    org: str | None,
    expiry: datetime | None,
    wanted: frozenset[Scope],
    wanted_org: str | None,
    wanted_expiry: datetime | None,
) -> set[str]:
    """What exceeds the granter, read off the issue's rule independently of the code."""
    fields = set()
    if not wanted <= held:
        fields.add("scopes")
    if org is not None and wanted_org != org:
        fields.add("org_id")
    if expiry is not None and (wanted_expiry is None or wanted_expiry > expiry):
        fields.add("expires_at")
    return fields


def _body(name: str, scopes: frozenset[Scope], org: str | None, expiry: datetime | None) -> Any:
    body: dict[str, Any] = {"name": name, "org_id": org, "scopes": sorted_scopes(scopes)}
    if expiry is not None:
        body["expires_at"] = expiry.isoformat()
    return body


async def _created(client: httpx.AsyncClient, body: Any) -> dict[str, Any]:
    response = await client.post("/v1/api-keys", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _granters(
    own_expiry: datetime,
) -> Iterator[tuple[frozenset[Scope], str | None, datetime | None]]:
    yield from product(GRANTER_SCOPES, GRANTER_ORGS, (None, own_expiry))


async def _key_count(running: Running) -> int:
    listed = await running.admin.get("/v1/api-keys")
    return len(listed.json()["keys"])


def _assert_refused(response: httpx.Response, fields: set[str], case: object) -> None:
    assert response.status_code == 403, (case, response.text)
    error = response.json()["error"]
    assert error["code"] == "forbidden", case
    assert {f["field"] for f in error["details"]["fields"]} == fields, case
    assert set(error["details"]["lacking"]) == fields, case


async def _walk_creation(
    running: Running,
    granter: tuple[frozenset[Scope], str | None, datetime | None],
    wanted_expiries: tuple[datetime | None, ...],
) -> tuple[int, int]:
    """Every requested key against one granter: (created, refused)."""
    held, org, expiry = granter
    made = await _created(running.admin, _body("granter", held, org, expiry))
    passed = refused = 0
    async with running.client(made["secret"]) as client:
        for wanted, wanted_org, wanted_expiry in product(
            WANTED_SCOPES, WANTED_ORGS, wanted_expiries
        ):
            case = (held, org, expiry, wanted, wanted_org, wanted_expiry)
            fields = _fields(*case)
            response = await client.post(
                "/v1/api-keys", json=_body("child", wanted, wanted_org, wanted_expiry)
            )
            if fields:
                _assert_refused(response, fields, case)
                refused += 1
                continue
            assert response.status_code == 201, (case, response.text)
            assert response.json()["created_by"] == made["key_id"], case
            passed += 1
    return passed, refused


async def test_creating_a_key_passes_only_for_a_subset_of_the_granter(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        own_expiry, wanted_expiries = _expiries(datetime.now(UTC))
        granters = list(_granters(own_expiry))
        counts = [await _walk_creation(running, g, wanted_expiries) for g in granters]
        passed = sum(p for p, _ in counts)
        assert passed and sum(r for _, r in counts)
        # A refusal changed nothing: exactly the granters and the children that passed exist.
        assert await _key_count(running) == len(granters) + passed


async def _walk_revocation(
    running: Running,
    granter: tuple[frozenset[Scope], str | None, datetime | None],
    targets: list[tuple[tuple[frozenset[Scope], str | None, datetime | None], str]],
) -> int:
    """Every target key against one granter: how many it may revoke. A target of an org
    the granter does not cover is 404 (as if it did not exist), never 403."""
    held, org, expiry = granter
    made = await _created(running.admin, _body("granter", held, org, expiry))
    passed = 0
    async with running.client(made["secret"]) as client:
        for (wanted, wanted_org, wanted_expiry), key_id in targets:
            case = (held, org, expiry, wanted, wanted_org, wanted_expiry)
            response = await client.delete(f"/v1/api-keys/{key_id}")
            if org is not None and wanted_org != org:
                assert response.status_code == 404, (case, response.text)
                continue
            fields = _fields(*case)
            if fields:
                _assert_refused(response, fields, case)
                continue
            assert response.status_code == 204, (case, response.text)
            passed += 1
    return passed


async def test_revoking_a_key_passes_only_for_a_subset_of_the_granter(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        own_expiry, wanted_expiries = _expiries(datetime.now(UTC))
        targets = []
        for target in product(WANTED_SCOPES, WANTED_ORGS, wanted_expiries):
            made = await _created(running.admin, _body("target", *target))
            targets.append((target, str(made["key_id"])))
        counts = [await _walk_revocation(running, g, targets) for g in _granters(own_expiry)]
        assert all(counts)
        # Only revocations that passed revoked anything: a refused target is still live.
        listed = (await running.admin.get("/v1/api-keys")).json()["keys"]
        live = {k["key_id"] for k in listed if k["revoked_at"] is None}
        for (wanted, wanted_org, wanted_expiry), key_id in targets:
            revocable = any(
                not _fields(held, org, expiry, wanted, wanted_org, wanted_expiry)
                for held, org, expiry in _granters(own_expiry)
            )
            assert (key_id not in live) == revocable, (wanted, wanted_org, wanted_expiry)
