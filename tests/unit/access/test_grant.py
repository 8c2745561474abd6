"""What a key may grant (docs/adr/0098), over every combination of the granter's scopes,
org and expiry against the grant's: only subsets pass, and a refusal names exactly the
fields that exceed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import combinations, product

import pytest

from memory.domain.access.api_key import ApiKey
from memory.domain.access.grant import Grant, excesses
from memory.domain.access.scopes import ALL_SCOPES, Scope

NOW = datetime(2026, 6, 1, tzinfo=UTC)
OWN_EXPIRY = NOW + timedelta(days=10)


def _subsets(*, empty: bool) -> list[frozenset[Scope]]:
    scopes = list(Scope)
    start = 0 if empty else 1
    return [frozenset(c) for n in range(start, len(scopes) + 1) for c in combinations(scopes, n)]


def _granter(scopes: frozenset[Scope], org_id: str | None, expires_at: datetime | None) -> ApiKey:
    return ApiKey("key_0123456789abcdef", "granter", org_id, scopes, NOW, expires_at=expires_at)


def _expected(granter: ApiKey, grant: Grant) -> set[str]:
    """The fields an independent reading of the rule says exceed the granter."""
    fields = set()
    if not grant.scopes <= granter.scopes:
        fields.add("scopes")
    if granter.org_id is not None and grant.org_id != granter.org_id:
        fields.add("org_id")
    if granter.expires_at is not None and (
        grant.expires_at is None or grant.expires_at > granter.expires_at
    ):
        fields.add("expires_at")
    return fields


@pytest.mark.slow
def test_every_combination_passes_only_as_a_subset_and_names_what_exceeds() -> None:
    granted = refused = 0
    for held, org, expiry in product(_subsets(empty=True), (None, "acme"), (None, OWN_EXPIRY)):
        granter = _granter(held, org, expiry)
        for wanted, wanted_org, wanted_expiry in product(
            _subsets(empty=False),
            (None, "acme", "globex"),
            (None, OWN_EXPIRY - timedelta(days=1), OWN_EXPIRY, OWN_EXPIRY + timedelta(seconds=1)),
        ):
            grant = Grant(wanted_org, wanted, wanted_expiry)
            found = excesses(granter, grant)
            assert {e.field for e in found} == _expected(granter, grant), (granter, grant)
            granted += not found
            refused += bool(found)
    assert granted and refused


def test_a_refusal_names_the_scopes_org_and_expiry_the_granter_lacks() -> None:
    granter = _granter(frozenset({Scope.ADMIN, Scope.HISTORY_READ}), "acme", OWN_EXPIRY)
    grant = Grant(
        "globex", frozenset({Scope.ADMIN, Scope.POLICIES_WRITE, Scope.HISTORY_WRITE}), None
    )
    lacking = {e.field: e.lacking for e in excesses(granter, grant)}
    assert lacking == {
        "scopes": ["history:write", "policies:write"],
        "org_id": "globex",
        "expires_at": OWN_EXPIRY.isoformat(),
    }
    everywhere = {e.field: e.lacking for e in excesses(granter, Grant(None, granter.scopes, None))}
    assert everywhere["org_id"] == "*"


def test_a_key_for_every_org_without_expiry_and_every_scope_may_grant_anything() -> None:
    # The admin token and the command line are such keys: the rule needs no case for them.
    unbounded = _granter(ALL_SCOPES, None, None)
    for wanted, org in product(_subsets(empty=False), (None, "acme")):
        assert excesses(unbounded, Grant(org, wanted, NOW + timedelta(days=1))) == []
        assert excesses(unbounded, Grant(org, wanted, None)) == []
