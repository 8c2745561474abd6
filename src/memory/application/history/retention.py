"""Retention: per-org days, and the purge that enforces them on events and embeddings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from memory.application.history.ports import Clock, RetentionStore
from memory.domain.errors import InvalidInput
from memory.domain.history.retention import (
    RETENTION_DAYS_MAX,
    RETENTION_DAYS_MIN,
    check_retention_days,
    retention_cutoff,
)
from memory.domain.time_range import AcceptedTimeRange


@dataclass(frozen=True, slots=True)
class Retention:
    org_id: str
    days: int
    is_default: bool


@dataclass
class PurgeReport:
    orgs: int = 0
    events_deleted: int = 0
    embeddings_deleted: int = 0
    per_org: dict[str, tuple[int, int]] = field(default_factory=dict)


class PurgeObserver(Protocol):
    """Hears a purge's progress (the CLI's progress bar)."""

    def started(self, orgs: int) -> None: ...

    def org_done(self, org_id: str, events_deleted: int, embeddings_deleted: int) -> None: ...


class HistoryRetention:
    def __init__(self, store: RetentionStore, *, default_days: int, clock: Clock) -> None:
        self._store = store
        self._default_days = check_retention_days(default_days)
        self._clock = clock

    def get(self, org_id: str) -> Retention:
        days = self._store.days(org_id)
        if days is None:
            return Retention(org_id, self._default_days, True)
        return Retention(org_id, days, False)

    def set(self, org_id: str, days: int) -> Retention:
        try:
            check_retention_days(days)
        except ValueError as exc:
            raise InvalidInput(
                "days", f"must be between {RETENTION_DAYS_MIN} and {RETENTION_DAYS_MAX}"
            ) from exc
        self._store.set_days(org_id, days)
        return self.get(org_id)

    def purge(
        self, org_id: str | None = None, observer: PurgeObserver | None = None
    ) -> PurgeReport:
        """Delete what is past each org's retention: events and, in the same transaction,
        the embedding rows that cover them. Rows outside the accepted time range count as
        expired: a year-10000 instant is never past any cutoff (docs/adr/0041)."""
        report = PurgeReport()
        orgs = [org_id] if org_id is not None else self._store.orgs_with_events()
        now = self._clock()
        stored = AcceptedTimeRange.for_stored_rows(now)
        if observer is not None:
            observer.started(len(orgs))
        for org in orgs:
            cutoff = retention_cutoff(now, self.get(org).days)
            events, rows = self._store.purge(org, cutoff, stored)
            report.orgs += 1
            report.events_deleted += events
            report.embeddings_deleted += rows
            report.per_org[org] = (events, rows)
            if observer is not None:
                observer.org_done(org, events, rows)
        return report
