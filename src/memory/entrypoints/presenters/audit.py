"""Audit results as answer models: what `GET /v1/audit` answers."""

from __future__ import annotations

from memory.application.audit.ports import AuditEntry, AuditPage
from memory.contract.responses import AuditActorBody, AuditEntryBody, AuditPageBody


def audit_page_body(page: AuditPage) -> AuditPageBody:
    """The answer of `GET /v1/audit` (also what bench/answers.py renders)."""
    return AuditPageBody(
        entries=[_entry_body(e) for e in page.entries],
        next_cursor=None if page.next_before_id is None else str(page.next_before_id),
    )


def _entry_body(entry: AuditEntry) -> AuditEntryBody:
    return AuditEntryBody(
        id=str(entry.id),
        recorded_at=entry.recorded_at,
        actor=AuditActorBody(key_id=entry.actor.key_id, name=entry.actor.name),
        action=entry.action,
        org_id=entry.org_id,
        target=entry.target,
        before=entry.before,
        after=entry.after,
    )
