"""`visible_orgs`: what a listing of orgs may show a key, and only on a route whose rule
promises such a listing (fail closed)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.domain.access.api_key import ApiKey
from memory.domain.access.scopes import Scope
from memory.entrypoints.http.access import Access, visible_orgs


def request_scope(rule: Access | None, org_id: str | None) -> dict[str, Any]:
    key = ApiKey("key_0", "k", org_id, frozenset({Scope.HISTORY_READ}), datetime.now(UTC))
    return {"type": "http", "state": {"api_key": key, "access_rule": rule}}


def test_a_key_for_every_org_sees_every_org_and_an_org_key_its_own() -> None:
    rule = Access.own_orgs(Scope.HISTORY_READ)
    assert visible_orgs(request_scope(rule, None)) is None
    assert visible_orgs(request_scope(rule, "acme")) == frozenset({"acme"})


@pytest.mark.parametrize(
    "rule",
    [
        Access.any_org(Scope.HISTORY_READ),
        Access.org(Scope.HISTORY_READ),
        Access.every_org(Scope.ADMIN),
        None,
    ],
)
def test_a_route_whose_rule_does_not_list_orgs_cannot_ask(rule: Access | None) -> None:
    with pytest.raises(AssertionError):
        visible_orgs(request_scope(rule, "acme"))
