"""`PolicyService`: the one door of the policy context, and its observers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.fakes import TEST_ACTOR, InMemoryAuditTrail

from memory.application.observer import ServiceCall
from memory.application.policy.commands import PolicyCommands
from memory.application.policy.ports import (
    ReembedProgress,
    ReembedReport,
    ResultRows,
    TrackingTable,
)
from memory.application.policy.queries import PolicyQueries
from memory.application.policy.service import PolicyService
from memory.domain.active_model import ActiveModelDrop
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import AlreadyExists, NotFound
from memory.domain.policy.cursor import CursorCodec
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.metrics import PolicyMetrics

OPS = Actor("key_0123456789abcdef", "ops")


class EmptyReadModel:
    model_id = "hash:384"

    def search(self, vector: Any, request: Any, after: Any, timeout: float) -> ResultRows:
        return ResultRows([], False)

    def get(self, embedding_ref: Any, query: Any, timeout: float, view: Any) -> None:
        return None


class ModelRows:
    """`PolicyModelStore` in memory: rows per model, positions, drops."""

    def __init__(self, rows: dict[str, int]) -> None:
        self.rows = dict(rows)
        self.dropped: list[str] = []
        # Tables without rows: a re-embed that failed before its first row.
        self.tables: list[TrackingTable] = []

    def stored_id(self, spec: str) -> str:
        return spec.strip().removesuffix(":latest")

    def head(self) -> int | None:
        return 7

    def rows_per_model(self) -> dict[str, int]:
        return dict(self.rows)

    def position(self, model_id: str) -> int | None:
        return 7 if model_id in self.rows else None

    def drop(self, model_id: str) -> int:
        self.dropped.append(model_id)
        self.tables = [t for t in self.tables if t.model != model_id]
        return self.rows.pop(model_id, 0)

    def tracking_tables(self, known_models: Sequence[str]) -> list[TrackingTable]:
        return [TrackingTable(f"t_{m}", m) for m in self.rows] + self.tables

    def drop_tracking_table(self, table: str) -> None:
        self.dropped.append(table)
        self.tables = [t for t in self.tables if t.table != table]

    def reembed(
        self, spec: str, *, rebuild: bool, on_progress: ReembedProgress | None
    ) -> ReembedReport:
        return ReembedReport(spec, None, 7, 7, 3, 0)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[ServiceCall] = []

    def observe(self, call: ServiceCall) -> None:
        self.calls.append(call)


@pytest.fixture
def audit() -> InMemoryAuditTrail:
    return InMemoryAuditTrail()


@pytest.fixture
def service(
    memory_log: EventSourcedPolicyLog,
    counting_model: Callable[..., Any],
    told_waiter: Any,
    audit: InMemoryAuditTrail,
) -> tuple[PolicyService, Recorder, ModelRows]:
    model = counting_model()
    commands = PolicyCommands(
        memory_log, model, told_waiter, audit=audit, max_content_chars=200, wait_timeout=1
    )
    queries = PolicyQueries(
        memory_log, EmptyReadModel(), model, CursorCodec(b"k" * 32), search_timeout=2.0
    )
    recorder, rows = Recorder(), ModelRows({"hash:384": 2, "ollama:bge-m3": 2})
    svc = PolicyService(
        commands,
        queries,
        rows,
        active_model="hash:384",
        audit=audit,
        observers=(recorder, PolicyMetrics()),
    )
    return svc, recorder, rows


def test_every_call_is_reported_once_with_its_result_or_error(
    service: tuple[PolicyService, Recorder, ModelRows],
) -> None:
    svc, recorder, _ = service
    receipt = svc.store("p1", "Travel must be approved.", actor=TEST_ACTOR)
    with pytest.raises(AlreadyExists):
        svc.store("p1", "again", actor=TEST_ACTOR)
    svc.search("travel")
    assert [(c.context, c.operation, c.ok) for c in recorder.calls] == [
        ("policy", "store", True),
        ("policy", "store", False),
        ("policy", "search", True),
    ]
    assert recorder.calls[0].result == receipt
    assert isinstance(recorder.calls[1].error, AlreadyExists)


def test_metrics_observe_the_service_not_the_routes(
    service: tuple[PolicyService, Recorder, ModelRows],
) -> None:
    def count(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before_ok = count("memory_policy_commands_total", command="update", outcome="ok")
    before_missing = count("memory_policy_commands_total", command="update", outcome="not_found")
    before_search = count("memory_policy_searches_total", outcome="ok")
    svc = service[0]
    with pytest.raises(NotFound):
        svc.update("nope", "text", actor=TEST_ACTOR)
    svc.store("p1", "Travel must be approved.", actor=TEST_ACTOR)
    svc.update("p1", "Travel must be approved in writing.", actor=TEST_ACTOR)
    svc.search("travel")
    assert count("memory_policy_commands_total", command="update", outcome="ok") == before_ok + 1
    assert (
        count("memory_policy_commands_total", command="update", outcome="not_found")
        == before_missing + 1
    )
    assert count("memory_policy_searches_total", outcome="ok") == before_search + 1


def test_an_observer_that_fails_never_fails_the_call(
    service: tuple[PolicyService, Recorder, ModelRows], caplog: pytest.LogCaptureFixture
) -> None:
    svc = service[0]

    class Broken:
        def observe(self, call: ServiceCall) -> None:
            raise RuntimeError("metrics backend down")

    svc.observe(Broken())
    assert svc.store("p1", "Travel must be approved.", actor=TEST_ACTOR).version == 1
    assert "observer" in caplog.text


def test_drop_model_refuses_the_active_model_and_unknown_ones(
    service: tuple[PolicyService, Recorder, ModelRows], audit: InMemoryAuditTrail
) -> None:
    svc, _, rows = service
    with pytest.raises(ActiveModelDrop, match="hash:384 is the active policy model"):
        svc.drop_model(" hash:384 ", actor=OPS)
    with pytest.raises(NotFound, match="no rows or tracking table for model other"):
        svc.drop_model("other", actor=OPS)
    assert rows.dropped == [] and audit.recorded == []
    assert svc.drop_model("ollama:bge-m3:latest", actor=OPS) == ("ollama:bge-m3", 2)
    assert rows.dropped == ["ollama:bge-m3"]
    (dropped,) = audit.recorded
    assert (dropped.action, dropped.actor, dropped.target) == (
        "model.dropped",
        OPS,
        "ollama:bge-m3",
    )
    assert (dropped.before, dropped.after) == ({"rows": 2}, {"rows_deleted": 2})


def test_a_reembed_records_its_start(
    service: tuple[PolicyService, Recorder, ModelRows], audit: InMemoryAuditTrail
) -> None:
    svc, _, _ = service
    svc.reembed("ollama:bge-m3:latest", actor=OPS, rebuild=True)
    (started,) = audit.recorded
    assert started.action == "reembed.started" and started.actor == OPS
    assert started.after == {"model": "ollama:bge-m3", "rebuild": True}


def test_models_lists_stored_ones_and_the_active_one(
    service: tuple[PolicyService, Recorder, ModelRows],
) -> None:
    svc, _, rows = service
    rows.rows = {"ollama:bge-m3": 4}
    listed = {(m.model, m.rows, m.position, m.active) for m in svc.models()}
    assert listed == {("hash:384", 0, None, True), ("ollama:bge-m3", 4, 7, False)}


def test_tracking_tables_a_failed_reembed_left_are_listed_and_dropped(
    service: tuple[PolicyService, Recorder, ModelRows],
) -> None:
    svc, _, rows = service
    rows.tables = [
        TrackingTable("policy_projection_x_tracking", "ollama:failed"),
        TrackingTable("policy_projection_old_tracking", None),
    ]
    listed = {m.model: m.rows for m in svc.models()}
    assert listed["ollama:failed"] == 0
    assert svc.untied_tracking_tables() == ["policy_projection_old_tracking"]
    assert svc.drop_model("ollama:failed", actor=OPS) == ("ollama:failed", 0)
    assert svc.drop_model("policy_projection_old_tracking", actor=OPS) == (
        "policy_projection_old_tracking",
        0,
    )
    assert rows.tables == []
    assert "ollama:failed" not in {m.model for m in svc.models()}
