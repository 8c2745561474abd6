"""What an API key may do: its scopes (docs/security.md has the table of who may do what)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from memory.domain.errors import InvalidInput


class Scope(StrEnum):
    HISTORY_READ = "history:read"
    HISTORY_WRITE = "history:write"
    POLICIES_READ = "policies:read"
    POLICIES_WRITE = "policies:write"
    ADMIN = "admin"
    # Reads /metrics and nothing else: what a Prometheus scraper holds (docs/adr/0108).
    METRICS_READ = "metrics:read"


ALL_SCOPES: frozenset[Scope] = frozenset(Scope)


def parse_scopes(values: Iterable[str], *, field: str = "scopes") -> frozenset[Scope]:
    """At least one scope, each a known one (`InvalidInput` naming the unknown value)."""
    scopes: set[Scope] = set()
    for value in values:
        try:
            scopes.add(Scope(value))
        except ValueError:
            known = ", ".join(s.value for s in Scope)
            raise InvalidInput(field, f"unknown scope {value!r} (known: {known})") from None
    if not scopes:
        raise InvalidInput(field, "at least one scope is required")
    return frozenset(scopes)


def sorted_scopes(scopes: Iterable[Scope]) -> list[str]:
    """Scopes in the table's order, for answers and storage."""
    order = list(Scope)
    return [s.value for s in sorted(set(scopes), key=order.index)]
