"""The erasure journal's rules (docs/adr/0106): what a record keeps, which records a
restore re-applies, that journaling rides on the audit trail, and how re-applying counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import InMemoryAuditTrail, InMemoryErasureJournal

from memory.application.durability.erasure_journal import JournalingAuditTrail, ReapplyErasures
from memory.domain.audit.admin_action import Action, Actor, AuditedChange, sender_reference
from memory.domain.durability.erasure_record import COMMIT_MARGIN, ErasureRecord, to_reapply
from memory.domain.errors import NotFound

ACTOR = Actor("cli", "test")
KEY = b"k" * 32
T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _record(at: datetime, action: Action = Action.ORG_ERASED, **fields: object) -> ErasureRecord:
    return ErasureRecord(recorded_at=at, action=action, target="acme", org_id="acme", **fields)  # type: ignore[arg-type]


def test_a_record_keeps_ids_and_digests_from_the_audited_change_and_no_counts() -> None:
    by_sender = AuditedChange(
        target="acme",
        before=None,
        after={"by": "sender", "sender_hmac": "ab" * 32, "events_deleted": 3},
        org_id="acme",
    )
    record = ErasureRecord.of(Action.HISTORY_ERASED, by_sender, T)
    assert record.sender_hmac == "ab" * 32 and record.event_ids == ()
    assert "events_deleted" not in record.to_json()
    deleted = AuditedChange(
        target="refunds", before={"version": 1}, after={"namespace": "org:acme", "version": 2}
    )
    policy = ErasureRecord.of(Action.POLICY_DELETED, deleted, T)
    assert policy.namespace == "org:acme" and policy.target == "refunds"
    for each in (record, policy, _record(T, Action.HISTORY_ERASED, event_ids=("e1", "e2"))):
        assert ErasureRecord.from_json(each.to_json()) == each


def test_a_restore_reapplies_records_after_its_target_less_the_commit_margin_oldest_first() -> None:
    inside = _record(T - COMMIT_MARGIN + timedelta(seconds=1))
    outside = _record(T - COMMIT_MARGIN - timedelta(seconds=1))
    later = _record(T + timedelta(hours=1))
    assert to_reapply([later, outside, inside], T) == [inside, later]


def test_the_journaling_trail_journals_erasures_inside_the_change_and_nothing_else() -> None:
    journal = InMemoryErasureJournal()
    trail = JournalingAuditTrail(InMemoryAuditTrail(), journal, clock=lambda: T)
    change = AuditedChange(target="acme", before=None, after={}, org_id="acme")
    assert trail.record(ACTOR, Action.ORG_ERASED, lambda: ("done", change)) == "done"
    trail.record(ACTOR, Action.RETENTION_SET, lambda: (None, change))

    def failing() -> tuple[None, AuditedChange]:
        raise RuntimeError("the erasure failed before it could report")

    with pytest.raises(RuntimeError):
        trail.record(ACTOR, Action.ORG_ERASED, failing)
    assert [r.action for r in journal.records()] == [Action.ORG_ERASED]


@dataclass
class Erased:
    events_deleted: int = 0
    windows_deleted: int = 0


class FakeHistory:
    """Erasure by org, ids or sender over a dict of org -> {event_id: sender}."""

    def __init__(self, events: dict[str, dict[str, str]]) -> None:
        self.events = events

    def erase_org(self, org_id: str, *, actor: Actor) -> Erased:
        return Erased(events_deleted=len(self.events.pop(org_id, {})))

    def erase_events(
        self,
        org_id: str,
        *,
        event_ids: Sequence[str] | None = None,
        sender: str | None = None,
        actor: Actor,
    ) -> Erased:
        org = self.events.get(org_id, {})
        gone = [e for e, s in org.items() if (event_ids and e in event_ids) or s == sender]
        for event_id in gone:
            del org[event_id]
        return Erased(events_deleted=len(gone))

    def senders(self, org_id: str) -> list[str]:
        return sorted(set(self.events.get(org_id, {}).values()))


class FakePolicies:
    def __init__(self, live: set[tuple[str, str | None]]) -> None:
        self.live = live

    def delete(self, policy_id: str, *, actor: Actor, namespace: str | None = None) -> bool:
        if (policy_id, namespace) not in self.live:
            raise NotFound(f"policy {policy_id} does not exist")
        self.live.remove((policy_id, namespace))
        return True


def test_reapplying_counts_only_erasures_that_removed_something_and_finds_senders_by_digest() -> (
    None
):
    history = FakeHistory(
        {"globex": {"g1": "ann"}, "acme": {"a1": "bob", "a2": "ali", "a3": "ali"}}
    )
    policies = FakePolicies({("refunds", "org:acme")})
    journal = InMemoryErasureJournal()
    after = T + timedelta(minutes=5)
    for record in (
        ErasureRecord(after, Action.ORG_ERASED, "globex", "globex"),
        ErasureRecord(after, Action.ORG_ERASED, "initech", "initech"),  # nothing there
        ErasureRecord(
            after,
            Action.HISTORY_ERASED,
            "acme",
            "acme",
            sender_hmac=sender_reference(KEY, "acme", "ali"),
        ),
        ErasureRecord(after, Action.HISTORY_ERASED, "acme", "acme", event_ids=("a1",)),
        ErasureRecord(after, Action.POLICY_DELETED, "refunds", "acme", namespace="org:acme"),
        ErasureRecord(after, Action.POLICY_DELETED, "gone", None, namespace="global"),
        ErasureRecord(T - timedelta(hours=1), Action.ORG_ERASED, "acme", "acme"),  # before T
    ):
        journal.append(record)
    reapply = ReapplyErasures(
        journal, history, policies, history, lambda o, s: sender_reference(KEY, o, s)
    )
    report = reapply(T, actor=ACTOR)
    assert (report.considered, report.reapplied) == (6, 4)
    assert report.by_action == {"org.erased": 1, "history.erased": 2, "policy.deleted": 1}
    assert history.events == {"acme": {}} and policies.live == set()
