"""How far the sweep is behind for an org (for operators): its totals from maintained counts
and its partitions a keyset page at a time, each with its watermark and what the sweep would
read next (docs/adr/0093)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.application.embedding import EmbeddingModel
from memory.application.history.org_directory import SignedCursors
from memory.application.history.ports import (
    ChatEventLog,
    Clock,
    OrgDirectoryStore,
    SweepTotals,
    WatermarkRepository,
)
from memory.application.history.sweep import SWEEP_READ_LIMIT
from memory.domain.history.conversation import TokenBudget
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import (
    PartitionKey,
    PartitionListing,
    partition_fingerprint,
    partition_from_payload,
    partition_payload,
)
from memory.domain.history.sweep_plan import PartitionRead, WatermarkMark, plan
from memory.domain.history.watermark import PoisonEvent, PoisonWindow, SweepWatermark


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    partition: Partition
    model: str
    mark: WatermarkMark
    lag_events: int
    # Age of the oldest closed window not yet consumed (None: nothing waiting to embed).
    oldest_closed_window_age_seconds: float | None
    # Windows in what the sweep reads next that are still open (the conversation may go on).
    open_windows: int
    windows_embedded: int
    windows_skipped: int
    poison_windows: list[PoisonWindow]
    poison_events: list[PoisonEvent]
    stalled: bool
    last_stall_reason: str | None
    last_stall_at: datetime | None
    last_advanced_at: datetime | None


@dataclass(frozen=True, slots=True)
class PartitionStatusPage:
    """One page of an org's partitions with the org's totals; `next_cursor` asks for the
    next page (None: this is the last)."""

    partitions: list[PartitionStatus]
    totals: SweepTotals
    next_cursor: str | None


class SweepStatus:
    def __init__(
        self,
        *,
        events: ChatEventLog,
        watermarks: WatermarkRepository,
        directory: OrgDirectoryStore,
        cursors: SignedCursors,
        model: EmbeddingModel,
        clock: Clock,
    ) -> None:
        self._events = events
        self._watermarks = watermarks
        self._directory = directory
        self._cursors = cursors
        self._model_id = model.identity.id
        self._budget = TokenBudget(model.max_input_tokens, model.count_tokens)
        self._clock = clock

    def __call__(self, org_id: str, listing: PartitionListing) -> PartitionStatusPage:
        """Totals are one row and the page one index range: the cost is the page's, however
        many partitions the org has. Each row reads its watermark; only a partition the
        sweep's work state says has work waiting also reads its next batch and counts its
        lag (one settled has none: the state the sweep itself acts on, docs/adr/0093)."""
        fingerprint = partition_fingerprint(org_id)
        after = None
        if listing.cursor is not None:
            payload = self._cursors.unseal(listing.cursor)
            after = partition_from_payload(payload, fingerprint=fingerprint)
        # One more than the page: whether a next page exists without a second query.
        found = self._directory.partitions_after(org_id, after, listing.limit + 1)
        page = found[: listing.limit]
        next_cursor = None
        if len(found) > listing.limit:
            last = PartitionKey(page[-1].provider, page[-1].channel_id)
            next_cursor = self._cursors.seal(partition_payload(last, fingerprint))
        settled = self._directory.settled(org_id, self._model_id, page)
        watermarks = self._watermarks.get_many(page, self._model_id)
        return PartitionStatusPage(
            partitions=[self._status(p, watermarks[p], settled=p in settled) for p in page],
            totals=self._directory.sweep_totals(org_id, self._model_id),
            next_cursor=next_cursor,
        )

    def _status(
        self, partition: Partition, watermark: SweepWatermark, *, settled: bool
    ) -> PartitionStatus:
        mark = watermark.mark
        lag, age, open_windows = 0, None, 0
        if not settled:
            now = self._clock()
            planned = plan(self._next_read(partition, mark), now=now, budget=self._budget)
            closed = planned.closed
            age = (now - closed[0].last.occurred_at).total_seconds() if closed else None
            lag = self._events.count_unconsumed(partition, mark)
            open_windows = planned.open_windows
        return PartitionStatus(
            partition=partition,
            model=self._model_id,
            mark=mark,
            lag_events=lag,
            oldest_closed_window_age_seconds=age,
            open_windows=open_windows,
            windows_embedded=watermark.windows_embedded,
            windows_skipped=watermark.windows_skipped,
            poison_windows=list(watermark.poison_windows),
            poison_events=watermark.poison_events,
            stalled=watermark.is_stalled,
            last_stall_reason=watermark.last_stall_reason,
            last_stall_at=watermark.last_stall_at,
            last_advanced_at=watermark.last_advanced_at,
        )

    def _next_read(self, partition: Partition, mark: WatermarkMark) -> PartitionRead:
        """What the sweep would read next: late messages first, else the main stream."""
        if mark.late is None:
            main = self._events.read_main(partition, mark, SWEEP_READ_LIMIT)
            if not main.late_pending:
                return main.read
            mark = mark.begin_late(main.horizon_seq)
        assert mark.late is not None
        return self._events.read_late(partition, mark, mark.late, SWEEP_READ_LIMIT)
