"""What a key may grant: never more than it holds (docs/adr/0098).

A key creates (or revokes) a key only when every scope of that key is one of its own, the
org of that key is one it covers, and that key expires no later than it does. The admin
token and the operator at the command line hold every scope on every org and never
expire, so the rule lets them grant anything without a case of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.domain.access.api_key import ApiKey
from memory.domain.access.scopes import Scope, sorted_scopes


@dataclass(frozen=True, slots=True)
class Grant:
    """What a key would hold: its org (None = every org), scopes and expiry (None = never)."""

    org_id: str | None
    scopes: frozenset[Scope]
    expires_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> Grant:
        return cls(key.org_id, key.scopes, key.expires_at)


@dataclass(frozen=True, slots=True)
class Excess:
    """One way a grant exceeds its granter: the request field it concerns (`scopes`,
    `org_id`, `expires_at`), why, and the value the granter lacks (a scope, an org or
    "every org", or the granter's own expiry)."""

    field: str
    reason: str
    lacking: object


def excesses(granter: ApiKey, grant: Grant) -> list[Excess]:
    """Every way `grant` exceeds what `granter` holds (empty: it may grant it). Whether an
    org the granter does not cover exists is not said."""
    found: list[Excess] = []
    missing = grant.scopes - granter.scopes
    if missing:
        names = sorted_scopes(missing)
        found.append(
            Excess(
                "scopes",
                f"this API key lacks the {', '.join(names)} scope"
                f"{'s' if len(names) > 1 else ''} it would grant",
                names,
            )
        )
    if grant.org_id is None and not granter.all_orgs:
        found.append(
            Excess("org_id", "only an API key for every org may grant a key for every org", "*")
        )
    elif grant.org_id is not None and not granter.covers(grant.org_id):
        found.append(Excess("org_id", "this API key may not act on that org", grant.org_id))
    if granter.expires_at is not None and (
        grant.expires_at is None or grant.expires_at > granter.expires_at
    ):
        own = granter.expires_at.isoformat()
        found.append(
            Excess(
                "expires_at",
                f"this API key expires at {own}; a key it grants must expire no later",
                own,
            )
        )
    return found
