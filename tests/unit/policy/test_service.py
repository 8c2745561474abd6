"""`PolicyService`: the one door of the policy context, and its observers."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.fakes import TEST_ACTOR, FakeModel, InMemoryAuditTrail, InMemoryPolicy

from memory.application.observer import ServiceCall
from memory.application.policy.ports import ProjectorFailed
from memory.application.policy.service import PolicyService
from memory.domain.active_model import ActiveModelDrop
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import AlreadyExists, NotFound
from memory.domain.policy.cursor import CursorCodec
from memory.domain.policy.search import PolicySearch
from memory.infrastructure.policy.metrics import PolicyMetrics

OPS = Actor("key_0123456789abcdef", "ops")


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
    policy: InMemoryPolicy, audit: InMemoryAuditTrail
) -> tuple[PolicyService, Recorder, InMemoryPolicy]:
    recorder = Recorder()
    return build_service(policy, audit, recorder, PolicyMetrics()), recorder, policy


def build_service(
    policy: InMemoryPolicy, audit: InMemoryAuditTrail, *observers: Any
) -> PolicyService:
    """The service as the composition root builds it, on the ports in memory."""
    return PolicyService(
        policy.ports(),
        policy.model,
        cursors=CursorCodec(b"k" * 32),
        audit=audit,
        max_content_chars=200,
        wait_timeout=1.0,
        search_timeout=2.0,
        observers=observers,
    )


def test_every_call_is_reported_once_with_its_result_or_error(
    service: tuple[PolicyService, Recorder, InMemoryPolicy],
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
    service: tuple[PolicyService, Recorder, InMemoryPolicy],
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
    service: tuple[PolicyService, Recorder, InMemoryPolicy], caplog: pytest.LogCaptureFixture
) -> None:
    svc = service[0]

    class Broken:
        def observe(self, call: ServiceCall) -> None:
            raise RuntimeError("metrics backend down")

    svc.observe(Broken())
    assert svc.store("p1", "Travel must be approved.", actor=TEST_ACTOR).version == 1
    assert "observer" in caplog.text


def store_three(svc: PolicyService) -> None:
    for i in range(3):
        svc.store(f"p{i}", f"Policy number {i} about travel.", actor=TEST_ACTOR)


def test_drop_model_refuses_the_active_model_and_unknown_ones(
    service: tuple[PolicyService, Recorder, InMemoryPolicy], audit: InMemoryAuditTrail
) -> None:
    svc, _, policy = service
    store_three(svc)
    svc.reembed("test:other@384", actor=OPS)
    audit.recorded.clear()
    with pytest.raises(ActiveModelDrop, match="hash:384 is the active policy model"):
        svc.drop_model(" hash:384 ", actor=OPS)
    with pytest.raises(NotFound, match="no rows or tracking table for model other"):
        svc.drop_model("other", actor=OPS)
    assert audit.recorded == []
    assert policy.models.rows_per_model() == {"hash:384": 3, "test:other@384": 3}
    assert svc.drop_model("test:other@384", actor=OPS) == ("test:other@384", 3)
    assert policy.models.rows_per_model() == {"hash:384": 3}
    (dropped,) = audit.recorded
    assert (dropped.action, dropped.actor, dropped.target) == (
        "model.dropped",
        OPS,
        "test:other@384",
    )
    assert (dropped.before, dropped.after) == ({"rows": 3}, {"rows_deleted": 3})
    # Search kept answering from the active model's rows.
    assert len(svc.search(PolicySearch("travel", similarity_threshold=0.0)).results) == 3


def test_a_reembed_records_its_start_and_replays_the_log_into_the_models_rows(
    service: tuple[PolicyService, Recorder, InMemoryPolicy], audit: InMemoryAuditTrail
) -> None:
    svc, _, policy = service
    store_three(svc)
    svc.delete("p2", actor=TEST_ACTOR)
    audit.recorded.clear()
    seen: list[tuple[int | None, int | None]] = []
    report = svc.reembed(
        "test:other@384", actor=OPS, rebuild=True, on_progress=lambda *p: seen.append(p)
    )
    (started,) = audit.recorded
    assert started.action == "reembed.started" and started.actor == OPS
    assert started.after == {"model": "test:other@384", "rebuild": True}
    assert (report.model, report.reached, report.head) == ("test:other@384", 4, 4)
    # The deleted policy's text is not embedded: a later event replaced it.
    assert report.texts_embedded == 2
    assert seen == [(4, 4)]
    assert policy.models.rows_per_model()["test:other@384"] == 2


def test_models_lists_stored_ones_and_the_active_one(
    service: tuple[PolicyService, Recorder, InMemoryPolicy],
) -> None:
    svc, _, _ = service
    assert {(m.model, m.rows, m.position, m.active) for m in svc.models()} == {
        ("hash:384", 0, None, True)
    }
    store_three(svc)
    svc.reembed("test:other@384", actor=OPS)
    listed = {(m.model, m.rows, m.position, m.active) for m in svc.models()}
    assert listed == {("hash:384", 3, 3, True), ("test:other@384", 3, 3, False)}


def test_tracking_tables_a_failed_reembed_left_are_listed_and_dropped(
    service: tuple[PolicyService, Recorder, InMemoryPolicy],
) -> None:
    svc, _, policy = service
    store_three(svc)
    policy.models.build_model = lambda spec: FakeModel("test:failed@384", fail_after=0)
    with pytest.raises(ProjectorFailed, match="connection refused"):
        svc.reembed("test:failed@384", actor=OPS)
    policy.models.untied.append("policy_projection_old_tracking")
    listed = {m.model: m.rows for m in svc.models()}
    assert listed["test:failed@384"] == 0
    assert svc.untied_tracking_tables() == ["policy_projection_old_tracking"]
    assert svc.drop_model("test:failed@384", actor=OPS) == ("test:failed@384", 0)
    assert svc.drop_model("policy_projection_old_tracking", actor=OPS) == (
        "policy_projection_old_tracking",
        0,
    )
    assert svc.untied_tracking_tables() == []
    assert "test:failed@384" not in {m.model for m in svc.models()}
