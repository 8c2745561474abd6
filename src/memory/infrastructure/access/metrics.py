"""Prometheus metrics of access control (served at /metrics with everything else).

Only lookups are counted: a request the process answers from its key caches costs no lookup
and reports nothing (docs/adr/0127). A rising `unknown` rate with few `ok` is someone trying
secrets; `database_unavailable` is the key store being down.
"""

from __future__ import annotations

from prometheus_client import Counter

from memory.application.access.errors import Forbidden, KeyExpired
from memory.application.errors import DatabaseUnavailable, DeadlineExceeded
from memory.application.observer import ServiceCall
from memory.domain.errors import AlreadyExists, DomainError, InvalidInput, NotFound

ACCESS_KEY_LOOKUPS = Counter(
    "memory_access_key_lookups_total",
    "API key lookups in the key store (cache misses) by outcome: ok, unknown (malformed, "
    "unknown or revoked), expired, database_unavailable, error",
    ["outcome"],
)
ACCESS_KEY_CHANGES = Counter(
    "memory_access_key_changes_total",
    "API key administration by operation (create_key, revoke_key, bootstrap) and outcome",
    ["operation", "outcome"],
)

CHANGE_OPERATIONS = frozenset({"create_key", "revoke_key", "bootstrap"})


def outcome_of(call: ServiceCall) -> str:
    """The `outcome` label of a call: ok, or the kind of refusal or failure."""
    error = call.error
    if error is None:
        return "unknown" if call.operation == "authenticate" and call.result is None else "ok"
    outcomes: list[tuple[type[Exception], str]] = [
        (KeyExpired, "expired"),
        (Forbidden, "forbidden"),
        (AlreadyExists, "conflict"),
        (NotFound, "not_found"),
        (InvalidInput, "invalid"),
        (DeadlineExceeded, "timeout"),
        (DatabaseUnavailable, "database_unavailable"),
        (DomainError, "invalid"),
    ]
    for cls, outcome in outcomes:
        if isinstance(error, cls):
            return outcome
    return "error"


class AccessMetrics:
    """`ServiceObserver` that turns `AccessService` calls into the counters above."""

    def observe(self, call: ServiceCall) -> None:
        if call.operation == "authenticate":
            ACCESS_KEY_LOOKUPS.labels(outcome_of(call)).inc()
        elif call.operation in CHANGE_OPERATIONS:
            ACCESS_KEY_CHANGES.labels(call.operation, outcome_of(call)).inc()
