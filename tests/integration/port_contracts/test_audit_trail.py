"""`AuditTrail`: the same cases against `InMemoryAuditTrail` and `PostgresAuditTrail`
(docs/adr/0125)."""

from __future__ import annotations

import pytest
from tests.fakes import TEST_ACTOR

from memory.application.audit.ports import AuditQuery, AuditTrail
from memory.domain.audit.admin_action import Action, AuditedChange


def change(target: str, org_id: str | None = None) -> tuple[str, AuditedChange]:
    return target, AuditedChange(target=target, before=None, after={"n": 1}, org_id=org_id)


def test_a_change_is_recorded_with_its_actor_and_returns_its_result(
    audit_trail: AuditTrail,
) -> None:
    assert audit_trail.record(TEST_ACTOR, Action.RETENTION_SET, lambda: change("acme", "acme"))
    (entry,) = audit_trail.entries(AuditQuery()).entries
    assert (entry.actor, entry.action, entry.target, entry.org_id) == (
        TEST_ACTOR,
        "retention.set",
        "acme",
        "acme",
    )
    assert (entry.before, entry.after) == (None, {"n": 1})


def test_a_change_that_raises_records_nothing(audit_trail: AuditTrail) -> None:
    def failing() -> tuple[None, AuditedChange]:
        raise RuntimeError("the change failed")

    with pytest.raises(RuntimeError):
        audit_trail.record(TEST_ACTOR, Action.RETENTION_SET, failing)
    assert audit_trail.entries(AuditQuery()).entries == []


def test_many_changes_are_recorded_one_entry_each(audit_trail: AuditTrail) -> None:
    def several() -> tuple[int, list[AuditedChange]]:
        return 2, [change("p1")[1], change("p2")[1]]

    assert audit_trail.record_many(TEST_ACTOR, Action.POLICY_STORED, several) == 2
    assert [e.target for e in audit_trail.entries(AuditQuery()).entries] == ["p2", "p1"]


def test_entries_are_newest_first_filtered_by_org_and_paged_by_id(
    audit_trail: AuditTrail,
) -> None:
    for i in range(5):
        org = "acme" if i % 2 == 0 else "globex"
        audit_trail.record(
            TEST_ACTOR, Action.RETENTION_SET, lambda i=i, org=org: change(f"t{i}", org)
        )
    acme = audit_trail.entries(AuditQuery(org_id="acme", limit=2))
    assert [e.target for e in acme.entries] == ["t4", "t2"]
    assert acme.next_before_id == acme.entries[-1].id
    rest = audit_trail.entries(AuditQuery(org_id="acme", limit=2, before_id=acme.next_before_id))
    assert ([e.target for e in rest.entries], rest.next_before_id) == (["t0"], None)
    everything = audit_trail.entries(AuditQuery()).entries
    assert [e.target for e in everything] == ["t4", "t3", "t2", "t1", "t0"]
    assert [e.id for e in everything] == sorted((e.id for e in everything), reverse=True)
