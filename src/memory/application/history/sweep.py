"""The sweep: the only writer of history embeddings.

A pass visits only the partitions with work waiting (docs/adr/0089): ingest marks a
partition due in its own transaction, a visit's end clears it, re-times it to when its open
tail's gap elapses, or leaves it due for a later slice. The pass takes due partitions in
slices, round-robin across orgs, and does at most `visit_windows` windows per visit, so an
org with a large backlog shares the sweep with the others instead of holding it
(docs/adr/0090); it ends when nothing is due (or nothing it took could move).

Per partition, under an exclusive lock: read unconsumed messages after the watermark,
sessionise, take the closed windows, skip the non-substantive ones, embed the rest (no
database transaction is open meanwhile), upsert their rows, advance the watermark. A
slice's partitions do this together (docs/adr/0115): one read of all of them, batches of
several partitions' windows, one upsert and one save of their watermarks per batch; a
partition that needs more than that read goes on alone. A transient model failure stalls
the partition (watermark unchanged, retried next pass); a window the model rejects is
recorded as poison and skipped (a rejected batch is halved until the window is alone). A
window whose rows could not be written because an erasure removed one of its messages
meanwhile is not consumed: the next read cuts it again from what is left (docs/adr/0092).
Rows the sweep cannot read (an instant outside the accepted range, stored by an older
version) are never part of a read; each is recorded once as a poison event of its own
partition (docs/adr/0041).

A pass stops between batches when the process shuts down or the org's semantic search is
turned off (ADR 0044): what was embedded stays, the rest is picked up by a later pass. Each
batch is bounded in tokens as well as in windows, and a window longer than the model's
input (one long message) is embedded from its beginning only, so one model call, and so
the wait for a pass to stop, stays short whatever was ingested.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from opentelemetry import trace

from memory.application.embedding import (
    EmbeddingModel,
    InputRejected,
    ModelMisconfigured,
    ModelUnavailable,
)
from memory.application.history.ports import (
    BacklogQuery,
    ChatEventLog,
    Clock,
    DueQuery,
    DueVisit,
    EmbeddedWindow,
    FeatureFlagStore,
    OrgDirectoryStore,
    PartitionLockFactory,
    PartitionLocks,
    PartitionVisit,
    SweepBacklog,
    SweepSchedule,
    Transactions,
    VisitOutcome,
    WatermarkRepository,
    WindowEmbeddings,
)
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.conversation import (
    WINDOW_MESSAGE_CAP,
    ConversationWindow,
    TokenBudget,
)
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG, FlagLayers
from memory.domain.history.partition import Partition
from memory.domain.history.substance import is_substantive
from memory.domain.history.sweep_plan import MainRead, SweepPlan, plan
from memory.domain.history.watermark import PoisonEventReason, StallReason, SweepWatermark
from memory.domain.history.window_identity import window_id

log = logging.getLogger(__name__)
# One span per batch (docs/adr/0111): the OpenTelemetry API does nothing until a provider
# is configured, like logging without a handler.
TRACER = trace.get_tracer("memory.history.sweep")

# Messages per read of a stream: bounds memory during a backfill; a pass reads again until
# only open windows are left.
SWEEP_READ_LIMIT = 500
# Windows per embedding call, and so per upsert and watermark advance: a crash or stall
# loses at most this much work.
EMBED_BATCH_WINDOWS = 16
# Tokens per embedding call (a window longer than this still goes alone): bounds how long
# one call takes, ~2.5 s for the local model on two cores, and so how long a pass takes to
# stop after a shutdown or its org's flag being turned off.
EMBED_BATCH_TOKENS = 2048
POISON_REASON = "input_rejected"
# Out-of-range rows recorded per main-stream read of a partition (bounds the work and the
# watermark events one read adds for a partition an older version filled with them; the
# purge deletes them meanwhile).
POISON_EVENTS_PER_READ = 100
# Partitions per slice of a pass: the due partitions taken at once, round-robin across orgs
# (docs/adr/0090). A slice's visits end before the next slice looks again for what is due,
# so work that arrives meanwhile waits at most one slice. Many, so that partitions of one
# window share a slice's fixed statements (docs/adr/0116); SLICE_WINDOWS bounds its work.
SLICE_PARTITIONS = 128
# Windows one visit consumes before the partition goes back to the end of the queue (due
# again at once): however large one org's backlog, it has a turn, then the others theirs.
VISIT_WINDOWS = 64
# Windows one slice consumes at most: 32 full visits (ADR 0090's bound). A partition of the
# slice not reached by then is left as it was, due first in the next slice (docs/adr/0116).
SLICE_WINDOWS = 32 * VISIT_WINDOWS
# Messages a slice's one read takes, shared among its partitions (each at most read_limit):
# a slice of backlogs consumes SLICE_WINDOWS windows at most, so reading 500 messages of
# each of 128 partitions would read (and sessionise) mostly what the next slice reads again.
# A partition whose share was too small goes on reading alone (docs/adr/0116).
SLICE_READ_MESSAGES = 4 * SLICE_WINDOWS
# Orgs the pass' backlog names (the longest waiting); the rest are counted only.
BACKLOG_TOP_ORGS = 5
# Waiting ages (seconds) orgs are counted into for the metrics: a fixed number of series
# however many orgs wait (no series names an org, docs/adr/0066).
WAITING_AGE_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 21600.0)
# The org-layer flags that keep an org out of the sweep when turned off.
SWEPT_ORG_FLAGS = (MODULE_FLAG, SEMANTIC_SEARCH_FLAG)


class Interruption:
    """Why a pass stopped a partition before its work was done."""

    SHUTDOWN = "shutdown"
    DISABLED = "semantic_search_off"


@dataclass
class PartitionReport:
    partition: Partition
    windows_embedded: int = 0
    windows_skipped: int = 0
    windows_poisoned: int = 0
    windows_open: int = 0
    events_poisoned: int = 0
    stalled: str | None = None
    busy: bool = False
    interrupted: str | None = None
    # Embeddable events the model has not consumed when the pass left the partition (None:
    # not measured, another sweeper held it).
    lag_events: int | None = None
    # The visit used its window budget with work left: the partition stays due.
    unfinished: bool = False
    # Windows the visit may consume: `visit_windows`, or less when its slice's are spent.
    budget: int = VISIT_WINDOWS
    # The slice's windows were spent before the visit consumed any: not visited, left due.
    deferred: bool = False
    # When the partition's first open window closes by its gap alone (None: none open).
    tail_closes_at: datetime | None = None
    # The org's flags were read (on) when the slice started: the first batch needs no check.
    flags_fresh: bool = False

    @property
    def windows_consumed(self) -> int:
        return self.windows_embedded + self.windows_skipped + self.windows_poisoned


@dataclass
class SweepReport:
    windows_embedded: int = 0
    windows_skipped: int = 0
    windows_poisoned: int = 0
    windows_open: int = 0
    events_poisoned: int = 0
    partitions: int = 0
    partitions_stalled: int = 0
    partitions_busy: int = 0
    partitions_interrupted: int = 0
    stall_reasons: list[str] = field(default_factory=list)
    # Per org, the sum of its measured partitions' lag (for aggregate metrics only).
    org_lag_events: dict[str, int] = field(default_factory=dict)
    # Per org, the windows its partitions embedded (the console's trends, docs/adr/0122).
    org_windows_embedded: dict[str, int] = field(default_factory=dict)
    # Slices the pass took (0: nothing was due).
    slices: int = 0
    # What still waited when the pass ended (None: the pass did not look).
    backlog: SweepBacklog | None = None

    def add(self, part: PartitionReport) -> None:
        self.partitions += 1
        if part.lag_events is not None:
            org = part.partition.org_id
            self.org_lag_events[org] = self.org_lag_events.get(org, 0) + part.lag_events
        self.windows_embedded += part.windows_embedded
        if part.windows_embedded:
            org = part.partition.org_id
            self.org_windows_embedded[org] = (
                self.org_windows_embedded.get(org, 0) + part.windows_embedded
            )
        self.windows_skipped += part.windows_skipped
        self.windows_poisoned += part.windows_poisoned
        self.windows_open += part.windows_open
        self.events_poisoned += part.events_poisoned
        if part.stalled is not None:
            self.partitions_stalled += 1
            self.stall_reasons.append(part.stalled)
        if part.busy:
            self.partitions_busy += 1
        if part.interrupted is not None:
            self.partitions_interrupted += 1

    def summary(self) -> dict[str, int]:
        """The pass as `POST /v1/sweep` reports it."""
        return {
            "windows_embedded": self.windows_embedded,
            "windows_skipped": self.windows_skipped,
            "windows_poisoned": self.windows_poisoned,
            "windows_open": self.windows_open,
            "events_poisoned": self.events_poisoned,
            "partitions": self.partitions,
            "partitions_stalled": self.partitions_stalled,
            "partitions_busy": self.partitions_busy,
            "partitions_interrupted": self.partitions_interrupted,
        }


class SweepProgress(Protocol):
    """Progress of a pass, e.g. for a progress bar."""

    def started(self, partitions: int) -> None: ...

    def partition_done(self, report: PartitionReport) -> None: ...


@dataclass
class _Reading:
    """A partition's main-stream read in a slice's visits, consumed across batches that
    hold windows of several partitions (docs/adr/0115)."""

    watermark: SweepWatermark
    report: PartitionReport
    main: MainRead
    swept: SweepPlan
    # The first closed window not consumed yet.
    next: int = 0
    # An erasure refused one of its windows: the visit reads again (alone).
    read_again: bool = False

    @property
    def left(self) -> bool:
        return self.next < len(self.swept.closed)

    @property
    def ended(self) -> bool:
        """The visit ended early: stalled, stopped or out of its window budget."""
        r = self.report
        return r.stalled is not None or r.interrupted is not None or r.unfinished or r.deferred


@dataclass
class _Segment:
    """One reading's part of a batch: its closed windows [start, end), the substantive ones
    `wanted` (embedded as `texts`); after the model call, which were embedded or poison."""

    reading: _Reading
    start: int
    end: int
    wanted: list[ConversationWindow] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    embedded: list[EmbeddedWindow] = field(default_factory=list)
    poisoned: list[ConversationWindow] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.end - self.start


class _Stalled(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Stopped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _BudgetSpent(Exception):
    """The visit consumed its `visit_windows`: the rest waits for a later slice."""


class _ReadAgain(Exception):
    """Windows of the last read lost a message to an erasure or purge: read again."""


class Sweeper:
    def __init__(
        self,
        *,
        events: ChatEventLog,
        windows: WindowEmbeddings,
        watermarks: WatermarkRepository,
        locks: PartitionLockFactory,
        flags: FeatureFlagStore,
        model: EmbeddingModel,
        clock: Clock,
        read_limit: int = SWEEP_READ_LIMIT,
        batch_windows: int = EMBED_BATCH_WINDOWS,
        poison_events_per_read: int = POISON_EVENTS_PER_READ,
        batch_tokens: int = EMBED_BATCH_TOKENS,
        directory: OrgDirectoryStore | None = None,
        schedule: SweepSchedule,
        slice_partitions: int = SLICE_PARTITIONS,
        visit_windows: int = VISIT_WINDOWS,
        slice_windows: int = SLICE_WINDOWS,
        slice_read_messages: int = SLICE_READ_MESSAGES,
        transactions: Transactions | None = None,
    ) -> None:
        """`directory`: where each partition visit leaves its state for the org directory
        (None: nowhere; tests of the sweep alone). `schedule`: which partitions have work.
        `transactions`: what makes a batch's upsert and watermark save one transaction
        (None: each store commits its own, stores without transactions)."""
        if read_limit < WINDOW_MESSAGE_CAP:
            # A cut read must hold at least one full window, or a pass could not progress.
            raise ValueError(f"read_limit must be at least {WINDOW_MESSAGE_CAP}")
        if batch_windows < 1:
            raise ValueError("batch_windows must be positive")
        if poison_events_per_read < 1:
            raise ValueError("poison_events_per_read must be positive")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be positive")
        if slice_partitions < 1 or visit_windows < 1 or slice_windows < 1:
            raise ValueError("slice_partitions, visit_windows and slice_windows must be positive")
        self._transactions = transactions
        self._slice_windows = slice_windows
        self._slice_read_messages = slice_read_messages
        self._schedule = schedule
        self._slice_partitions = slice_partitions
        self._visit_windows = visit_windows
        self._events = events
        self._windows = windows
        self._watermarks = watermarks
        self._locks = locks
        self._flags = flags
        self._model = model
        self._model_id = model.identity.id
        self._clock = clock
        self._read_limit = read_limit
        self._batch_windows = batch_windows
        self._poison_events_per_read = poison_events_per_read
        self._directory = directory
        self._batch_tokens = batch_tokens
        self._budget = TokenBudget(model.max_input_tokens, model.count_tokens)

    @property
    def model_id(self) -> str:
        return self._model_id

    def run_pass(
        self,
        org_id: str | None = None,
        *,
        wait_for_locks: bool = False,
        progress: SweepProgress | None = None,
        stop: threading.Event | None = None,
    ) -> SweepReport:
        """Visit the partitions with work (of one org, or all) whose org has semantic search
        on, a slice at a time, until none is due. With `wait_for_locks`, a partition another
        sweeper holds is waited for instead of skipped. `stop` ends the pass early, between
        batches; so does the org's semantic search being turned off (for that org's
        partitions). A pass with nothing due reads no partition's messages."""
        report = SweepReport()
        if not FlagLayers(self._flags.global_layer(), {}).semantic_search:
            return report  # the global layer is the master switch: no org is swept
        self._schedule.register(self._model_id, self._clock())
        if progress is not None:
            progress.started(self.backlog(org_id).partitions)
        model_down: list[str] = []
        due = self._due(org_id)
        if due:
            # The lock session (a connection of its own) only when there is work.
            with self._locks.session(wait=wait_for_locks) as locks:
                while due and (stop is None or not stop.is_set()):
                    report.slices += 1
                    moved = self._sweep_slice(due, locks, report, model_down, stop, progress)
                    if model_down or not moved:
                        break
                    due = self._due(org_id)
        report.backlog = self.backlog(org_id)
        return report

    def _due(self, org_id: str | None) -> list[DueVisit]:
        """The next slice: due partitions, round-robin across orgs (docs/adr/0090)."""
        query = DueQuery(
            self._model_id, self._clock(), self._slice_partitions, SWEPT_ORG_FLAGS, org_id
        )
        return self._schedule.due(query)

    def backlog(self, org_id: str | None = None) -> SweepBacklog:
        """What waits now for this sweeper's model (of one org, or all)."""
        return self._schedule.backlog(
            BacklogQuery(
                self._model_id,
                self._clock(),
                BACKLOG_TOP_ORGS,
                SWEPT_ORG_FLAGS,
                WAITING_AGE_BUCKETS,
                org_id,
            )
        )

    def _sweep_slice(
        self,
        due: Sequence[DueVisit],
        locks: PartitionLocks,
        report: SweepReport,
        model_down: list[str],
        stop: threading.Event | None,
        progress: SweepProgress | None,
    ) -> bool:
        """Visit a slice's partitions; record where each visit left its partition. True when
        a visit could work (so another slice may find more). The slice takes its partitions'
        locks, flags and watermarks together (a few statements, not a few per partition,
        docs/adr/0091) and holds the locks until its last visit ends."""
        layers = self._flags.layers_of(sorted({v.partition.org_id for v in due}))
        enabled = [v.partition for v in due if layers[v.partition.org_id].semantic_search]
        with locks.hold_all(enabled, self._model_id) as held:
            mine = [p for p in enabled if p in held]
            watermarks = self._watermarks.get_many(mine, self._model_id)
            busy = set(enabled) - held
            return self._visit_all(due, watermarks, busy, report, model_down, stop, progress)

    def _visit_all(
        self,
        due: Sequence[DueVisit],
        watermarks: dict[Partition, SweepWatermark],
        busy: set[Partition],
        report: SweepReport,
        model_down: list[str],
        stop: threading.Event | None,
        progress: SweepProgress | None,
    ) -> bool:
        """Visit the held partitions together; the others are reported busy (another
        sweeper holds them) or off (their org's semantic search is)."""
        held = [watermarks[v.partition] for v in due if v.partition in watermarks]
        swept: dict[Partition, PartitionReport] = {}
        if held and (stop is None or not stop.is_set()):
            swept = self._sweep_together(held, model_down, stop)
        outcomes: list[VisitOutcome] = []
        moved = False
        for visit in due:
            part = swept.get(visit.partition)
            if part is None and visit.partition in watermarks:
                continue  # the pass stopped before the slice's visits began
            if part is not None and part.deferred:
                continue  # the slice's windows were spent before its turn: left due
            if part is None:
                part = (
                    PartitionReport(visit.partition, busy=True)
                    if visit.partition in busy
                    else PartitionReport(visit.partition, interrupted=Interruption.DISABLED)
                )
            report.add(part)
            if progress is not None:
                progress.partition_done(part)
            outcome = self._outcome(visit, part)
            if outcome is not None:
                outcomes.append(outcome)
                moved = True
        self._schedule.finish(self._model_id, outcomes, self._clock())
        return moved

    def _outcome(self, visit: DueVisit, part: PartitionReport) -> VisitOutcome | None:
        """Where the visit leaves the partition's work; None: as it was (another sweeper
        held it, the model failed, or the pass stopped): it stays due."""
        if part.busy or part.stalled is not None or part.interrupted is not None:
            return None
        if part.unfinished:
            return VisitOutcome(visit.partition, visit.changes, self._clock(), 1)
        return VisitOutcome(visit.partition, visit.changes, part.tail_closes_at, part.windows_open)

    # A slice's partitions together ------------------------------------------------------

    def _sweep_together(
        self,
        watermarks: Sequence[SweepWatermark],
        model_down: list[str],
        stop: threading.Event | None,
    ) -> dict[Partition, PartitionReport]:
        """Visit a slice's held partitions (docs/adr/0115): one read of all their main
        streams, model calls over several partitions' windows, one upsert and one watermark
        save per call, one record of the visits. A visit that needs more than that read (a
        late stream, rows out of range, a read cut at its limit, a window refused by an
        erasure) goes on alone afterwards, as it would have from its first read."""
        reports = {
            w.partition: PartitionReport(w.partition, flags_fresh=True, budget=self._visit_windows)
            for w in watermarks
        }
        fresh = [w for w in watermarks if w.mark.late is None]
        share = self._slice_read_messages // max(len(fresh), 1)
        limit = min(self._read_limit, max(WINDOW_MESSAGE_CAP, share))
        reads = self._events.read_main_many([(w.partition, w.mark) for w in fresh], limit)
        alone = [w for w in watermarks if w.mark.late is not None]
        readings: list[_Reading] = []
        for w in fresh:
            main = reads[w.partition]
            if main.late_pending or main.out_of_range:
                alone.append(w)
                continue
            swept = plan(main.read, now=self._clock(), budget=self._budget)
            readings.append(_Reading(w, reports[w.partition], main, swept))
        self._consume_together(readings, model_down, stop)
        for r in readings:
            if r.ended:
                continue
            if r.read_again or (r.swept.closed and not r.main.read.complete):
                alone.append(r.watermark)
                continue
            # As `_step` after a main read: all of its closed windows were consumed.
            r.report.windows_open += r.swept.open_windows
            r.report.tail_closes_at = r.swept.closes_at()
            if r.main.read.complete:
                r.report.lag_events = r.swept.open_messages
        for w in alone:
            part = reports[w.partition]
            left = self._slice_windows - sum(r.windows_consumed for r in reports.values())
            part.budget = part.windows_consumed + min(
                self._visit_windows - part.windows_consumed, left
            )
            if part.budget <= part.windows_consumed:
                self._out_of_budget(part)
                continue
            self._sweep_alone(w, part, model_down, stop)
        visits = [
            self._finish(w, reports[w.partition])
            for w in watermarks
            if not reports[w.partition].deferred
        ]
        if self._directory is not None:
            self._directory.record_visits(visits)
        return reports

    def _consume_together(
        self, readings: list[_Reading], model_down: list[str], stop: threading.Event | None
    ) -> None:
        """Embed, store and advance over the readings' closed windows, a batch of several
        partitions' windows at a time (at most `batch_windows` windows and `batch_tokens`
        tokens, and no more than a visit's `visit_windows` of one partition)."""
        active = [r for r in readings if r.swept.closed]
        while active:
            if stop is not None and stop.is_set():
                for r in active:
                    self._stopped(r.report, Interruption.SHUTDOWN)
                return
            left = self._slice_windows - sum(r.report.windows_consumed for r in readings)
            for r in list(active):
                r.report.budget = r.report.windows_consumed + min(
                    self._visit_windows - r.report.windows_consumed, left
                )
                if r.report.budget <= r.report.windows_consumed:
                    self._out_of_budget(r.report)
                    active.remove(r)
            segments = self._take_batch(active, left)
            if not segments:
                return
            disabled = self._disabled(segments)
            if disabled:
                for r in disabled:
                    self._stopped(r.report, Interruption.DISABLED)
                    active.remove(r)
                continue
            for seg in segments:
                seg.reading.report.flags_fresh = False
            try:
                self._embed_batch(segments, model_down)
            except _Stalled as stalled:
                self._stall_together(active, stalled.reason)
                active = [r for r in active if not r.ended]
                continue
            active = [r for r in active if r.left and not r.read_again]

    def _take_batch(self, active: Sequence[_Reading], left: int) -> list[_Segment]:
        """The next batch: windows of the readings in order, the non-substantive ones
        consumed with them (skipped) but not embedded; `left`: the slice's windows."""
        segments: list[_Segment] = []
        count, tokens = 0, 0
        for r in active:
            closed = r.swept.closed
            room = min(r.report.budget - r.report.windows_consumed, left)
            seg = _Segment(r, r.next, r.next)
            full = False
            while seg.end < len(closed) and count < self._batch_windows and seg.size < room:
                window = closed[seg.end]
                if is_substantive(window):
                    text, n = self._budget.clip(window.content)
                    if count and tokens + n > self._batch_tokens:
                        full = True
                        break
                    seg.wanted.append(window)
                    seg.texts.append(text)
                    count, tokens = count + 1, tokens + n
                seg.end += 1
            if seg.size:
                segments.append(seg)
                left -= seg.size
            if full or count >= self._batch_windows:
                break
        return segments

    def _disabled(self, segments: Sequence[_Segment]) -> list[_Reading]:
        """The readings of the batch past their first batch whose org's semantic search was
        turned off meanwhile (the first goes by the flags the slice read, as alone)."""
        later = [seg.reading for seg in segments if not seg.reading.report.flags_fresh]
        if not later:
            return []
        layers = self._flags.layers_of(sorted({r.watermark.partition.org_id for r in later}))
        return [r for r in later if not layers[r.watermark.partition.org_id].semantic_search]

    def _embed_batch(self, segments: Sequence[_Segment], model_down: list[str]) -> None:
        texts = [t for seg in segments for t in seg.texts]
        with TRACER.start_as_current_span(
            "history sweep batch", attributes={"memory.windows": len(texts)}
        ):
            vectors = iter(self._embed_isolating(texts, model_down))
            for seg in segments:
                partition = seg.reading.watermark.partition
                for window in seg.wanted:
                    vector = next(vectors)
                    if vector is None:
                        self._log_poison(partition, window)
                        seg.poisoned.append(window)
                    else:
                        seg.embedded.append(self._embedded(partition, window, vector))
            embedded = [e for seg in segments for e in seg.embedded]
        # The batch's windows and its watermarks' advance past them commit together: one
        # statement saves the watermarks of all its partitions (docs/adr/0148).
        with self._transaction():
            written = self._windows.upsert(self._model_id, embedded) if embedded else set()
            for seg in segments:
                self._advance(seg, written)
            self._watermarks.store_many([seg.reading.watermark for seg in segments])

    def _transaction(self) -> AbstractContextManager[object]:
        if self._transactions is None:
            return nullcontext()
        return self._transactions.transaction()

    def _advance(self, seg: _Segment, written: set[uuid.UUID]) -> None:
        """Move the segment's watermark past what it consumed; a window an erasure refused
        is not consumed, nor anything after it (docs/adr/0092): the visit reads again."""
        r = seg.reading
        end, embedded, poisoned, wanted = seg.end, seg.embedded, seg.poisoned, seg.wanted
        refused = [e for e in embedded if e.id not in written]
        if refused:
            r.read_again = True
            end = r.swept.closed.index(refused[0].window, seg.start)
            cut = refused[0].window.first.position
            embedded = [e for e in embedded if e.window.last.position < cut]
            poisoned = [w for w in poisoned if w.last.position < cut]
            wanted = [w for w in wanted if w.last.position < cut]
            if end == seg.start:
                return
        partition = r.watermark.partition
        for window in poisoned:
            r.watermark.skip_poison_window(
                self._window_id(partition, window),
                window.first.position,
                window.last.position,
                len(window.messages),
                POISON_REASON,
            )
        skipped = (end - seg.start) - len(wanted)
        r.watermark.consume_main(
            r.swept.end_after(end),
            r.main.horizon_seq,
            embedded=[e.id for e in embedded],
            skipped=skipped,
        )
        r.report.windows_embedded += len(embedded)
        r.report.windows_skipped += skipped
        r.report.windows_poisoned += len(poisoned)
        r.next = end

    def _stall_together(self, active: Sequence[_Reading], reason: str) -> None:
        """The model failed: every reading with a window left to embed stalls (as each
        would alone on its next call in this pass); one save records it for all."""
        stalled = [r for r in active if any(is_substantive(w) for w in r.swept.closed[r.next :])]
        for r in stalled:
            r.report.stalled = reason
            r.watermark.stall(reason)
        self._watermarks.store_many([r.watermark for r in stalled])

    def _embed_isolating(
        self, texts: Sequence[str], model_down: list[str]
    ) -> list[EmbeddingVector | None]:
        """One model call for `texts`; when the model rejects it, halves until each rejected
        text is alone (None: poison), so a poison window costs its batch a few calls and
        never the other windows of the batch (of its partition or another)."""
        if not texts:
            return []
        if model_down:
            # Already failed for every input in this pass: do not wait on it again.
            raise _Stalled(model_down[0])
        try:
            vectors: list[EmbeddingVector | None] = [*self._call_model(list(texts))]
            return vectors
        except InputRejected:
            if len(texts) == 1:
                return [None]
        except (ModelUnavailable, ModelMisconfigured) as exc:
            raise self._stall(exc, model_down) from exc
        half = len(texts) // 2
        return self._embed_isolating(texts[:half], model_down) + self._embed_isolating(
            texts[half:], model_down
        )

    # One partition alone ----------------------------------------------------------------

    def _sweep_alone(
        self,
        watermark: SweepWatermark,
        report: PartitionReport,
        model_down: list[str],
        stop: threading.Event | None,
    ) -> None:
        """Go on with a visit read by read, from its watermark."""
        try:
            while self._step_or_read_again(watermark, report, model_down, stop):
                pass
        except _Stalled as stalled:
            report.stalled = stalled.reason
            watermark.stall(stalled.reason)
            self._watermarks.store(watermark)
        except _BudgetSpent:
            report.unfinished = True
        except _Stopped as stopped:
            self._stopped(report, stopped.reason)

    @staticmethod
    def _out_of_budget(report: PartitionReport) -> None:
        """The visit's or the slice's windows are spent with work left: a visit that
        consumed some is unfinished (due again behind the others), one that consumed none
        is left as it was (due first in the next slice)."""
        if report.windows_consumed:
            report.unfinished = True
        else:
            report.deferred = True

    def _stopped(self, report: PartitionReport, reason: str) -> None:
        report.interrupted = reason
        log.info(
            "history sweep: stopped %s of %s between batches (%s); %d windows embedded",
            self._model_id,
            report.partition,
            reason,
            report.windows_embedded,
        )

    def _finish(self, watermark: SweepWatermark, report: PartitionReport) -> PartitionVisit:
        """The visit's lag (counted only when its reads did not tell it) and its record."""
        if report.lag_events is None or report.interrupted or report.unfinished:
            report.lag_events = self._events.count_unconsumed(watermark.partition, watermark.mark)
        return self._visit(watermark, report)

    def _visit(self, watermark: SweepWatermark, report: PartitionReport) -> PartitionVisit:
        return PartitionVisit(
            partition=watermark.partition,
            model=self._model_id,
            position=watermark.mark.position,
            windows_embedded=watermark.windows_embedded,
            poison_windows=len(watermark.poison_windows),
            poison_events=len(watermark.poison_events),
            stalled=watermark.is_stalled,
            open_windows=report.windows_open,
            embedded=report.windows_embedded > 0,
            at=self._clock(),
        )

    def _skip_out_of_range(self, watermark: SweepWatermark, report: PartitionReport) -> None:
        """Record the partition's unrecorded out-of-range rows (the main read said there
        are some: the common case costs no query of its own)."""
        known = [p.event_id for p in watermark.poison_events]
        found = self._events.out_of_range(watermark.partition, known, self._poison_events_per_read)
        if not found:
            return
        for row in found:
            watermark.skip_poison_event(
                row.event_id, row.occurred_at, PoisonEventReason.OCCURRED_AT_OUT_OF_RANGE
            )
        self._watermarks.store(watermark)
        report.events_poisoned += len(found)
        if len(found) == self._poison_events_per_read:
            report.unfinished = True  # more may wait: the partition stays due
        log.warning(
            "history sweep: skipped %d event(s) of %s with occurred_at outside the accepted"
            " range as poison",
            len(found),
            watermark.partition,
        )

    def _interruption(self, report: PartitionReport, stop: threading.Event | None) -> str | None:
        """Why the pass must not go on with the partition now, if it must not. The slice
        read the flags of its orgs when it started: the visit's first batch goes by that."""
        if stop is not None and stop.is_set():
            return Interruption.SHUTDOWN
        if report.flags_fresh:
            report.flags_fresh = False
            return None
        if not self._flags.layers(report.partition.org_id).semantic_search:
            return Interruption.DISABLED
        return None

    def _step_or_read_again(
        self,
        watermark: SweepWatermark,
        report: PartitionReport,
        model_down: list[str],
        stop: threading.Event | None,
    ) -> bool:
        try:
            return self._step(watermark, report, model_down, stop)
        except _ReadAgain:
            return True

    def _step(
        self,
        watermark: SweepWatermark,
        report: PartitionReport,
        model_down: list[str],
        stop: threading.Event | None,
    ) -> bool:
        """Consume what one read allows. True when another read may find more."""
        mark = watermark.mark
        partition = watermark.partition
        if mark.late is None:
            main = self._events.read_main(partition, mark, self._read_limit)
            if main.out_of_range:
                self._skip_out_of_range(watermark, report)
            if not main.late_pending:
                swept = plan(main.read, now=self._clock(), budget=self._budget)

                def consume_main(count: int, embedded: list[uuid.UUID], skipped: int) -> None:
                    watermark.consume_main(
                        swept.end_after(count),
                        main.horizon_seq,
                        embedded=embedded,
                        skipped=skipped,
                    )

                self._consume(watermark, swept, consume_main, report, model_down, stop)
                if main.read.complete or not swept.closed:
                    report.windows_open += swept.open_windows
                    report.tail_closes_at = swept.closes_at()
                    if main.read.complete:
                        # All of the stream was read and its closed windows consumed: what
                        # is left unconsumed is the open windows' messages (no count query).
                        report.lag_events = swept.open_messages
                    return False
                return True
            mark = mark.begin_late(main.horizon_seq)
        late = mark.late
        assert late is not None
        read = self._events.read_late(partition, mark, late, self._read_limit)
        swept = plan(read, now=self._clock(), budget=self._budget)
        if not swept.closed:
            if swept.exhausts_after(0):
                watermark.consume_late(
                    late.horizon_seq, None, caught_up=True, embedded=(), skipped=0
                )
                self._watermarks.store(watermark)
                return True
            # The newest late window is still open: the main stream waits for it.
            report.windows_open += swept.open_windows
            report.tail_closes_at = swept.closes_at()
            return False

        def consume_late(count: int, embedded: list[uuid.UUID], skipped: int) -> None:
            watermark.consume_late(
                late.horizon_seq,
                swept.end_after(count),
                caught_up=swept.exhausts_after(count),
                embedded=embedded,
                skipped=skipped,
            )

        self._consume(watermark, swept, consume_late, report, model_down, stop)
        return True

    def _consume(
        self,
        watermark: SweepWatermark,
        swept: SweepPlan,
        consume: Callable[[int, list[uuid.UUID], int], None],
        report: PartitionReport,
        model_down: list[str],
        stop: threading.Event | None,
    ) -> None:
        """Embed, store and advance over the plan's closed windows, one batch at a time: at
        most `batch_windows` windows and `batch_tokens` tokens (a longer window alone).
        `consume(end, embedded, skipped)` moves the watermark past the first `end`."""
        closed = swept.closed
        start = 0
        while start < len(closed):
            end, wanted, texts, tokens = start, list[ConversationWindow](), list[str](), 0
            interrupted = self._interruption(report, stop)
            if interrupted is not None:
                raise _Stopped(interrupted)
            if report.windows_consumed >= report.budget:
                raise _BudgetSpent()
            while end < len(closed) and len(wanted) < self._batch_windows:
                if is_substantive(closed[end]):
                    text, count = self._budget.clip(closed[end].content)
                    if wanted and tokens + count > self._batch_tokens:
                        break
                    wanted.append(closed[end])
                    texts.append(text)
                    tokens += count
                end += 1
            with TRACER.start_as_current_span(
                "history sweep batch", attributes={"memory.windows": len(wanted)}
            ):
                embedded, poisoned = self._embed(watermark.partition, wanted, texts, model_down)
            # The windows and the watermark's advance past them commit together.
            with self._transaction():
                written = self._windows.upsert(self._model_id, embedded) if embedded else set()
                refused = [e for e in embedded if e.id not in written]
                if refused:
                    # An erasure or purge removed a message of these windows after the read:
                    # consume only what comes before the first of them, and read again (the
                    # rest is cut anew from the messages that are left).
                    end = closed.index(refused[0].window, start)
                    cut = refused[0].window.first.position
                    embedded = [e for e in embedded if e.window.last.position < cut]
                    poisoned = [w for w in poisoned if w.last.position < cut]
                    wanted = [w for w in wanted if w.last.position < cut]
                if end > start:
                    for window in poisoned:
                        watermark.skip_poison_window(
                            self._window_id(watermark.partition, window),
                            window.first.position,
                            window.last.position,
                            len(window.messages),
                            POISON_REASON,
                        )
                    consume(end, [e.id for e in embedded], (end - start) - len(wanted))
                    self._watermarks.store(watermark)
            if end == start:
                raise _ReadAgain()
            skipped = (end - start) - len(wanted)
            report.windows_embedded += len(embedded)
            report.windows_skipped += skipped
            report.windows_poisoned += len(poisoned)
            start = end
            if refused:
                raise _ReadAgain()

    # Embedding --------------------------------------------------------------------------

    def _embed(
        self,
        partition: Partition,
        windows: Sequence[ConversationWindow],
        texts: Sequence[str],
        model_down: list[str],
    ) -> tuple[list[EmbeddedWindow], list[ConversationWindow]]:
        """Embed `windows` as `texts` (their content, clipped to the model's input)."""
        if not windows:
            return [], []
        if model_down:
            # Already failed for every input in this pass: do not wait on it again.
            raise _Stalled(model_down[0])
        try:
            vectors = self._call_model(list(texts))
        except InputRejected:
            return self._embed_one_by_one(partition, windows, texts, model_down)
        except (ModelUnavailable, ModelMisconfigured) as exc:
            raise self._stall(exc, model_down) from exc
        return [self._embedded(partition, w, v) for w, v in zip(windows, vectors, strict=True)], []

    def _embed_one_by_one(
        self,
        partition: Partition,
        windows: Sequence[ConversationWindow],
        texts: Sequence[str],
        model_down: list[str],
    ) -> tuple[list[EmbeddedWindow], list[ConversationWindow]]:
        """A batch was rejected: find out which windows are poison, keep the others."""
        embedded: list[EmbeddedWindow] = []
        poisoned: list[ConversationWindow] = []
        for window, text in zip(windows, texts, strict=True):
            try:
                (vector,) = self._call_model([text])
            except InputRejected:
                self._log_poison(partition, window)
                poisoned.append(window)
                continue
            except (ModelUnavailable, ModelMisconfigured) as exc:
                raise self._stall(exc, model_down) from exc
            embedded.append(self._embedded(partition, window, vector))
        return embedded, poisoned

    def _log_poison(self, partition: Partition, window: ConversationWindow) -> None:
        log.warning(
            "history sweep: model %s rejected window %s of %s; skipping it as poison",
            self._model_id,
            self._window_id(partition, window),
            partition,
        )

    def _call_model(self, texts: list[str]) -> list[EmbeddingVector]:
        vectors = self._model.embed_documents(texts)
        if len(vectors) != len(texts):
            raise ModelMisconfigured(
                self._model_id, f"returned {len(vectors)} vectors for {len(texts)} inputs"
            )
        try:
            return [self._model.identity.check(v) for v in vectors]
        except ValueError as exc:
            raise ModelMisconfigured(self._model_id, str(exc)) from exc

    def _stall(self, exc: Exception, model_down: list[str]) -> _Stalled:
        reason = (
            StallReason.MODEL_UNAVAILABLE
            if isinstance(exc, ModelUnavailable)
            else StallReason.MODEL_MISCONFIGURED
        )
        # The error class only: a model server's message may quote the input.
        log.warning("history sweep: model %s failed (%s); stalling", self._model_id, reason)
        model_down.append(reason)
        return _Stalled(reason)

    def _window_id(self, partition: Partition, window: ConversationWindow) -> uuid.UUID:
        return window_id(partition, self._model_id, window.event_ids)

    def _embedded(
        self, partition: Partition, window: ConversationWindow, vector: EmbeddingVector
    ) -> EmbeddedWindow:
        return EmbeddedWindow(self._window_id(partition, window), partition, window, vector)
