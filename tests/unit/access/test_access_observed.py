"""`AccessService` is observed like the other contexts' services (docs/adr/0127): each
lookup and each key change reports one `ServiceCall`; a cache hit reports nothing; the
metrics count lookups and changes by outcome, and the log never holds a secret. Over the
in-memory key store and audit trail (tests/fakes.py; the port contract cases hold them to
the PostgreSQL adapters)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from tests.fakes import InMemoryAuditTrail, InMemoryKeyStore

from memory.application.access.authentication import KEY_CACHE_SECONDS
from memory.application.access.errors import Forbidden, KeyExpired
from memory.application.access.key_administration import CreatedKey, operator_key
from memory.application.access.service import AccessService
from memory.application.observer import ServiceCall
from memory.domain.access.api_key import ApiKey
from memory.infrastructure.access.metrics import AccessMetrics
from memory.infrastructure.service_log import ServiceLog

OPERATOR = operator_key("cli:test")


class Calls:
    def __init__(self) -> None:
        self.seen: list[ServiceCall] = []

    def observe(self, call: ServiceCall) -> None:
        self.seen.append(call)

    def operations(self) -> list[str]:
        return [c.operation for c in self.seen]


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _observed(clocks: Clocks) -> tuple[AccessService, Calls]:
    calls = Calls()
    service = AccessService(
        InMemoryKeyStore(),
        InMemoryAuditTrail(),
        now=lambda: clocks.wall,
        monotonic=lambda: clocks.mono,
        observers=(calls, AccessMetrics(), ServiceLog()),
    )
    return service, calls


def _lookups(outcome: str) -> float:
    return REGISTRY.get_sample_value("memory_access_key_lookups_total", {"outcome": outcome}) or 0


def _changes(operation: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "memory_access_key_changes_total", {"operation": operation, "outcome": outcome}
    )
    return value or 0


def test_each_lookup_and_key_change_reports_one_call() -> None:
    clocks = Clocks()
    service, calls = _observed(clocks)
    boot = service.bootstrap()
    created = service.create(OPERATOR, "bot", "acme", ["history:read"])
    assert service.authenticate(created.secret) is not None
    service.keys(OPERATOR)
    service.revoke(OPERATOR, created.key.key_id)
    assert calls.operations() == ["bootstrap", "create_key", "authenticate", "keys", "revoke_key"]
    assert all(c.context == "access" and c.ok for c in calls.seen)
    assert isinstance(calls.seen[0].result, CreatedKey) and boot == calls.seen[0].result
    assert isinstance(calls.seen[2].result, ApiKey)


def test_a_cache_hit_and_the_pure_checks_report_nothing() -> None:
    service, calls = _observed(Clocks())
    created = service.create(OPERATOR, "bot", "acme", ["history:read"])
    service.authenticate(created.secret)
    before = len(calls.seen)
    assert isinstance(service.cached(created.secret), ApiKey)
    service.check_new_key("another bot", ["history:read"])
    service.own_key(OPERATOR)
    assert len(calls.seen) == before


def test_lookups_are_counted_by_outcome() -> None:
    clocks = Clocks()
    service, calls = _observed(clocks)
    created = service.create(
        OPERATOR, "bot", "acme", ["history:read"], expires_at=clocks.wall + timedelta(hours=1)
    )
    ok, unknown, expired = _lookups("ok"), _lookups("unknown"), _lookups("expired")
    service.authenticate(created.secret)
    service.authenticate("mem_" + "A" * 43)
    clocks.wall += timedelta(hours=2)
    clocks.mono += KEY_CACHE_SECONDS
    with pytest.raises(KeyExpired):
        service.authenticate(created.secret)
    assert (_lookups("ok"), _lookups("unknown"), _lookups("expired")) == (
        ok + 1,
        unknown + 1,
        expired + 1,
    )
    assert isinstance(calls.seen[-1].error, KeyExpired)


def test_a_refused_change_is_reported_with_its_error() -> None:
    service, calls = _observed(Clocks())
    reader = service.create(OPERATOR, "reader", "acme", ["history:read"]).key
    forbidden = _changes("create_key", "forbidden")
    with pytest.raises(Forbidden):
        service.create(reader, "escalated", "acme", ["admin"])
    assert calls.seen[-1].operation == "create_key"
    assert isinstance(calls.seen[-1].error, Forbidden)
    assert _changes("create_key", "forbidden") == forbidden + 1


def test_the_service_log_never_holds_a_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="memory.service")
    service, _ = _observed(Clocks())
    created = service.create(OPERATOR, "bot", "acme", ["history:read"])
    service.authenticate(created.secret)
    lines = [r for r in caplog.records if r.name == "memory.service"]
    assert {r.getMessage() for r in lines} == {"access.create_key done", "access.authenticate done"}
    assert all(created.secret not in str(r.__dict__) for r in lines)
