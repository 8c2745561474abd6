"""A key grants no more than it holds, over HTTP (docs/adr/0098): the route walk of issue 17.

For each route that creates or changes a key (`POST /v1/api-keys`, `DELETE
/v1/api-keys/{key_id}`), the granter's scopes, org and expiry against the requested (or the
target key's) ones: only subsets pass; the others answer 403 `forbidden` naming each field
that exceeds, and change nothing. The rule is a conjunction over three independent parts,
so the walk takes each part in full against the others: every scope set a granter may hold
(any with `admin`) against every scope set it may ask for, at a passing org and expiry; and
every granter org and expiry against every requested org and expiry, each with a scope set
within the granter's and one beyond it. (The full product of all three, 190,000 cases, is
walked over the pure rule the routes call, in tests/unit/access/test_grant.py: over HTTP it
would take minutes.) The escalations the adversarial run found, an org's admin-only key
minting a `policies:write` key and a one-day key minting a key that never expires, are
among the cases.
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
OTHERS = [s for s in Scope if s is not Scope.ADMIN]
# Every scope set that reaches the key routes (they need `admin`), and every one asked for.
GRANTER_SCOPES = [
    frozenset({Scope.ADMIN, *c}) for n in range(len(OTHERS) + 1) for c in combinations(OTHERS, n)
]
WANTED_SCOPES = [frozenset(c) for n in range(1, len(Scope) + 1) for c in combinations(Scope, n)]
# The org and expiry walk: a granter's scopes, one set within them and one beyond.
HELD = frozenset({Scope.ADMIN, Scope.HISTORY_READ})
WITHIN, BEYOND = frozenset({Scope.HISTORY_READ}), frozenset({Scope.POLICIES_WRITE})

Key = tuple[frozenset[Scope], str | None, datetime | None]  # scopes, org, expiry


def _cases(now: datetime) -> Iterator[tuple[Key, list[Key]]]:
    """(granter, the keys it asks for or targets), over both parts of the walk."""
    own = now + timedelta(days=10)
    # Never; at the granter's expiry (the latest that passes); a second after it.
    expiries = (None, own, own + timedelta(seconds=1))
    for held in GRANTER_SCOPES:
        yield (held, OWN, own), [(wanted, OWN, own) for wanted in WANTED_SCOPES]
    for org, expiry in product((None, OWN), (None, own)):
        yield (HELD, org, expiry), list(product((WITHIN, BEYOND), (None, OWN, OTHER), expiries))


def _fields(granter: Key, wanted: Key) -> set[str]:
    """What exceeds the granter, read off the issue's rule independently of the code."""
    (held, org, expiry), (scopes, wanted_org, wanted_expiry) = granter, wanted
    fields = set()
    if not scopes <= held:
        fields.add("scopes")
    if org is not None and wanted_org != org:
        fields.add("org_id")
    if expiry is not None and (wanted_expiry is None or wanted_expiry > expiry):
        fields.add("expires_at")
    return fields


def _body(name: str, key: Key) -> Any:
    scopes, org, expiry = key
    body: dict[str, Any] = {"name": name, "org_id": org, "scopes": sorted_scopes(scopes)}
    if expiry is not None:
        body["expires_at"] = expiry.isoformat()
    return body


async def _created(client: httpx.AsyncClient, body: Any) -> dict[str, Any]:
    response = await client.post("/v1/api-keys", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _keys(running: Running) -> list[dict[str, Any]]:
    keys: list[dict[str, Any]] = (await running.admin.get("/v1/api-keys")).json()["keys"]
    return keys


def _assert_refused(response: httpx.Response, fields: set[str], case: object) -> None:
    assert response.status_code == 403, (case, response.text)
    error = response.json()["error"]
    assert error["code"] == "forbidden", case
    assert {f["field"] for f in error["details"]["fields"]} == fields, case
    assert set(error["details"]["lacking"]) == fields, case


async def test_creating_a_key_passes_only_for_a_subset_of_the_granter(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        granters = passed = refused = 0
        for granter, wanted_keys in _cases(datetime.now(UTC)):
            made = await _created(running.admin, _body("granter", granter))
            granters += 1
            async with running.client(made["secret"]) as client:
                for wanted in wanted_keys:
                    fields = _fields(granter, wanted)
                    response = await client.post("/v1/api-keys", json=_body("child", wanted))
                    if fields:
                        _assert_refused(response, fields, (granter, wanted))
                        refused += 1
                        continue
                    assert response.status_code == 201, (granter, wanted, response.text)
                    assert response.json()["created_by"] == made["key_id"]
                    passed += 1
        assert passed and refused
        # A refusal created nothing: exactly the granters and the children that passed exist.
        assert len(await _keys(running)) == granters + passed


async def test_revoking_a_key_passes_only_for_a_subset_of_the_granter(
    full_app: FullApp,
) -> None:
    """A target of an org the granter does not cover is 404 (as if it did not exist),
    never 403; a refused revocation leaves the target live. The grant rule is checked
    before "already revoked", so every granter walks the same targets."""
    async with full_app() as running:
        target_ids: dict[Key, str] = {}
        revocable: set[Key] = set()
        for granter, targets in _cases(datetime.now(UTC)):
            for target in targets:
                if target not in target_ids:
                    made_target = await _created(running.admin, _body("target", target))
                    target_ids[target] = made_target["key_id"]
            made = await _created(running.admin, _body("granter", granter))
            async with running.client(made["secret"]) as client:
                for target in targets:
                    response = await client.delete(f"/v1/api-keys/{target_ids[target]}")
                    case = (granter, target, response.text)
                    if granter[1] is not None and target[1] != granter[1]:
                        assert response.status_code == 404, case
                    elif fields := _fields(granter, target):
                        _assert_refused(response, fields, case)
                    else:
                        assert response.status_code == 204, case
                        revocable.add(target)
        assert revocable and len(revocable) < len(target_ids)
        live = {k["key_id"] for k in await _keys(running) if k["revoked_at"] is None}
        for target, key_id in target_ids.items():
            assert (key_id not in live) == (target in revocable), target
