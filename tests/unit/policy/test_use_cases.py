"""The policy use cases through `PolicyService`, wired as the composition root wires them,
on the policy ports in memory (tests/fakes.py): what a caller sees, with no database."""

from __future__ import annotations

import anyio
import pytest
from prometheus_client import REGISTRY
from tests.fakes import TEST_ACTOR, InMemoryAuditTrail, InMemoryPolicy
from tests.unit.policy.test_service import build_service

from memory.application.policy.leadership import ProjectorRole
from memory.application.policy.ports import ProjectorFailed
from memory.application.policy.reach import Reach
from memory.application.policy.service import PolicyService
from memory.domain.errors import InvalidInput, NotFound
from memory.domain.policy.search import PolicySearch
from memory.entrypoints.workers import policy as policy_worker


@pytest.fixture
def svc(policy: InMemoryPolicy) -> PolicyService:
    return build_service(policy, InMemoryAuditTrail())


def test_a_stored_policy_is_found_by_search_and_by_its_reference(svc: PolicyService) -> None:
    receipt = svc.store(
        "travel", "Travel must be approved by a manager.", {"tags": ["t"]}, actor=TEST_ACTOR
    )
    svc.store("expenses", "Expenses are reimbursed monthly.", actor=TEST_ACTOR)
    assert receipt.searchable
    answer = svc.search(
        PolicySearch("Travel must be approved by a manager.", similarity_threshold=0.0)
    )
    assert answer.results[0].policy_id == "travel"
    assert answer.results[0].similarity == pytest.approx(1.0)
    document = svc.get_by_embedding(
        str(receipt.embedding_ref), origin="search", query="Travel must be approved by a manager."
    )
    assert (document.policy_id, document.similarity) == ("travel", pytest.approx(1.0))
    only_tagged = svc.search(
        PolicySearch("travel", similarity_threshold=0.0, filter={"tags": {"any": ["t"]}})
    )
    assert [r.policy_id for r in only_tagged.results] == ["travel"]


def test_an_org_sees_its_own_policies_and_the_global_ones_only(svc: PolicyService) -> None:
    svc.store("g", "a global rule about travel", actor=TEST_ACTOR)
    svc.store("a", "acme's rule about travel", actor=TEST_ACTOR, namespace="org:acme")
    svc.store("b", "globex's rule about travel", actor=TEST_ACTOR, namespace="org:globex")
    acme = Reach("acme")
    found = svc.search(PolicySearch("travel", similarity_threshold=0.0), reach=acme)
    assert {r.policy_id for r in found.results} == {"g", "a"}
    listed = svc.list_policies(reach=acme)
    assert {p.policy_id for p in listed.policies} == {"g", "a"}
    with pytest.raises(NotFound):
        svc.get("b", reach=acme)


def test_updates_and_deletions_reach_search(svc: PolicyService) -> None:
    svc.store("p1", "Badges must be worn at all times.", actor=TEST_ACTOR)
    svc.update("p1", "Visitors must be escorted at all times.", actor=TEST_ACTOR)
    answer = svc.search(
        PolicySearch("Visitors must be escorted at all times.", similarity_threshold=0.9)
    )
    assert [(r.policy_id, r.version) for r in answer.results] == [("p1", 2)]
    assert [v.version for v in svc.versions("p1")] == [1, 2]
    assert svc.delete("p1", actor=TEST_ACTOR)
    assert (
        svc.search(PolicySearch("Visitors must be escorted", similarity_threshold=0.0)).results
        == []
    )
    with pytest.raises(NotFound):
        svc.get("p1")


def test_search_pages_by_cursor_without_repeating_a_result(svc: PolicyService) -> None:
    for i in range(7):
        svc.store(f"p{i}", f"policy {i} on working from home", actor=TEST_ACTOR)
    seen: list[str] = []
    cursor = None
    while True:
        page = svc.search(
            PolicySearch("working from home", similarity_threshold=0.0, limit=3, cursor=cursor)
        )
        seen += [r.policy_id for r in page.results]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == [f"p{i}" for i in range(7)]
    with pytest.raises(InvalidInput):  # a cursor pages the search it came from
        svc.search(PolicySearch("another query", similarity_threshold=0.0, cursor=page_cursor(svc)))


def page_cursor(svc: PolicyService) -> str:
    cursor = svc.search(
        PolicySearch("working from home", similarity_threshold=0.0, limit=1)
    ).next_cursor
    assert cursor is not None
    return cursor


def test_a_write_no_projector_took_up_is_searchable_once_a_leader_projects_it(
    svc: PolicyService, policy: InMemoryPolicy
) -> None:
    policy.waiter.paused = True
    receipt = svc.store("p1", "Laptops are encrypted.", actor=TEST_ACTOR)
    assert not receipt.searchable
    assert (
        svc.search(PolicySearch("Laptops are encrypted.", similarity_threshold=0.0)).results == []
    )
    assert svc.projection_status().lag_events == 1
    assert svc.lead_projection()
    status = svc.check_projection()
    assert (status.role, status.running_here, status.position, status.lag_events) == (
        ProjectorRole.LEADER,
        True,
        1,
        0,
    )
    assert [r.policy_id for r in svc.search("Laptops are encrypted.").results] == ["p1"]


def test_one_process_leads_the_projection_and_another_takes_over_when_it_stops(
    policy: InMemoryPolicy,
) -> None:
    first = build_service(policy, InMemoryAuditTrail())
    second = build_service(policy, InMemoryAuditTrail())
    assert first.projection_status().role == ProjectorRole.STOPPED
    assert first.lead_projection()
    assert not second.lead_projection()
    assert (second.projection_status().role, second.projection_alive()) == (
        ProjectorRole.STANDBY,
        False,
    )
    with pytest.raises(ProjectorFailed, match="not running"):
        second.check_projection()
    policy.projectors[0].lease_lost = True
    assert not first.projection_alive()
    first.stop_projection()
    assert first.projection_status().role == ProjectorRole.STOPPED
    assert second.lead_projection()
    assert second.projection_status().running_here


def test_a_failed_projection_is_reported_by_its_check_and_its_lag_published(
    svc: PolicyService, policy: InMemoryPolicy
) -> None:
    def lag() -> float | None:
        return REGISTRY.get_sample_value(
            "memory_policy_projector_lag_events", {"model": policy.model.identity.id}
        )

    observed = build_service(policy, InMemoryAuditTrail(), *policy_metrics())
    policy.waiter.paused = True
    observed.store("p1", "one", actor=TEST_ACTOR)
    observed.store("p2", "two", actor=TEST_ACTOR)
    assert observed.lead_projection()
    assert observed.check_projection().lag_events == 0
    assert lag() == 0
    policy.projectors[0].failure = "model server gone"
    with pytest.raises(ProjectorFailed, match="model server gone"):
        observed.check_projection()


def policy_metrics() -> tuple[object, ...]:
    from memory.infrastructure.policy.metrics import PolicyMetrics

    return (PolicyMetrics(),)


def test_the_worker_leads_projects_and_releases_the_lease_when_cancelled(
    svc: PolicyService, policy: InMemoryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(policy_worker, "PROJECTOR_CHECK_SECONDS", 0.01)
    policy.waiter.paused = True
    svc.store("p1", "Printers are shared.", actor=TEST_ACTOR)
    workers = policy_worker.PolicyWorkers(svc)

    async def run_until_projected() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(workers.run_projector)
            with anyio.fail_after(5):
                while svc.projection_status().position != 1:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()

    anyio.run(run_until_projected)
    assert svc.projection_status().role == ProjectorRole.STOPPED
    assert policy.leases.holders == {}
    assert [r.policy_id for r in svc.search("Printers are shared.").results] == ["p1"]
