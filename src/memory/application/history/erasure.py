"""Erasure: a person's chat events (by id or by sender), or everything an org has.

The guarantees are the retention purge's (docs/adr/0036): events and every embedded window
covering any of them go in one transaction, under the org's exclusive retention lock, and a
sweep that embeds a window meanwhile cannot write it (its upsert takes the lock shared and
writes only windows whose events all still exist). Erasing an org also closes its sweep
watermarks, after any sweeper still on one of its partitions is done (docs/adr/0064).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memory.application.audit.ports import AuditTrail
from memory.application.history.ports import PartitionLockFactory, WatermarkRepository
from memory.domain.audit.admin_action import Action, Actor, AuditedChange, sender_reference
from memory.domain.errors import InvalidInput
from memory.domain.history.partition import Partition

# One request erases at most this many ids: the statement binds them as one array, and a
# larger erasure is a sender erasure or several requests.
MAX_ERASE_EVENT_IDS = 1000
MAX_SENDER_CHARS = 512


@dataclass(frozen=True, slots=True)
class ErasureReport:
    events_deleted: int
    windows_deleted: int


@dataclass(frozen=True, slots=True)
class OrgErasureReport:
    org_id: str
    events_deleted: int
    windows_deleted: int
    partitions_deleted: int
    watermarks_closed: int
    flags_deleted: int
    retention_deleted: bool


@dataclass(frozen=True, slots=True)
class ErasedOrg:
    """What one org-erasure transaction removed, and whose watermarks are left to close."""

    events_deleted: int
    windows_deleted: int
    partitions: Sequence[Partition]
    models: Sequence[str]
    flags_deleted: int
    retention_deleted: bool


class ErasureStore(Protocol):
    def erase_events(self, org_id: str, event_ids: Sequence[str]) -> ErasureReport:
        """Delete these events and every window covering any of them, in one transaction."""
        ...

    def erase_sender(self, org_id: str, sender: str) -> ErasureReport:
        """Delete the sender's events and every window covering any of them, likewise."""
        ...

    def erase_org(self, org_id: str) -> ErasedOrg:
        """Delete the org's events, windows, partitions, flags and retention, likewise."""
        ...


class EraseHistory:
    def __init__(
        self,
        store: ErasureStore,
        watermarks: WatermarkRepository,
        locks: PartitionLockFactory,
        *,
        audit: AuditTrail,
        active_model: str,
        sender_key: bytes,
    ) -> None:
        """`sender_key`: the server's key of erased-sender references (docs/adr/0100)."""
        self._store = store
        self._sender_key = sender_key
        self._watermarks = watermarks
        self._locks = locks
        self._audit = audit
        self._active_model = active_model

    def events(
        self,
        org_id: str,
        *,
        event_ids: Sequence[str] | None = None,
        sender: str | None = None,
        actor: Actor,
    ) -> ErasureReport:
        """Exactly one of `event_ids` (1 to MAX_ERASE_EVENT_IDS ids) and `sender`. Checked
        before anything changes: a refused request records nothing."""
        if (event_ids is None) == (sender is None):
            raise InvalidInput("body", "give either event_ids or sender, not both or neither")
        if sender is not None:
            if not sender.strip():
                raise InvalidInput("sender", "must not be blank")
            if len(sender) > MAX_SENDER_CHARS:
                raise InvalidInput("sender", f"must be at most {MAX_SENDER_CHARS} characters")
            by_sender = sender

            def erase_sender() -> tuple[ErasureReport, AuditedChange]:
                report = self._store.erase_sender(org_id, by_sender)
                return report, _erasure_change(
                    org_id,
                    {
                        "by": "sender",
                        "sender_hmac": sender_reference(self._sender_key, org_id, by_sender),
                    },
                    report,
                )

            return self._audit.record(actor, Action.HISTORY_ERASED, erase_sender)
        assert event_ids is not None
        if not 1 <= len(event_ids) <= MAX_ERASE_EVENT_IDS:
            raise InvalidInput(
                "event_ids",
                f"must hold between 1 and {MAX_ERASE_EVENT_IDS} ids, got {len(event_ids)}",
            )
        for i, event_id in enumerate(event_ids):
            if not event_id:
                raise InvalidInput(f"event_ids.{i}", "must not be empty")
        ids = sorted(set(event_ids))

        def erase_ids() -> tuple[ErasureReport, AuditedChange]:
            report = self._store.erase_events(org_id, ids)
            return report, _erasure_change(org_id, {"by": "event_ids", "event_ids": ids}, report)

        return self._audit.record(actor, Action.HISTORY_ERASED, erase_ids)

    def org(self, org_id: str, *, actor: Actor) -> OrgErasureReport:
        def erase() -> tuple[ErasedOrg, AuditedChange]:
            erased = self._store.erase_org(org_id)
            return erased, AuditedChange(
                target=org_id,
                before=None,
                after={
                    "events_deleted": erased.events_deleted,
                    "windows_deleted": erased.windows_deleted,
                    "partitions_deleted": len(erased.partitions),
                    "flags_deleted": erased.flags_deleted,
                    "retention_deleted": erased.retention_deleted,
                },
                org_id=org_id,
            )

        # The rows and the record commit together; the watermark closes below are
        # event-sourced in their own store, idempotent, and follow (as a model drop's
        # resets do, docs/adr/0058).
        erased = self._audit.record(actor, Action.ORG_ERASED, erase)
        closed = 0
        models = sorted({*erased.models, self._active_model})
        # Waiting for each partition's sweep lock lets a sweeper that is still on it finish
        # (its windows are refused: their events are gone) before its watermark is closed,
        # so its last `Advanced` cannot land after the close.
        with self._locks.session(wait=True) as session:
            for partition in erased.partitions:
                for model in models:
                    with session.hold(partition, model):
                        watermark = self._watermarks.find(partition, model)
                        if watermark is not None and watermark.close():
                            self._watermarks.store(watermark)
                            closed += 1
        return OrgErasureReport(
            org_id=org_id,
            events_deleted=erased.events_deleted,
            windows_deleted=erased.windows_deleted,
            partitions_deleted=len(erased.partitions),
            watermarks_closed=closed,
            flags_deleted=erased.flags_deleted,
            retention_deleted=erased.retention_deleted,
        )


def _erasure_change(org_id: str, how: dict[str, object], report: ErasureReport) -> AuditedChange:
    return AuditedChange(
        target=org_id,
        before=None,
        after={
            **how,
            "events_deleted": report.events_deleted,
            "windows_deleted": report.windows_deleted,
        },
        org_id=org_id,
    )
