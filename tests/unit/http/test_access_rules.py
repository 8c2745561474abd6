"""`Access.refusal`, the one rule that admits or refuses a request and tells a key which
routes it may call (`permitted`, what `GET /v1/api-keys/self` lists)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.domain.access.api_key import ApiKey
from memory.domain.access.scopes import ALL_SCOPES, Scope
from memory.entrypoints.http import access_routes, history_routes, policy_routes
from memory.entrypoints.http.access import Access, AccessTable, permitted

TABLE: AccessTable = {
    **policy_routes.ACCESS,
    **history_routes.ACCESS,
    **access_routes.ACCESS,
    ("GET", "/healthz"): Access.public(),
}
ORG = "/v1/orgs/{org_id}"


def key(org_id: str | None, *scopes: Scope) -> ApiKey:
    return ApiKey("key_0", "k", org_id, frozenset(scopes), datetime.now(UTC))


def test_a_read_only_key_for_one_org_may_read_its_org_and_ask_about_itself() -> None:
    reader = key("acme", Scope.HISTORY_READ)
    allowed = permitted(TABLE, reader)
    assert ("GET", f"{ORG}/history/search") in allowed
    assert ("GET", "/v1/orgs") in allowed  # the directory, narrowed to its org
    assert ("GET", "/v1/api-keys/self") in allowed
    assert ("GET", "/healthz") in allowed
    for refused in [
        ("PUT", f"{ORG}/feature-flags/{{flag}}"),
        ("PUT", f"{ORG}/retention"),
        ("POST", f"{ORG}/chat-events"),
        ("GET", "/v1/audit"),
        ("POST", "/v1/policies/search"),
        ("GET", "/v1/api-keys"),
    ]:
        assert refused not in allowed, refused


def test_an_orgs_admin_may_change_its_org_but_not_what_needs_every_org() -> None:
    admin = key("acme", Scope.ADMIN)
    allowed = permitted(TABLE, admin)
    assert {("PUT", f"{ORG}/feature-flags/{{flag}}"), ("PUT", f"{ORG}/retention")} <= allowed
    assert ("GET", "/v1/audit") not in allowed
    assert ("PUT", "/v1/feature-flags/{flag}") not in allowed
    assert ("GET", f"{ORG}/history/search") not in allowed  # scopes do not imply each other
    every_org = key(None, *ALL_SCOPES)
    assert permitted(TABLE, every_org) == frozenset(TABLE)


@pytest.mark.parametrize("org_id", ["acme", None])
def test_any_valid_key_may_call_a_key_holders_route_and_anyone_a_public_one(
    org_id: str | None,
) -> None:
    weakest = key(org_id, Scope.POLICIES_READ)
    assert Access.key_holder().refusal(weakest) is None
    assert not Access.key_holder().is_public
    assert Access.public().is_public and Access.public().refusal(weakest) is None


def test_the_reason_names_the_missing_scope_every_org_or_the_org() -> None:
    reader = key("acme", Scope.HISTORY_READ)
    assert Access.org(Scope.ADMIN).refusal(reader, "acme") == ("this API key lacks the admin scope")
    assert Access.every_org(Scope.HISTORY_READ).refusal(reader) == (
        "only an API key for every org may do this"
    )
    org_rule = Access.org(Scope.HISTORY_READ)
    assert org_rule.refusal(reader, "acme") is None
    assert org_rule.refusal(reader, "globex") == "this API key may not act on that org"
    assert org_rule.refusal(reader) is None  # on some org: its own
