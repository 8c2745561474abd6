"""What operators see of history's search indexes (docs/adr/0134, 0141): per org and model,
whether its index is wanted, building (with the build's progress), ready, failed or being
dropped; and across orgs, how many are in each state with the builder's queue first.

The port (`SearchIndexes`) reads `dw_window_indexes` in PostgreSQL; the HTTP route, the
CLI's `memory history indexes`, /healthz and the metrics all read it through
`HistoryService`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memory.domain.history.search_path import SearchIndexState

# How many of the builder's queue a summary lists (oldest request first); the counts cover
# them all.
SUMMARY_QUEUE_LIMIT = 10


@dataclass(frozen=True, slots=True)
class SearchIndexStatus:
    """One org's index for one model. While a build runs, `phase` is PostgreSQL's
    (`pg_stat_progress_create_index`, copied every few seconds) with the group index it is
    building, `tuples_done` the windows that group's index has taken so far (`tuples_total`
    when PostgreSQL says it; pgvector's HNSW build does not) and `share_done` the share of
    the whole build done (see `progress`). `failures` counts builds that failed since it was
    last ready, `last_error` the last one's class and SQLSTATE."""

    org_id: str
    model: str
    state: SearchIndexState
    dimensions: int | None
    windows_seen: int
    requested_at: datetime
    started_at: datetime | None
    ready_at: datetime | None
    phase: str | None
    tuples_done: int | None
    tuples_total: int | None
    share_done: float | None
    failures: int
    last_error: str | None
    failed_at: datetime | None

    @property
    def progress(self) -> float | None:
        """The share of the build done (0..1), while a build runs."""
        if self.state is not SearchIndexState.BUILDING or self.share_done is None:
            return None
        return min(1.0, max(0.0, self.share_done))


@dataclass(frozen=True, slots=True)
class SearchIndexSummary:
    """Every org's indexes counted by state, and the first `SUMMARY_QUEUE_LIMIT` of those
    not ready (building first, then failed, wanted and dropping; oldest request first)."""

    counts: dict[SearchIndexState, int]
    queue: list[SearchIndexStatus]

    def count(self, state: SearchIndexState) -> int:
        return self.counts.get(state, 0)


@dataclass(frozen=True, slots=True)
class OrgSearchIndexes:
    """An org's search indexes (one per model that has one) beside the active model: after
    a model swap the new model's index shows its build while the old one's is unused."""

    org_id: str
    model: str
    indexes: list[SearchIndexStatus]


class SearchIndexes(Protocol):
    def of_org(self, org_id: str) -> list[SearchIndexStatus]:
        """The org's indexes, one per model that has one, by model."""
        ...

    def summary(self, queue_limit: int) -> SearchIndexSummary:
        """Counts by state (one grouped statement over the table's rows: one per large org
        and model) and the first `queue_limit` of the builder's queue."""
        ...
