"""The audit trail's port: record an administrative change together with its event, and
list what was recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from memory.domain.audit.admin_action import Action, Actor, AuditedChange

T = TypeVar("T")

AUDIT_LIMIT_DEFAULT = 50
AUDIT_LIMIT_MAX = 500


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One recorded change, as `GET /v1/audit` lists it. `id` is its position in the event
    store's notification log (newer changes have larger ids)."""

    id: int
    recorded_at: datetime
    actor: Actor
    action: str
    org_id: str | None
    target: str
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """`since` inclusive, `until` exclusive; `before_id` is the keyset cursor (entries older
    than the last one of the previous page)."""

    since: datetime | None = None
    until: datetime | None = None
    org_id: str | None = None
    limit: int = AUDIT_LIMIT_DEFAULT
    before_id: int | None = None


@dataclass(frozen=True, slots=True)
class AuditPage:
    entries: list[AuditEntry]
    next_before_id: int | None


class AuditTrail(Protocol):
    def record(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, AuditedChange]]
    ) -> T:
        """Run `change` (which makes the change through the usual ports and says what it
        changed) and record its `AdminAction` event in the same database transaction: both
        commit, or neither does. Returns what `change` returned."""
        ...

    def record_many(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, list[AuditedChange]]]
    ) -> T:
        """`record` for a change of several targets at once (several policies stored in one
        transaction): one event per `AuditedChange`, all in the change's transaction."""
        ...

    def entries(self, query: AuditQuery) -> AuditPage:
        """Newest first."""
        ...
