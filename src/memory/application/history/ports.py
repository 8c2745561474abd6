"""What the history use cases need from the outside world. Adapters live in
`memory.infrastructure.history`; tests use the same adapters on a real database."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memory.domain.embedding import EmbeddingVector
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.conversation import ConversationWindow
from memory.domain.history.feature_flags import FlagLayers, GlobalState
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import PartitionKey
from memory.domain.history.position import SweepPosition
from memory.domain.history.search import HistoryHit, HistoryQuery
from memory.domain.history.sweep_plan import LateCatchUp, MainRead, PartitionRead, WatermarkMark
from memory.domain.history.watermark import SweepWatermark
from memory.domain.time_range import AcceptedTimeRange

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class OutOfRangeEvent:
    """A stored row whose instant is outside the accepted range (an older version stored
    it), with that instant as the database prints it: it may not fit a Python datetime."""

    event_id: str
    occurred_at: str


@dataclass(frozen=True, slots=True)
class StoredEvents:
    """What an ingest stored: every event id in request order, and how many were new."""

    event_ids: list[str]
    inserted: int


@dataclass(frozen=True, slots=True)
class RowKey:
    """A chat event's key, in the order re-indexing walks the table."""

    org_id: str
    event_id: str


@dataclass(frozen=True, slots=True)
class ReindexedBatch:
    """How many rows a re-index batch rewrote, and where the next batch starts (None: no
    stale row is left after this batch)."""

    rows: int
    next_after: RowKey | None


class FullTextIndex(Protocol):
    """The full-text index of `dw_chat_events`, for bringing rows indexed by an older
    segmentation to the current one."""

    def count_stale(self, org_id: str | None = None) -> int:
        """Rows (of one org, or of all) indexed by an older segmentation."""
        ...

    def reindex_batch(self, after: RowKey | None, limit: int) -> ReindexedBatch: ...


class ChatEventLog(Protocol):
    """`dw_chat_events`: written synchronously by ingest, read by search and the sweep."""

    def append(self, org_id: str, events: Sequence[ChatEvent]) -> StoredEvents:
        """Store events with ids, all in one transaction; an id already stored for the
        org is left as it is (idempotency)."""
        ...

    def full_text(self, org_id: str, query: HistoryQuery) -> list[HistoryHit]:
        """The org's events matching the query cut by the log's segmentation (CJK bigrams,
        `memory.domain.history.full_text`), best first."""
        ...

    def messages(
        self, org_id: str, event_ids: Sequence[str], query: HistoryQuery
    ) -> list[HistoryHit]:
        """The org's events among `event_ids` that match the query's filters (provider,
        channel, time range), in no particular order; `matched_by` is semantic."""
        ...

    def partitions(self, org_id: str | None = None) -> list[Partition]: ...

    def org_known(self, org_id: str) -> bool:
        """Whether the org ever ingested anything (and was not erased since)."""
        ...

    def read_main(self, partition: Partition, mark: WatermarkMark, limit: int) -> MainRead:
        """From one snapshot: the highest ingest number, whether late messages wait, and
        (if none do) up to `limit` embeddable messages after the position."""
        ...

    def read_main_many(
        self, marks: Sequence[tuple[Partition, WatermarkMark]], limit: int
    ) -> dict[Partition, MainRead]:
        """`read_main` for each of a slice's partitions, together (docs/adr/0115)."""
        ...

    def read_late(
        self, partition: Partition, mark: WatermarkMark, late: LateCatchUp, limit: int
    ) -> PartitionRead:
        """Up to `limit` embeddable late messages: ingested in (seen_seq, horizon], at or
        before the position, after the late cursor."""
        ...

    def count_unconsumed(self, partition: Partition, mark: WatermarkMark) -> int: ...

    def out_of_range(
        self, partition: Partition, known: Sequence[str], limit: int
    ) -> list[OutOfRangeEvent]:
        """Rows outside `AcceptedTimeRange.for_stored_rows` (no read above returns them),
        except the ids in `known`; at most `limit`."""
        ...


@dataclass(frozen=True, slots=True)
class EmbeddedWindow:
    """A window and its vector, as the sweep writes it."""

    id: uuid.UUID
    partition: Partition
    window: ConversationWindow
    vector: EmbeddingVector


@dataclass(frozen=True, slots=True)
class WindowMatch:
    """A window the query matched: its cosine similarity and its relevance (the
    similarity standardised within its script group, docs/adr/0112; None when too few
    windows were searched to calibrate). `messages`: those of its messages that pass the
    query's filters, when the store read them with the window (one round trip fewer,
    docs/adr/0155); None when it did not (the search asks `ChatEventLog.messages`)."""

    window_id: uuid.UUID
    similarity: float
    event_ids: tuple[str, ...]
    relevance: float | None = None
    messages: tuple[HistoryHit, ...] | None = None


class WindowEmbeddings(Protocol):
    """`dw_message_embeddings`: a regenerable cache; every query names org and model."""

    def upsert(self, model: str, windows: Sequence[EmbeddedWindow]) -> set[uuid.UUID]:
        """Write windows (same id = overwrite), replacing any other row of the same model
        that covers one of their events. Windows whose events were purged or erased
        meanwhile are not written. Returns the ids of those written."""
        ...

    def nearest(
        self, org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int
    ) -> list[WindowMatch]:
        """Exact KNN among the org's rows of `model` that match the query's filters, the k
        most relevant first (by similarity when none can be calibrated), each with its
        relevance against all of them (memory.domain.relevance), and its messages when the
        store reads them in the same statement (`WindowMatch.messages`)."""
        ...

    def drop_model(self, model: str) -> int: ...

    def models(self) -> dict[str, int]:
        """Row count per model."""
        ...


class WatermarkRepository(Protocol):
    def find(self, partition: Partition, model: str) -> SweepWatermark | None: ...

    def get(self, partition: Partition, model: str) -> SweepWatermark:
        """The partition's watermark for `model`; a new (empty) one if none was saved."""
        ...

    def get_many(
        self, partitions: Sequence[Partition], model: str
    ) -> dict[Partition, SweepWatermark]:
        """`get` for each of `partitions`, loaded together (a slice's visits, a status
        page)."""
        ...

    def store(self, watermark: SweepWatermark) -> None: ...

    def store_many(self, watermarks: Sequence[SweepWatermark]) -> None:
        """`store` for several watermarks, atomically (a slice's batch, docs/adr/0115): each
        that changed replaces its record, all or none; `IntegrityError` (the library's)
        when one was saved meanwhile from another copy (docs/adr/0148)."""
        ...


class Transactions(Protocol):
    def transaction(self) -> AbstractContextManager[object]:
        """The stores' writes in the block commit together or not at all (a sweep batch's
        windows and its watermarks' advance, docs/adr/0148)."""
        ...


class PartitionLocks(Protocol):
    def hold(self, partition: Partition, model: str) -> AbstractContextManager[bool]:
        """Exclusive right to sweep a partition for a model, held until the block ends;
        yields False when another sweeper holds it."""
        ...

    def hold_all(
        self, partitions: Sequence[Partition], model: str
    ) -> AbstractContextManager[set[Partition]]:
        """`hold` for several partitions at once (a slice's): yields those held, all
        released when the block ends."""
        ...


class PartitionLockFactory(Protocol):
    def session(self, *, wait: bool) -> AbstractContextManager[PartitionLocks]:
        """A lock session for one pass; `wait` blocks (up to a timeout) on busy locks."""
        ...


class FeatureFlagStore(Protocol):
    def layers(self, org_id: str) -> FlagLayers: ...

    def global_layer(self) -> dict[str, bool]:
        """Each stored flag's master switch (True for `on` and `opt_in`)."""
        ...

    def global_states(self) -> dict[str, GlobalState]:
        """Each stored flag's global state."""
        ...

    def set_global(self, flag: str, state: GlobalState) -> None: ...

    def set_org(self, org_id: str, flag: str, enabled: bool | None) -> None:
        """`None` removes the org's override (the org inherits again)."""
        ...

    def layers_of(self, org_ids: Sequence[str]) -> dict[str, FlagLayers]: ...


class RetentionStore(Protocol):
    def days(self, org_id: str) -> int | None:
        """The org's retention, or None when it uses the default."""
        ...

    def set_days(self, org_id: str, days: int) -> None: ...

    def orgs_with_events(self) -> list[str]: ...

    def purge(self, org_id: str, cutoff: datetime, stored: AcceptedTimeRange) -> tuple[int, int]:
        """Delete the org's events that occurred before `cutoff` or outside `stored` (expired:
        docs/adr/0041) and, in the same transaction, every embedding row covering one of
        them. Returns (events, rows)."""
        ...


@dataclass(frozen=True, slots=True)
class PartitionVisit:
    """Where a partition's sweep stood for a model when a visit of the sweep ended: what the
    org directory aggregates (the watermark itself is an aggregate SQL cannot read)."""

    partition: Partition
    model: str
    position: SweepPosition | None
    windows_embedded: int
    poison_windows: int
    poison_events: int
    stalled: bool
    open_windows: int
    # Whether this visit embedded at least one window.
    embedded: bool
    at: datetime


@dataclass(frozen=True, slots=True)
class OrgPageQuery:
    """One page of the directory: orgs after `after` (None: from the start), starting with
    `prefix`, among `visible` (None: all), at most `limit`, in byte order of org id. The
    sweep figures are those of `model`; lag counts only messages at or before `now`."""

    after: str | None
    prefix: str | None
    visible: frozenset[str] | None
    limit: int
    model: str
    now: datetime


@dataclass(frozen=True, slots=True)
class OrgRow:
    """One org of a directory page, as stored. `waiting_since`: since when the org's oldest
    work the sweep could do now has waited (the sweep's work state, docs/adr/0089; None:
    nothing waits, or no sweep has run with the model yet)."""

    org_id: str
    org_flags: dict[str, bool]
    retention_days: int | None
    partitions: int
    messages: int
    open_windows: int
    poison_windows: int
    poison_events: int
    waiting_since: datetime | None
    last_embedded_at: datetime | None
    last_swept_at: datetime | None


@dataclass(frozen=True, slots=True)
class SweepTotals:
    """An org's totals as maintained counts (migrations 0206 and 0210): its partitions and
    messages, and for one model the sums over the partition states the sweep's last visits
    left. Read in one row however many partitions the org has."""

    partitions: int
    messages: int
    partitions_swept: int
    windows_embedded: int
    open_windows: int
    poison_windows: int
    poison_events: int
    partitions_stalled: int
    last_swept_at: datetime | None
    last_embedded_at: datetime | None


class OrgDirectoryStore(Protocol):
    """The orgs the history context knows (any with partitions, an org flag or a retention
    setting) with per-org aggregates, and the sweep's per-partition state they sum."""

    def page(self, query: OrgPageQuery) -> list[OrgRow]:
        """One query however many orgs the page holds."""
        ...

    def record_visits(self, visits: Sequence[PartitionVisit]) -> None:
        """Keep each visited partition's state for its model (nothing for a partition erased
        meanwhile); a slice's visits together."""
        ...

    def forget_model(self, model: str) -> int:
        """Drop every partition state of `model` (its rows and watermarks were dropped)."""
        ...

    def partitions_after(
        self, org_id: str, after: PartitionKey | None, limit: int
    ) -> list[Partition]:
        """Up to `limit` partitions of the org after `after` (None: from the first), in the
        order of (provider, channel id): one index range, whatever the org's size."""
        ...

    def settled(self, org_id: str, model: str, partitions: Sequence[Partition]) -> set[Partition]:
        """Those of `partitions` (of the org) whose work state for `model` says nothing waits:
        their status needs no read of their messages. One statement for the page."""
        ...

    def sweep_totals(self, org_id: str, model: str) -> SweepTotals:
        """The org's maintained totals (zeros for an org the context does not know)."""
        ...


@dataclass(frozen=True, slots=True)
class DueQuery:
    """The partitions a slice of a pass visits: those of `model` due at `now` (of one org,
    or all), at most `limit`, taken round-robin across orgs (each org's longest-due first,
    then each org's second, ...). An org with one of `required_flags` turned off in its own
    layer is left out (the pass checked the global layer)."""

    model: str
    now: datetime
    limit: int
    required_flags: tuple[str, ...]
    org_id: str | None = None


@dataclass(frozen=True, slots=True)
class DueVisit:
    """A partition a slice visits, with its count of ingests when it was selected."""

    partition: Partition
    changes: int


@dataclass(frozen=True, slots=True)
class VisitOutcome:
    """Where a visit left a partition: due again at `due_at` (None: nothing waits until an
    ingest), with `pending_windows` left. Applied only if no ingest came since `changes`;
    otherwise the partition stays due (the visit may not have seen that ingest)."""

    partition: Partition
    changes: int
    due_at: datetime | None
    pending_windows: int


@dataclass(frozen=True, slots=True)
class BacklogQuery:
    """What waits at `now` for `model` (of one org, or all; orgs with one of
    `required_flags` off in their own layer left out): the `top` orgs waiting longest by
    name, the others counted, and how many orgs have waited at most each of `age_buckets`
    seconds (cumulative, as Prometheus histograms count)."""

    model: str
    now: datetime
    top: int
    required_flags: tuple[str, ...]
    age_buckets: tuple[float, ...] = ()
    org_id: str | None = None


@dataclass(frozen=True, slots=True)
class OrgWaiting:
    """An org with work the sweep could do now: how many partitions, waiting since when."""

    org_id: str
    partitions: int
    waiting_since: datetime


@dataclass(frozen=True, slots=True)
class SweepBacklog:
    """Work waiting at `now` for a model, from the maintained state: due partitions, their
    orgs, since when the oldest waits, and the `top` orgs waiting longest (oldest first)."""

    now: datetime
    partitions: int
    orgs: int
    oldest_since: datetime | None
    longest: tuple[OrgWaiting, ...]
    # Since when the longest-waiting org not among `longest` waits (None: no other org).
    others_since: datetime | None = None
    # Per bound of the query's `age_buckets`: orgs whose oldest work waited at most that.
    orgs_by_age: tuple[tuple[float, int], ...] = ()

    @property
    def oldest_age_seconds(self) -> float | None:
        """How long the longest-waiting partition has waited (None: none waits)."""
        return None if self.oldest_since is None else self.age_seconds(self.oldest_since)

    def age_seconds(self, since: datetime) -> float:
        return max(0.0, (self.now - since).total_seconds())


class SweepSchedule(Protocol):
    """Which partitions have work for the sweep (docs/adr/0089): kept by ingest (in its
    transaction) and by the end of each visit, so that finding them costs one indexed
    statement, never a loop over partitions."""

    def register(self, model: str, now: datetime) -> bool:
        """Make sure every partition has work state for `model`; the first time (a new
        model: a rebuild), every existing partition becomes due (waiting since `now`), in
        one statement. True when this call registered it."""
        ...

    def due(self, query: DueQuery) -> list[DueVisit]: ...

    def finish(self, model: str, outcomes: Sequence[VisitOutcome], now: datetime) -> None:
        """Apply the outcomes of a slice's visits (ended by `now`), in one transaction."""
        ...

    def backlog(self, query: BacklogQuery) -> SweepBacklog:
        """What waits now: one statement whose cost grows with the due partitions only."""
        ...

    def pending_windows(self, org_id: str, model: str) -> int:
        """Windows of the org the sweep has still to embed, as its last visit of each
        partition left them, and at least one per partition ingested into since."""
        ...

    def forget(self, model: str) -> None:
        """Drop `model`'s work state (its rows and watermarks were dropped)."""
        ...


@dataclass(frozen=True, slots=True)
class SearchState:
    """What a search reads before it searches: whether the org ever ingested anything, its
    feature flags (both layers) and the windows the sweep still has to embed for it with
    the active model (`SweepSchedule.pending_windows`)."""

    org_known: bool
    layers: FlagLayers
    pending_windows: int


class SearchStateReader(Protocol):
    def search_state(self, org_id: str, model: str) -> SearchState:
        """The org's `SearchState`, read together (one statement in PostgreSQL,
        docs/adr/0117)."""
        ...
