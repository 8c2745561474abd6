"""The org directory: a page of every org the history context knows, each with the summary
an operator scans (flags, retention, partitions, messages, sweep health)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory.application.history.ports import (
    Clock,
    FeatureFlagStore,
    OrgDirectoryStore,
    OrgPageQuery,
    OrgRow,
)
from memory.domain.history.feature_flags import FlagLayers, FlagSource, GlobalState
from memory.domain.history.org_directory import (
    OrgListing,
    position_from_payload,
    position_payload,
)


class SignedCursors(Protocol):
    """Signs and checks cursor payloads (the policy listing's `CursorCodec`: one key, one
    format for every cursor the service issues)."""

    def seal(self, payload: dict[str, Any]) -> str: ...

    def unseal(self, token: str, *, field: str = "cursor") -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class OrgSummary:
    """One org as the directory shows it. Sweep figures are the active model's, summed over
    the org's partitions as the sweep's last visit of each left them; `max_lag_seconds` is
    how long the oldest message not yet embedded has waited (None: nothing waits)."""

    org_id: str
    semantic_search: bool
    semantic_search_by: FlagSource
    retention_days: int
    retention_default: bool
    partitions: int
    messages: int
    open_windows: int
    poison_windows: int
    poison_events: int
    max_lag_seconds: float | None
    last_embedded_at: datetime | None
    last_swept_at: datetime | None


@dataclass(frozen=True, slots=True)
class OrgPage:
    orgs: list[OrgSummary]
    next_cursor: str | None


class OrgDirectory:
    def __init__(
        self,
        store: OrgDirectoryStore,
        flags: FeatureFlagStore,
        cursors: SignedCursors,
        *,
        model_id: str,
        default_retention_days: int,
        clock: Clock,
    ) -> None:
        self._store = store
        self._flags = flags
        self._cursors = cursors
        self._model_id = model_id
        self._default_retention_days = default_retention_days
        self._clock = clock

    def __call__(self, listing: OrgListing) -> OrgPage:
        fingerprint = listing.fingerprint()
        after = None
        if listing.cursor is not None:
            after = position_from_payload(
                self._cursors.unseal(listing.cursor), fingerprint=fingerprint
            )
        now = self._clock()
        # One more than the page: whether a next page exists without a second query.
        rows = self._store.page(
            OrgPageQuery(
                after=after,
                prefix=listing.prefix,
                visible=listing.visible,
                limit=listing.limit + 1,
                model=self._model_id,
                now=now,
            )
        )
        states = self._flags.global_states()
        orgs = [self._summary(r, states, now) for r in rows[: listing.limit]]
        next_cursor = None
        if len(rows) > listing.limit:
            next_cursor = self._cursors.seal(position_payload(orgs[-1].org_id, fingerprint))
        return OrgPage(orgs, next_cursor)

    def _summary(self, row: OrgRow, states: dict[str, GlobalState], now: datetime) -> OrgSummary:
        layers = FlagLayers.of(states, row.org_flags)
        lag = None
        if row.waiting_since is not None:
            lag = max(0.0, (now - row.waiting_since).total_seconds())
        return OrgSummary(
            org_id=row.org_id,
            semantic_search=layers.semantic_search,
            semantic_search_by=layers.semantic_decided_by(),
            retention_days=(
                self._default_retention_days if row.retention_days is None else row.retention_days
            ),
            retention_default=row.retention_days is None,
            partitions=row.partitions,
            messages=row.messages,
            open_windows=row.open_windows,
            poison_windows=row.poison_windows,
            poison_events=row.poison_events,
            max_lag_seconds=lag,
            last_embedded_at=row.last_embedded_at,
            last_swept_at=row.last_swept_at,
        )
