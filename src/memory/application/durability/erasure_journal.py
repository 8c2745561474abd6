"""The erasure journal: every erasure, recorded where a restore of the database cannot
undo it, and re-applied after a restore (docs/adr/0106).

`JournalingAuditTrail` wraps the audit trail every erasure already goes through (org and
history erasure, policy deletion: docs/adr/0079), so no use case needs to know about
backups: the record is appended inside the erasure's transaction, before it commits, and a
committed erasure is therefore always in the journal. One that then failed to commit is in
it too; re-applying it erases what an authorised actor asked to erase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from memory.application.audit.ports import AuditPage, AuditQuery, AuditTrail
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.durability.erasure_record import ERASURE_ACTIONS, ErasureRecord, to_reapply
from memory.domain.errors import NotFound

T = TypeVar("T")


class ErasureJournal(Protocol):
    def append(self, record: ErasureRecord) -> None:
        """Durably (on disk when this returns)."""
        ...

    def records(self) -> list[ErasureRecord]: ...

    def prune(self, before: datetime) -> int:
        """Forget records older than `before` (no backup reaches that far back any more);
        how many went."""
        ...


class JournalingAuditTrail:
    """`AuditTrail` that also journals each erasure it records."""

    def __init__(
        self,
        inner: AuditTrail,
        journal: ErasureJournal,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._inner = inner
        self._journal = journal
        self._clock = clock

    def record(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, AuditedChange]]
    ) -> T:
        if action not in ERASURE_ACTIONS:
            return self._inner.record(actor, action, change)

        def journaled() -> tuple[T, AuditedChange]:
            result, audited = change()
            self._journal.append(ErasureRecord.of(action, audited, self._clock()))
            return result, audited

        return self._inner.record(actor, action, journaled)

    def record_many(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, list[AuditedChange]]]
    ) -> T:
        if action not in ERASURE_ACTIONS:
            return self._inner.record_many(actor, action, change)

        def journaled() -> tuple[T, list[AuditedChange]]:
            result, audited = change()
            for each in audited:
                self._journal.append(ErasureRecord.of(action, each, self._clock()))
            return result, audited

        return self._inner.record_many(actor, action, journaled)

    def entries(self, query: AuditQuery) -> AuditPage:
        return self._inner.entries(query)


class HistoryErasure(Protocol):
    """What re-applying needs of the history context's service."""

    def erase_org(self, org_id: str, *, actor: Actor) -> object: ...

    def erase_events(
        self,
        org_id: str,
        *,
        event_ids: Sequence[str] | None = None,
        sender: str | None = None,
        actor: Actor,
    ) -> object: ...


class PolicyDeletion(Protocol):
    def delete(self, policy_id: str, *, actor: Actor, namespace: str | None = None) -> bool: ...


class SenderDirectory(Protocol):
    def senders(self, org_id: str) -> list[str]:
        """The distinct senders of the org's stored events."""
        ...


@dataclass(frozen=True, slots=True)
class ReapplyReport:
    """`considered`: records at or after the restore target (less the commit margin);
    `reapplied`: those that erased something; the rest found it already gone."""

    considered: int
    reapplied: int
    by_action: dict[str, int]


class ReapplyErasures:
    """After a restore to `restored_to`, erase again what was erased after it."""

    def __init__(
        self,
        journal: ErasureJournal,
        history: HistoryErasure,
        policies: PolicyDeletion,
        senders: SenderDirectory,
        sender_reference: Callable[[str, str], str],
    ) -> None:
        """`sender_reference(org_id, sender)`: how the audit log (and so the journal) names
        an erased sender, under the restored database's own key (docs/adr/0100)."""
        self._journal = journal
        self._history = history
        self._policies = policies
        self._senders = senders
        self._sender_reference = sender_reference

    def __call__(self, restored_to: datetime, *, actor: Actor) -> ReapplyReport:
        records = to_reapply(self._journal.records(), restored_to)
        reapplied = 0
        by_action: dict[str, int] = {}
        for record in records:
            if self._reapply(record, actor):
                reapplied += 1
                by_action[record.action.value] = by_action.get(record.action.value, 0) + 1
        return ReapplyReport(considered=len(records), reapplied=reapplied, by_action=by_action)

    def _reapply(self, record: ErasureRecord, actor: Actor) -> bool:
        """True if the erasure removed something from the restored database."""
        if record.action is Action.POLICY_DELETED:
            try:
                self._policies.delete(record.target, actor=actor, namespace=record.namespace)
            except NotFound:
                return False
            return True
        org_id = record.org_id or record.target
        if record.action is Action.ORG_ERASED:
            return _removed(self._history.erase_org(org_id, actor=actor))
        if record.event_ids:
            return _removed(
                self._history.erase_events(org_id, event_ids=list(record.event_ids), actor=actor)
            )
        removed = False
        for sender in self._senders.senders(org_id):
            if self._sender_reference(org_id, sender) == record.sender_hmac:
                report = self._history.erase_events(org_id, sender=sender, actor=actor)
                removed = _removed(report) or removed
        return removed


def _removed(report: object) -> bool:
    counts = [getattr(report, name, 0) for name in ("events_deleted", "windows_deleted")]
    extra = [getattr(report, name, 0) for name in ("partitions_deleted", "flags_deleted")]
    return any(int(c) > 0 for c in counts + extra) or bool(
        getattr(report, "retention_deleted", False)
    )
