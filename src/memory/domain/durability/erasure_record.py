"""`ErasureRecord`: what a restore needs to erase again, and nothing more.

A restore brings the database back as it was at its target time, so an org, a sender's
events or a policy erased after that time would come back. Each erasure therefore also goes
into a journal outside the database (beside the backups), and `memory db restore` re-applies
every one recorded after its target. A record names what was erased the way the audit log
does: org ids, event ids, policy ids and the keyed hash of a sender (docs/adr/0100), never
chat text or policy content (docs/adr/0106).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory.domain.audit.admin_action import Action, AuditedChange

# The erasures a restore must re-apply (policy deletion included: it removes content).
ERASURE_ACTIONS = frozenset({Action.ORG_ERASED, Action.HISTORY_ERASED, Action.POLICY_DELETED})
# A record is written inside the erasure's transaction, just before it commits: one recorded
# up to this long before the restore target may have committed after it. Re-applying an
# erasure that the restored database already holds changes nothing, so the margin only costs
# a few no-op re-applications.
COMMIT_MARGIN = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    recorded_at: datetime
    action: Action
    target: str
    org_id: str | None = None
    event_ids: tuple[str, ...] = field(default=())
    sender_hmac: str | None = None
    # A deleted policy's namespace ("global" or "org:<id>", docs/adr/0102).
    namespace: str | None = None

    @classmethod
    def of(cls, action: Action, change: AuditedChange, at: datetime) -> ErasureRecord:
        """From what an erasure reports for its audit event."""
        after: dict[str, Any] = change.after if isinstance(change.after, dict) else {}
        return cls(
            recorded_at=at,
            action=action,
            target=change.target,
            org_id=change.org_id,
            event_ids=tuple(after.get("event_ids", ())),
            sender_hmac=after.get("sender_hmac"),
            namespace=after.get("namespace") if action is Action.POLICY_DELETED else None,
        )

    def to_json(self) -> str:
        document: dict[str, Any] = {
            "recorded_at": self.recorded_at.isoformat(),
            "action": self.action.value,
            "target": self.target,
        }
        if self.org_id is not None:
            document["org_id"] = self.org_id
        if self.event_ids:
            document["event_ids"] = list(self.event_ids)
        if self.sender_hmac is not None:
            document["sender_hmac"] = self.sender_hmac
        if self.namespace is not None:
            document["namespace"] = self.namespace
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> ErasureRecord:
        document = json.loads(line)
        return cls(
            recorded_at=datetime.fromisoformat(document["recorded_at"]),
            action=Action(document["action"]),
            target=document["target"],
            org_id=document.get("org_id"),
            event_ids=tuple(document.get("event_ids", ())),
            sender_hmac=document.get("sender_hmac"),
            namespace=document.get("namespace"),
        )


def to_reapply(records: Iterable[ErasureRecord], restored_to: datetime) -> Sequence[ErasureRecord]:
    """The records a restore to `restored_to` re-applies, oldest first."""
    since = restored_to - COMMIT_MARGIN
    return sorted((r for r in records if r.recorded_at >= since), key=lambda r: r.recorded_at)
