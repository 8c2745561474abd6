"""The fakes every test tier shares (one per edge, so copies cannot drift):

- `FakeModel`: a controllable embedding model (a model server at the edge), with the knobs
  tests turn: down, failing with any error, rejecting some inputs, failing after N texts,
  slow or gated calls, a forced query vector.
- `FakeClock`: a clock tests move by hand.
- In-memory adapters of the history ports (`InMemoryHistory`), of the policy ports
  (`InMemoryPolicy`, over the library's in-memory event store), the audit trail and the
  API key store (`InMemoryKeyStore`) for unit tests of the contexts' use cases. They keep
  the ports' documented contracts, in Python instead of SQL:
  tests/integration/port_contracts runs the same cases against them and the PostgreSQL
  adapters (docs/adr/0125).
"""

from __future__ import annotations

import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from eventsourcing.persistence import Notification, Tracking
from eventsourcing.popo import POPOTrackingRecorder

from memory.application.audit.ports import AuditEntry, AuditPage, AuditQuery
from memory.application.embedding import (
    EmbeddingError,
    EmbeddingModel,
    InputRejected,
    ModelStatus,
    ModelUnavailable,
)
from memory.application.errors import DeadlineExceeded
from memory.application.history.erasure import ErasedOrg, ErasureReport
from memory.application.history.ports import (
    BacklogQuery,
    DueQuery,
    DueVisit,
    EmbeddedWindow,
    OrgPageQuery,
    OrgRow,
    OrgWaiting,
    OutOfRangeEvent,
    PartitionVisit,
    ReindexedBatch,
    RowKey,
    StoredEvents,
    SweepBacklog,
    SweepTotals,
    VisitOutcome,
    WindowMatch,
)
from memory.application.history.service import HistoryPorts
from memory.application.history.watermarks import SweepWatermarks
from memory.application.policy.ports import (
    PolicyRows,
    ProjectionBusy,
    ProjectorFailed,
    ReembedProgress,
    ReembedReport,
    ResultRows,
    TrackingTable,
)
from memory.application.policy.projection import (
    MetadataRevision,
    PolicyEmbeddingsProjection,
    PolicyEmbeddingsView,
    PolicyRow,
)
from memory.application.policy.service import PolicyPorts
from memory.domain.access.api_key import ApiKey
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.durability.erasure_record import ErasureRecord
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.history.chat_event import EMBEDDABLE_DECISIONS, EVENT_TYPE_MESSAGE, ChatEvent
from memory.domain.history.conversation import ChatMessage
from memory.domain.history.feature_flags import FlagLayers, GlobalState
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import PartitionKey
from memory.domain.history.position import SweepPosition
from memory.domain.history.search import HistoryHit, HistoryQuery, MatchedBy
from memory.domain.history.sweep_plan import LateCatchUp, MainRead, PartitionRead, WatermarkMark
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.filters import SearchFilter, TagMode
from memory.domain.policy.listing import ListPosition, ListRequest, StoredPolicy
from memory.domain.policy.namespace import PolicyNamespace
from memory.domain.policy.search import PolicyDocument, SearchRequest, SimilarityResult
from memory.domain.relevance import QueryDistribution, ScriptGroup, relevances, script_group
from memory.domain.time_range import AcceptedTimeRange
from memory.infrastructure.embedding.factory import stored_model_id
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog, PolicyApplication
from memory.infrastructure.policy.model_objects import ModelObjects

# How long a gated fake waits for its gate before failing the test.
T = TypeVar("T")

# Who tests say makes an administrative change (the audit log records it).
TEST_ACTOR = Actor("key_test", "tests")
GATE_TIMEOUT_SECONDS = 20


class FakeModel:
    """A model server at the edge: the deterministic hash model's vectors (salted with the
    model id when it is not the hash model's own, so two ids are two vector spaces), every
    call recorded, failures on demand."""

    def __init__(
        self, model_id: str | None = None, dimensions: int = 384, *, fail_after: int | None = None
    ) -> None:
        self.inner = HashEmbeddingModel(dimensions)
        own_id = self.inner.identity.id
        self._identity = ModelIdentity(model_id or own_id, dimensions)
        self._salt = "" if self._identity.id == own_id else f"{self._identity.id} "
        # Raised by every call while set (`down = True` sets a ModelUnavailable).
        self.failure: EmbeddingError | None = None
        # Documents containing this text are rejected (InputRejected), others embedded.
        self.reject_marker: str | None = None
        # Documents beyond this many in all fail as unavailable (a server dying mid-replay).
        self.fail_after = fail_after
        self.query_delay = 0.0
        # While set, document calls wait for it to open (`entered` says one is waiting).
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        # While set, query calls wait for it to open (a hung server).
        self.query_gate: threading.Event | None = None
        # Returned for every query instead of the hash vector (e.g. a wrong dimension).
        self.query_vector: EmbeddingVector | None = None
        # Every document call's texts (attempts, failed ones included), and the texts and
        # queries that were embedded.
        self.document_calls: list[list[str]] = []
        self.documents: list[str] = []
        self.query_calls = 0
        self.queries: list[str] = []
        # Called with the call's number (1, 2, ...) as each document call starts: lets a
        # test act in the middle of a pass (e.g. ingest, as a client would meanwhile).
        self.on_document_call: Callable[[int], None] | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return self.inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    @property
    def down(self) -> bool:
        return isinstance(self.failure, ModelUnavailable)

    @down.setter
    def down(self, value: bool) -> None:
        self.failure = ModelUnavailable(self._identity.id, "connection refused") if value else None

    @property
    def attempted(self) -> list[str]:
        """Every document text the model was asked to embed, in call order."""
        with self._lock:
            return [t for call in self.document_calls for t in call]

    @property
    def embedded(self) -> int:
        """How many document texts were embedded."""
        return len(self.documents)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        with self._lock:
            before = sum(len(c) for c in self.document_calls)
            self.document_calls.append(list(texts))
            number = len(self.document_calls)
        if self.on_document_call is not None:
            self.on_document_call(number)
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(GATE_TIMEOUT_SECONDS), "test gate never opened"
        if self.failure is not None:
            raise self.failure
        if self.fail_after is not None and before + len(texts) > self.fail_after:
            raise ModelUnavailable(self._identity.id, "connection refused")
        if self.reject_marker is not None and any(self.reject_marker in t for t in texts):
            raise InputRejected(self._identity.id, "input rejected by the server")
        with self._lock:
            self.documents.extend(texts)
        return self.inner.embed_documents([self._salt + t for t in texts])

    def embed_query(self, text: str) -> EmbeddingVector:
        with self._lock:
            self.query_calls += 1
        if self.query_gate is not None:
            assert self.query_gate.wait(GATE_TIMEOUT_SECONDS), "test query gate never opened"
        time.sleep(self.query_delay)
        if self.failure is not None:
            raise self.failure
        with self._lock:
            self.queries.append(text)
        if self.query_vector is not None:
            return self.query_vector
        return self.inner.embed_query(self._salt + text)

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, not self.down)


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


# History ports in memory -------------------------------------------------------------------

_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class _Stored:
    org_id: str
    event: ChatEvent
    ingest_seq: int

    @property
    def key(self) -> SweepPosition:
        assert self.event.event_id is not None
        return SweepPosition(self.event.occurred_at, self.event.event_id)

    def message(self) -> ChatMessage:
        assert self.event.event_id is not None
        return ChatMessage(
            self.event.event_id, self.event.sender, self.event.text, self.event.occurred_at
        )

    def hit(self, matched_by: MatchedBy) -> HistoryHit:
        assert self.event.event_id is not None
        e = self.event
        return HistoryHit(
            e.event_id, e.provider, e.channel_id, e.sender, e.text, e.occurred_at, matched_by
        )

    def in_scope(self, query: HistoryQuery) -> bool:
        e = self.event
        return (
            (query.provider is None or e.provider == query.provider)
            and (query.channel_id is None or e.channel_id == query.channel_id)
            and (query.since is None or e.occurred_at >= query.since)
            and (query.until is None or e.occurred_at < query.until)
        )


class InMemoryChatEventLog:
    """`ChatEventLog`: events per org with an ingest sequence; full-text is "every query
    word appears", ranked by how often."""

    def __init__(self) -> None:
        self.rows: list[_Stored] = []
        self._seq: dict[str, int] = {}
        # Where ingest marks work for the sweep, as the real log does in its transaction.
        self.schedule: InMemorySweepSchedule | None = None
        # `dw_chat_partitions`: every partition that got an event, with when it got its
        # first; an event erased or purged leaves its partition, only an org erasure
        # forgets it (the org then never ingested anything).
        self.first_ingested: dict[Partition, datetime] = {}

    def append(self, org_id: str, events: Sequence[ChatEvent]) -> StoredEvents:
        known = {r.event.event_id for r in self.rows if r.org_id == org_id}
        inserted = 0
        touched: set[Partition] = set()
        now = self.schedule.clock() if self.schedule is not None else datetime.now(UTC)
        for event in events:
            if event.event_id in known:
                continue
            self.first_ingested.setdefault(event.partition(org_id), now)
            self._seq[org_id] = self._seq.get(org_id, 0) + 1
            self.rows.append(_Stored(org_id, event, self._seq[org_id]))
            known.add(event.event_id)
            inserted += 1
            if _embeddable(event):
                touched.add(event.partition(org_id))
        if self.schedule is not None:
            self.schedule.mark(touched)
        return StoredEvents([str(e.event_id) for e in events], inserted)

    def full_text(self, org_id: str, query: HistoryQuery) -> list[HistoryHit]:
        words = [w.lower() for w in _WORD.findall(query.text)]
        scored = []
        for row in self._readable(self._org(org_id)):
            text = [w.lower() for w in _WORD.findall(row.event.text)]
            if words and all(w in text for w in words) and row.in_scope(query):
                scored.append((sum(text.count(w) for w in words), row))
        scored.sort(key=lambda s: (-s[0], -s[1].event.occurred_at.timestamp(), s[1].key))
        return [row.hit(MatchedBy.FTS) for _, row in scored[: query.limit]]

    def messages(
        self, org_id: str, event_ids: Sequence[str], query: HistoryQuery
    ) -> list[HistoryHit]:
        wanted = set(event_ids)
        return [
            r.hit(MatchedBy.SEMANTIC)
            for r in self._readable(self._org(org_id))
            if r.event.event_id in wanted and r.in_scope(query)
        ]

    def org_known(self, org_id: str) -> bool:
        return any(p.org_id == org_id for p in self.first_ingested)

    def partitions(self, org_id: str | None = None) -> list[Partition]:
        return sorted(p for p in self.first_ingested if org_id is None or p.org_id == org_id)

    def forget_org(self, org_id: str) -> None:
        """An org erasure: its events and its partitions."""
        self.rows = [r for r in self.rows if r.org_id != org_id]
        for partition in self.partitions(org_id):
            del self.first_ingested[partition]

    def read_main(self, partition: Partition, mark: WatermarkMark, limit: int) -> MainRead:
        rows = self._embeddable(partition)
        horizon = max((r.ingest_seq for r in self._partition(partition)), default=0)
        out_of_range = len(self._readable(self._partition(partition))) < len(
            self._partition(partition)
        )
        if mark.position is not None and any(self._is_late(r, mark) for r in rows):
            return MainRead(PartitionRead((), True), horizon, True, out_of_range)
        after = [r for r in rows if mark.position is None or r.key > mark.position]
        return MainRead(_read(after, limit), horizon, False, out_of_range)

    def read_main_many(
        self, marks: Sequence[tuple[Partition, WatermarkMark]], limit: int
    ) -> dict[Partition, MainRead]:
        if any(mark.late is not None for _, mark in marks):
            raise ValueError("a mark with a late catch-up reads its late stream")
        return {partition: self.read_main(partition, mark, limit) for partition, mark in marks}

    def read_late(
        self, partition: Partition, mark: WatermarkMark, late: LateCatchUp, limit: int
    ) -> PartitionRead:
        rows = [
            r
            for r in self._embeddable(partition)
            if self._is_late(r, mark)
            and r.ingest_seq <= late.horizon_seq
            and (late.cursor is None or r.key > late.cursor)
        ]
        return _read(rows, limit)

    def count_unconsumed(self, partition: Partition, mark: WatermarkMark) -> int:
        def consumed(r: _Stored) -> bool:
            if mark.position is None or r.key > mark.position:
                return False
            if r.ingest_seq <= mark.seen_seq:
                return True
            late = mark.late
            return (
                late is not None
                and late.cursor is not None
                and r.ingest_seq <= late.horizon_seq
                and r.key <= late.cursor
            )

        return sum(1 for r in self._embeddable(partition) if not consumed(r))

    def out_of_range(
        self, partition: Partition, known: Sequence[str], limit: int
    ) -> list[OutOfRangeEvent]:
        """The partition's rows outside the stored range (ingest refuses them today; a test
        stores one as an older version did), with the instant as PostgreSQL prints it."""
        readable = {id(r) for r in self._readable(self._partition(partition))}
        found = sorted(
            (r for r in self._partition(partition) if id(r) not in readable),
            key=lambda r: str(r.event.event_id),
        )
        return [
            OutOfRangeEvent(str(r.event.event_id), _as_postgres_prints(r.event.occurred_at))
            for r in found
            if r.event.event_id not in known
        ][:limit]

    def count_stale(self, org_id: str | None = None) -> int:
        """Never stale: this log indexes every event as it stores it."""
        return 0

    def reindex_batch(self, after: RowKey | None, limit: int) -> ReindexedBatch:
        return ReindexedBatch(0, None)

    def purge(self, org_id: str, cutoff: datetime, stored: AcceptedTimeRange) -> list[str]:
        """Delete the org's expired events (before `cutoff` or outside `stored`); their
        partitions stay, as `dw_chat_partitions` rows do."""
        gone = [
            r
            for r in self._org(org_id)
            if r.event.occurred_at < cutoff or not stored.contains(r.event.occurred_at)
        ]
        self.rows = [r for r in self.rows if r not in gone]
        return [str(r.event.event_id) for r in gone]

    def has(self, org_id: str, event_id: str) -> bool:
        return any(r.event.event_id == event_id for r in self._org(org_id))

    def _org(self, org_id: str) -> list[_Stored]:
        return [r for r in self.rows if r.org_id == org_id]

    def _partition(self, partition: Partition) -> list[_Stored]:
        return [r for r in self.rows if r.event.partition(r.org_id) == partition]

    def _embeddable(self, partition: Partition) -> list[_Stored]:
        return sorted(
            (r for r in self._readable(self._partition(partition)) if _embeddable(r.event)),
            key=lambda r: r.key,
        )

    def _readable(self, rows: list[_Stored]) -> list[_Stored]:
        """Rows inside `AcceptedTimeRange.for_stored_rows`: no read returns the others."""
        now = self.schedule.clock() if self.schedule is not None else datetime.now(UTC)
        accepted = AcceptedTimeRange.for_stored_rows(now)
        return [r for r in rows if accepted.contains(r.event.occurred_at)]

    @staticmethod
    def _is_late(row: _Stored, mark: WatermarkMark) -> bool:
        assert mark.position is not None
        return row.ingest_seq > mark.seen_seq and row.key <= mark.position


def _as_postgres_prints(at: datetime) -> str:
    """`occurred_at::text` in a UTC session: `2099-01-02 03:04:05.12+00`."""
    utc = at.astimezone(UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%d %H:%M:%S}{fraction}+00"


def _embeddable(event: ChatEvent) -> bool:
    """The sweep's row filter, as the SQL adapter composes it from the same constants."""
    return event.event_type == EVENT_TYPE_MESSAGE and event.decision in EMBEDDABLE_DECISIONS


def _read(rows: list[_Stored], limit: int) -> PartitionRead:
    return PartitionRead(tuple(r.message() for r in rows[:limit]), complete=len(rows) <= limit)


@dataclass(frozen=True, slots=True)
class _Row:
    id: uuid.UUID
    org_id: str
    partition: Partition
    model: str
    vector: EmbeddingVector
    event_ids: tuple[str, ...]
    first: datetime
    last: datetime
    script_group: ScriptGroup = ScriptGroup.OTHER


class InMemoryWindowEmbeddings:
    """`WindowEmbeddings`: rows by id; exact cosine KNN; a window whose events were purged
    meanwhile is not written."""

    def __init__(self, events: InMemoryChatEventLog) -> None:
        self._events = events
        self.rows: dict[uuid.UUID, _Row] = {}
        self.upserts: list[uuid.UUID] = []

    def upsert(self, model: str, windows: Sequence[EmbeddedWindow]) -> set[uuid.UUID]:
        written: set[uuid.UUID] = set()
        for w in windows:
            ids = w.window.event_ids
            if not all(self._events.has(w.partition.org_id, e) for e in ids):
                continue
            for other in list(self.rows.values()):
                if (
                    other.model == model
                    and other.partition == w.partition
                    and other.id != w.id
                    and set(other.event_ids) & set(ids)
                ):
                    del self.rows[other.id]
            self.rows[w.id] = _Row(
                w.id,
                w.partition.org_id,
                w.partition,
                model,
                w.vector,
                tuple(ids),
                w.window.first.occurred_at,
                w.window.last.occurred_at,
                script_group(w.window.content),
            )
            self.upserts.append(w.id)
            written.add(w.id)
        return written

    def nearest(
        self, org_id: str, model: str, vector: EmbeddingVector, query: HistoryQuery, k: int
    ) -> list[WindowMatch]:
        scored = [
            (cosine_similarity(vector, r.vector), r)
            for r in self.rows.values()
            if r.org_id == org_id
            and r.model == model
            and (query.provider is None or r.partition.provider == query.provider)
            and (query.channel_id is None or r.partition.channel_id == query.channel_id)
            and (query.since is None or r.last >= query.since)
            and (query.until is None or r.first < query.until)
        ]
        rel = relevances([(r.script_group, sim) for sim, r in scored])
        matches = [
            WindowMatch(r.id, sim, r.event_ids, relevance)
            for (sim, r), relevance in zip(scored, rel, strict=True)
        ]
        matches.sort(
            key=lambda m: (m.relevance is None, -(m.relevance or 0.0), -m.similarity, m.window_id)
        )
        return matches[:k]

    def drop_model(self, model: str) -> int:
        gone = [i for i, r in self.rows.items() if r.model == model]
        for i in gone:
            del self.rows[i]
        return len(gone)

    def models(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.rows.values():
            counts[r.model] = counts.get(r.model, 0) + 1
        return counts

    def purge_events(self, org_id: str, event_ids: Sequence[str]) -> int:
        gone = {
            i
            for i, r in self.rows.items()
            if r.org_id == org_id and set(r.event_ids) & set(event_ids)
        }
        for i in gone:
            del self.rows[i]
        return len(gone)


def cosine_similarity(a: EmbeddingVector, b: EmbeddingVector) -> float:
    """What pgvector's `<=>` turns into similarity, for tests that compare vectors."""
    if a.dimensions != b.dimensions:
        raise ValueError(f"cannot compare vectors of {a.dimensions} and {b.dimensions} dims")
    denom = a.norm() * b.norm()
    return sum(x * y for x, y in zip(a.values, b.values, strict=True)) / denom if denom else 0.0


class InMemoryFeatureFlags:
    """`FeatureFlagStore`: the two stored layers."""

    def __init__(self) -> None:
        self.global_values: dict[str, GlobalState] = {}
        self.org_values: dict[str, dict[str, bool]] = {}

    def layers(self, org_id: str) -> FlagLayers:
        return FlagLayers.of(dict(self.global_values), dict(self.org_values.get(org_id, {})))

    def global_layer(self) -> dict[str, bool]:
        return {flag: state.enabled for flag, state in self.global_values.items()}

    def global_states(self) -> dict[str, GlobalState]:
        return dict(self.global_values)

    def set_global(self, flag: str, state: GlobalState) -> None:
        self.global_values[flag] = state

    def set_org(self, org_id: str, flag: str, enabled: bool | None) -> None:
        values = self.org_values.setdefault(org_id, {})
        if enabled is None:
            values.pop(flag, None)
        else:
            values[flag] = enabled

    def layers_of(self, org_ids: Sequence[str]) -> dict[str, FlagLayers]:
        return {org: self.layers(org) for org in org_ids}


class InMemoryPartitionLocks:
    """`PartitionLockFactory`: one sweeper per (partition, model) across sessions, as the
    advisory locks are (a session may take its own lock again); partitions held by
    "another sweeper" outside the test are listed in `busy`."""

    def __init__(self) -> None:
        self.busy: set[Partition] = set()
        self.sessions: list[bool] = []
        # (partition, model) -> (the session holding it, how many times it took it)
        self._held: dict[tuple[Partition, str], tuple[object, int]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def session(self, *, wait: bool) -> Iterator[_InMemoryLockSession]:
        self.sessions.append(wait)
        yield _InMemoryLockSession(self)

    def take(self, session: object, partition: Partition, model: str) -> bool:
        with self._lock:
            holder, count = self._held.get((partition, model), (session, 0))
            if partition in self.busy or holder is not session:
                return False
            self._held[(partition, model)] = (session, count + 1)
            return True

    def release(self, partition: Partition, model: str) -> None:
        with self._lock:
            holder, count = self._held[(partition, model)]
            if count == 1:
                del self._held[(partition, model)]
            else:
                self._held[(partition, model)] = (holder, count - 1)


class _InMemoryLockSession:
    """One sweeper's lock session (a connection of its own, for the advisory locks)."""

    def __init__(self, locks: InMemoryPartitionLocks) -> None:
        self._locks = locks

    @contextmanager
    def hold(self, partition: Partition, model: str) -> Iterator[bool]:
        held = self._locks.take(self, partition, model)
        try:
            yield held
        finally:
            if held:
                self._locks.release(partition, model)

    @contextmanager
    def hold_all(self, partitions: Sequence[Partition], model: str) -> Iterator[set[Partition]]:
        held = [p for p in partitions if self._locks.take(self, p, model)]
        try:
            yield set(held)
        finally:
            for p in held:
                self._locks.release(p, model)


class InMemoryRetention:
    """`RetentionStore`: days per org; purge deletes events and the rows covering them."""

    def __init__(self, events: InMemoryChatEventLog, windows: InMemoryWindowEmbeddings) -> None:
        self._events = events
        self._windows = windows
        self.days_by_org: dict[str, int] = {}

    def days(self, org_id: str) -> int | None:
        return self.days_by_org.get(org_id)

    def set_days(self, org_id: str, days: int) -> None:
        self.days_by_org[org_id] = days

    def orgs_with_events(self) -> list[str]:
        # Every org with a partition, as PostgreSQL lists them (a purge leaves partitions).
        return sorted({p.org_id for p in self._events.partitions()})

    def purge(self, org_id: str, cutoff: datetime, stored: AcceptedTimeRange) -> tuple[int, int]:
        gone = self._events.purge(org_id, cutoff, stored)
        return len(gone), self._windows.purge_events(org_id, gone)


class InMemoryErasure:
    """`ErasureStore`: deletes events and the rows covering them (and, for an org, its
    flags and retention)."""

    def __init__(
        self,
        events: InMemoryChatEventLog,
        windows: InMemoryWindowEmbeddings,
        flags: InMemoryFeatureFlags,
        retention: InMemoryRetention,
        directory: InMemoryOrgDirectory,
        schedule: InMemorySweepSchedule,
    ) -> None:
        self._events = events
        self._windows = windows
        self._flags = flags
        self._retention = retention
        self._directory = directory
        self._schedule = schedule

    def erase_events(self, org_id: str, event_ids: Sequence[str]) -> ErasureReport:
        wanted = set(event_ids)
        return self._erase(org_id, lambda r: r.event.event_id in wanted)

    def erase_sender(self, org_id: str, sender: str) -> ErasureReport:
        return self._erase(org_id, lambda r: r.event.sender == sender)

    def erase_org(self, org_id: str) -> ErasedOrg:
        partitions = self._events.partitions(org_id)
        models = sorted({r.model for r in self._windows.rows.values() if r.org_id == org_id})
        report = self._erase(org_id, lambda r: True)
        self._events.forget_org(org_id)
        flags = len(self._flags.org_values.pop(org_id, {}))
        retention = self._retention.days_by_org.pop(org_id, None) is not None
        self._directory.forget_org(org_id)
        self._schedule.forget_org(org_id)
        return ErasedOrg(
            report.events_deleted, report.windows_deleted, partitions, models, flags, retention
        )

    def _erase(self, org_id: str, erased: Callable[[_Stored], bool]) -> ErasureReport:
        gone = [r for r in self._events.rows if r.org_id == org_id and erased(r)]
        self._events.rows = [r for r in self._events.rows if r not in gone]
        ids = [str(r.event.event_id) for r in gone]
        return ErasureReport(len(gone), self._windows.purge_events(org_id, ids))


class InMemoryOrgDirectory:
    """`OrgDirectoryStore` over the other in-memory adapters (an org is known while it has
    events, an org flag or a retention) and the visits the sweep recorded."""

    def __init__(
        self,
        events: InMemoryChatEventLog,
        flags: InMemoryFeatureFlags,
        retention: InMemoryRetention,
    ) -> None:
        self._events = events
        self._flags = flags
        self._retention = retention
        self.visits: dict[tuple[Partition, str], tuple[PartitionVisit, datetime | None]] = {}
        # The sweep's work state (set by InMemoryHistory, as migration 0207's table is there).
        self.schedule: InMemorySweepSchedule | None = None

    def record_visits(self, visits: Sequence[PartitionVisit]) -> None:
        for visit in visits:
            self._record_visit(visit)

    def _record_visit(self, visit: PartitionVisit) -> None:
        if visit.partition not in self._events.partitions(visit.partition.org_id):
            return
        before = self.visits.get((visit.partition, visit.model))
        embedded_at = visit.at if visit.embedded else (before[1] if before else None)
        self.visits[(visit.partition, visit.model)] = (visit, embedded_at)

    def forget_model(self, model: str) -> int:
        gone = [k for k in self.visits if k[1] == model]
        for k in gone:
            del self.visits[k]
        return len(gone)

    def forget_org(self, org_id: str) -> None:
        for k in [k for k in self.visits if k[0].org_id == org_id]:
            del self.visits[k]

    def settled(self, org_id: str, model: str, partitions: Sequence[Partition]) -> set[Partition]:
        work = self.schedule.work if self.schedule is not None else {}
        return {
            p
            for p in partitions
            if (p, model) in work and work[(p, model)].due_at is None and p.org_id == org_id
        }

    def partitions_after(
        self, org_id: str, after: PartitionKey | None, limit: int
    ) -> list[Partition]:
        found = self._events.partitions(org_id)
        if after is not None:
            found = [p for p in found if PartitionKey(p.provider, p.channel_id) > after]
        return found[:limit]

    def sweep_totals(self, org_id: str, model: str) -> SweepTotals:
        visits = [v for (p, m), v in self.visits.items() if p.org_id == org_id and m == model]
        return SweepTotals(
            partitions=len(self._events.partitions(org_id)),
            messages=sum(1 for r in self._events.rows if r.org_id == org_id),
            partitions_swept=len(visits),
            windows_embedded=sum(v.windows_embedded for v, _ in visits),
            open_windows=sum(v.open_windows for v, _ in visits),
            poison_windows=sum(v.poison_windows for v, _ in visits),
            poison_events=sum(v.poison_events for v, _ in visits),
            partitions_stalled=sum(1 for v, _ in visits if v.stalled),
            last_swept_at=max((v.at for v, _ in visits), default=None),
            last_embedded_at=max((e for _, e in visits if e is not None), default=None),
        )

    def page(self, query: OrgPageQuery) -> list[OrgRow]:
        known = {p.org_id for p in self._events.partitions()}
        known |= {o for o, values in self._flags.org_values.items() if values}
        known |= set(self._retention.days_by_org)
        orgs = sorted(
            o
            for o in known
            if (query.after is None or o > query.after)
            and (query.prefix is None or o.startswith(query.prefix))
            and (query.visible is None or o in query.visible)
        )
        return [self._row(o, query) for o in orgs[: query.limit]]

    def _row(self, org_id: str, query: OrgPageQuery) -> OrgRow:
        partitions = self._events.partitions(org_id)
        visits = [v for (p, m), v in self.visits.items() if p.org_id == org_id and m == query.model]
        work = self.schedule.work if self.schedule is not None else {}
        waiting = [
            w.waiting_since
            for (p, m), w in work.items()
            if p.org_id == org_id
            and m == query.model
            and w.due_at is not None
            and w.waiting_since is not None
            and w.waiting_since <= query.now
        ]
        return OrgRow(
            org_id=org_id,
            org_flags=dict(self._flags.org_values.get(org_id, {})),
            retention_days=self._retention.days_by_org.get(org_id),
            partitions=len(partitions),
            messages=sum(1 for r in self._events.rows if r.org_id == org_id),
            open_windows=sum(v.open_windows for v, _ in visits),
            poison_windows=sum(v.poison_windows for v, _ in visits),
            poison_events=sum(v.poison_events for v, _ in visits),
            waiting_since=min(waiting, default=None),
            last_embedded_at=max((e for _, e in visits if e is not None), default=None),
            last_swept_at=max((v.at for v, _ in visits), default=None),
        )


@dataclass
class _Work:
    changes: int = 0
    due_at: datetime | None = None
    waiting_since: datetime | None = None
    pending_windows: int = 0


_NEVER = datetime.min.replace(tzinfo=UTC)


class InMemorySweepSchedule:
    """`SweepSchedule` as migration 0207's rows: work per (partition, model), marked by the
    in-memory log's ingest, cleared by `finish` only when no ingest came since the visit
    took the partition. `clock` stamps ingests (the real log's clock)."""

    def __init__(self, events: InMemoryChatEventLog, flags: InMemoryFeatureFlags) -> None:
        self._events = events
        self._flags = flags
        self.models: set[str] = set()
        self.work: dict[tuple[Partition, str], _Work] = {}
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def mark(self, partitions: set[Partition]) -> None:
        now = self.clock()
        for partition in partitions:
            for model in self.models:
                work = self.work.setdefault((partition, model), _Work())
                work.changes += 1
                work.due_at = _NEVER
                work.waiting_since = min(work.waiting_since or now, now)
                work.pending_windows = max(work.pending_windows, 1)

    def register(self, model: str, now: datetime) -> bool:
        if model in self.models:
            return False
        self.models.add(model)
        for partition in self._events.partitions():
            self.work.setdefault((partition, model), _Work(0, _NEVER, now, 1))
        return True

    def due(self, query: DueQuery) -> list[DueVisit]:
        by_org: dict[str, list[tuple[Partition, _Work]]] = {}
        for (partition, model), work in sorted(self.work.items()):
            if model != query.model or work.due_at is None or work.due_at > query.now:
                continue
            if query.org_id is not None and partition.org_id != query.org_id:
                continue
            if not self._enabled(partition.org_id, query.required_flags):
                continue
            by_org.setdefault(partition.org_id, []).append((partition, work))
        turns = [
            (turn, work.due_at, work.waiting_since, partition, work.changes)
            for queue in by_org.values()
            for turn, (partition, work) in enumerate(
                sorted(queue, key=lambda q: (q[1].due_at, q[1].waiting_since, q[0]))
            )
        ]
        turns.sort(key=lambda t: (t[0], t[1], t[2], t[3].org_id))
        return [DueVisit(t[3], t[4]) for t in turns[: query.limit]]

    def finish(self, model: str, outcomes: Sequence[VisitOutcome], now: datetime) -> None:
        for outcome in outcomes:
            work = self.work.get((outcome.partition, model))
            if work is None or outcome.partition not in self._events.partitions():
                continue
            if work.changes != outcome.changes:
                work.pending_windows = max(outcome.pending_windows, 1)
                continue
            work.due_at = outcome.due_at
            if outcome.due_at is None:
                work.waiting_since = None
            elif outcome.due_at > now:
                work.waiting_since = outcome.due_at
            work.pending_windows = outcome.pending_windows

    def backlog(self, query: BacklogQuery) -> SweepBacklog:
        model, now, top, org_id = query.model, query.now, query.top, query.org_id
        required_flags = query.required_flags
        waiting: dict[str, list[datetime]] = {}
        if model not in self.models:  # every partition waits until the model registers
            for partition in self._events.partitions(org_id):
                if self._enabled(partition.org_id, required_flags):
                    since = self._events.first_ingested[partition]
                    waiting.setdefault(partition.org_id, []).append(since)
        for (partition, m), work in self.work.items():
            if m != model or work.due_at is None or work.due_at > now:
                continue
            if org_id is not None and partition.org_id != org_id:
                continue
            if not self._enabled(partition.org_id, required_flags):
                continue
            assert work.waiting_since is not None
            waiting.setdefault(partition.org_id, []).append(work.waiting_since)
        orgs = sorted(
            (OrgWaiting(o, len(since), min(since)) for o, since in waiting.items()),
            key=lambda w: (w.waiting_since, w.org_id),
        )
        return SweepBacklog(
            now=now,
            partitions=sum(w.partitions for w in orgs),
            orgs=len(orgs),
            oldest_since=orgs[0].waiting_since if orgs else None,
            longest=tuple(orgs[:top]),
            others_since=orgs[top].waiting_since if len(orgs) > top else None,
            orgs_by_age=tuple(
                (b, sum(1 for o in orgs if o.waiting_since >= now - timedelta(seconds=b)))
                for b in query.age_buckets
            ),
        )

    def pending_windows(self, org_id: str, model: str) -> int:
        if model not in self.models:
            return len(self._events.partitions(org_id))
        return sum(
            w.pending_windows
            for (p, m), w in self.work.items()
            if p.org_id == org_id and m == model and w.due_at is not None
        )

    def forget(self, model: str) -> None:
        self.models.discard(model)
        for key in [k for k in self.work if k[1] == model]:
            del self.work[key]

    def forget_org(self, org_id: str) -> None:
        for key in [k for k in self.work if k[0].org_id == org_id]:
            del self.work[key]

    def _enabled(self, org_id: str, required: tuple[str, ...]) -> bool:
        # The org's own layer, with its default under an opt_in global state (ADR 0131).
        layers = self._flags.layers(org_id)
        return all(layers.org_value(flag) for flag in required)


@dataclass(frozen=True)
class InMemoryHistory:
    """Every history port in memory, wired together (a purge reaches the embeddings)."""

    events: InMemoryChatEventLog
    windows: InMemoryWindowEmbeddings
    flags: InMemoryFeatureFlags
    watermarks: SweepWatermarks
    locks: InMemoryPartitionLocks
    retention: InMemoryRetention
    erasure: InMemoryErasure
    directory: InMemoryOrgDirectory
    schedule: InMemorySweepSchedule

    @classmethod
    def create(cls) -> InMemoryHistory:
        events = InMemoryChatEventLog()
        windows = InMemoryWindowEmbeddings(events)
        flags = InMemoryFeatureFlags()
        retention = InMemoryRetention(events, windows)
        directory = InMemoryOrgDirectory(events, flags, retention)
        schedule = InMemorySweepSchedule(events, flags)
        events.schedule = schedule
        directory.schedule = schedule
        return cls(
            events=events,
            windows=windows,
            flags=flags,
            # No env: the library's in-memory persistence.
            watermarks=SweepWatermarks(),
            locks=InMemoryPartitionLocks(),
            retention=retention,
            erasure=InMemoryErasure(events, windows, flags, retention, directory, schedule),
            directory=directory,
            schedule=schedule,
        )

    def ports(self) -> HistoryPorts:
        return HistoryPorts(
            events=self.events,
            windows=self.windows,
            flags=self.flags,
            watermarks=self.watermarks,
            locks=self.locks,
            retention=self.retention,
            full_text=self.events,
            erasure=self.erasure,
            directory=self.directory,
            schedule=self.schedule,
        )


def chat_message(
    event_id: str,
    at: datetime,
    text: str = "could you help me reset my password please",
    **fields: str,
) -> ChatEvent:
    """A chat message in partition slack/C1 unless `fields` say otherwise."""
    base = ChatEvent(
        event_id=event_id,
        provider="slack",
        channel_id="C1",
        sender="ali",
        text=text,
        occurred_at=at,
    )
    return replace(base, **fields) if fields else base


class InMemoryAuditTrail:
    """The audit trail in memory: runs the change, keeps the event it would record (and
    records nothing when the change raises), as `PostgresAuditTrail` does in one transaction."""

    def __init__(self) -> None:
        self.recorded: list[AuditEntry] = []

    def record(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, AuditedChange]]
    ) -> T:
        result, audited = change()
        self._append(actor, action, audited)
        return result

    def record_many(
        self, actor: Actor, action: Action, change: Callable[[], tuple[T, list[AuditedChange]]]
    ) -> T:
        result, audited = change()
        for one in audited:
            self._append(actor, action, one)
        return result

    def _append(self, actor: Actor, action: Action, audited: AuditedChange) -> None:
        self.recorded.append(
            AuditEntry(
                id=len(self.recorded) + 1,
                recorded_at=datetime.now(UTC),
                actor=actor,
                action=action.value,
                org_id=audited.org_id,
                target=audited.target,
                before=audited.before,
                after=audited.after,
            )
        )

    def entries(self, query: AuditQuery) -> AuditPage:
        """Newest first, filtered and paged as `PostgresAuditTrail` pages (keyset by id)."""
        matching = [
            e
            for e in reversed(self.recorded)
            if (query.since is None or e.recorded_at >= query.since)
            and (query.until is None or e.recorded_at < query.until)
            and (query.org_id is None or e.org_id == query.org_id)
            and (query.before_id is None or e.id < query.before_id)
        ]
        page = matching[: query.limit]
        more = len(matching) > query.limit
        return AuditPage(page, page[-1].id if more and page else None)

    def actions(self) -> list[str]:
        return [e.action for e in self.recorded]


class InMemoryErasureJournal:
    """The erasure journal (docs/adr/0106) in memory; `FileErasureJournal` runs the same
    cases (tests/integration/durability/test_erasure_journal_file.py)."""

    def __init__(self) -> None:
        self.kept: list[ErasureRecord] = []

    def append(self, record: ErasureRecord) -> None:
        self.kept.append(record)

    def records(self) -> list[ErasureRecord]:
        return list(self.kept)

    def prune(self, before: datetime) -> int:
        kept = [r for r in self.kept if r.recorded_at >= before]
        dropped = len(self.kept) - len(kept)
        self.kept = kept
        return dropped


class InMemoryKeyStore:
    """`KeyStore` in memory: keys by id with their digests (never a secret), as
    `PostgresKeyStore` keeps `api_keys`. `lock_bootstrap` serialises nothing: the fake has no
    transaction for it to last until, so concurrent bootstraps are PostgreSQL's case
    (tests/integration/access/test_keys.py)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[ApiKey, bytes]] = {}

    def add(self, key: ApiKey, digest: bytes) -> None:
        if key.key_id in self.rows or any(d == digest for _, d in self.rows.values()):
            # As the table's primary key and its unique digest refuse it.
            raise ValueError(f"key {key.key_id!r} or its digest is stored already")
        self.rows[key.key_id] = (key, digest)

    def find(self, digest: bytes) -> ApiKey | None:
        return next((k for k, d in self.rows.values() if d == digest), None)

    def get(self, key_id: str) -> ApiKey | None:
        row = self.rows.get(key_id)
        return None if row is None else row[0]

    def keys(self, org_id: str | None, created_by: str | None = None) -> list[ApiKey]:
        made = None if created_by is None else self._descendants(created_by)
        found = [
            key
            for key, _ in self.rows.values()
            if (org_id is None or key.org_id == org_id) and (made is None or key.key_id in made)
        ]
        return sorted(found, key=lambda k: (k.created_at, k.key_id))

    def _descendants(self, creator: str) -> set[str]:
        made: set[str] = set()
        parents = {creator}
        while parents:
            children = {k.key_id for k, _ in self.rows.values() if k.created_by in parents} - made
            made |= children
            parents = children
        return made

    def revoke(self, key_id: str, at: datetime) -> None:
        row = self.rows.get(key_id)
        if row is not None and not row[0].revoked:
            self.rows[key_id] = (row[0].revoked_as_of(at), row[1])

    def touch(self, key_id: str, at: datetime) -> None:
        row = self.rows.get(key_id)
        if row is not None and (row[0].last_used_at is None or row[0].last_used_at < at):
            self.rows[key_id] = (replace(row[0], last_used_at=at), row[1])

    def lock_bootstrap(self) -> None:
        pass

    def count(self) -> int:
        return len(self.rows)


# Policy ports in memory --------------------------------------------------------------------


class InMemoryPolicyTable:
    """`policy_embeddings` in memory: every model's rows, by (embedding_ref, model)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[uuid.UUID, str], PolicyRow] = {}
        self.lock = threading.Lock()

    def of_model(self, model: str) -> list[PolicyRow]:
        with self.lock:
            return [r for (_, m), r in self.rows.items() if m == model]


class InMemoryPolicyView(POPOTrackingRecorder, PolicyEmbeddingsView):
    """One model's projection view in memory: each write changes the table and records the
    position together, as `PostgresPolicyEmbeddingsView` does in one transaction."""

    def __init__(
        self, table: InMemoryPolicyTable, on_commit: Callable[[int], None] | None = None
    ) -> None:
        super().__init__()
        self._table = table
        self._on_commit = on_commit

    def upsert_row(self, row: PolicyRow, tracking: Tracking) -> None:
        with self._table.lock:
            key = (row.embedding_ref, row.model)
            current = self._table.rows.get(key)
            if current is None:
                self._table.rows[key] = row
            elif current.version < row.version:
                # The row keeps its creation time, as the SQL upsert does.
                self._table.rows[key] = replace(row, created_at=current.created_at)
        self.insert_tracking(tracking)

    def revise_metadata(self, revision: MetadataRevision, tracking: Tracking) -> None:
        with self._table.lock:
            key = (revision.embedding_ref, revision.model)
            current = self._table.rows.get(key)
            if current is not None and current.version < revision.version:
                self._table.rows[key] = replace(
                    current,
                    version=revision.version,
                    metadata=revision.metadata,
                    updated_at=revision.updated_at,
                )
        self.insert_tracking(tracking)

    def remove_row(self, embedding_ref: uuid.UUID, model: str, tracking: Tracking) -> None:
        with self._table.lock:
            self._table.rows.pop((embedding_ref, model), None)
        self.insert_tracking(tracking)

    def remove_deleted(self, embedding_ref: uuid.UUID, version: int, tracking: Tracking) -> None:
        with self._table.lock:
            for key, row in list(self._table.rows.items()):
                if row.embedding_ref == embedding_ref and row.version < version:
                    del self._table.rows[key]
        self.insert_tracking(tracking)

    def insert_tracking(self, tracking: Tracking) -> None:
        super().insert_tracking(tracking)
        if self._on_commit is not None:
            self._on_commit(tracking.notification_id)


def _tags_match(search_filter: SearchFilter, tags: tuple[str, ...]) -> bool:
    if search_filter.tags is None:
        return True
    wanted = set(search_filter.tags.tags)
    if search_filter.tags.mode is TagMode.ANY:
        return bool(wanted & set(tags))
    return wanted <= set(tags)


def _json_equal(a: object, b: object) -> bool:
    """JSON equality as jsonb containment compares scalars (true is not 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _matches(search_filter: SearchFilter, row: PolicyRow) -> bool:
    metadata = row.metadata.to_json()
    checks = [
        search_filter.source is None or row.metadata.source == search_filter.source,
        search_filter.title is None or row.metadata.title == search_filter.title,
        _tags_match(search_filter, row.metadata.tags),
        all(
            key in metadata and _json_equal(metadata[key], value)
            for key, value in search_filter.metadata.items()
        ),
    ]
    bounds = search_filter.timestamp
    if bounds is not None:
        at = row.updated_at
        checks += [
            bounds.gte is None or at >= bounds.gte,
            bounds.gt is None or at > bounds.gt,
            bounds.lte is None or at <= bounds.lte,
            bounds.lt is None or at < bounds.lt,
        ]
    return all(checks)


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    """pgvector's cosine distance `<=>`."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norm if norm else 1.0


def _in_time(timeout: float) -> None:
    if timeout <= 0:
        raise DeadlineExceeded(
            "search timed out before its database query",
            details={"timeout_seconds": 0, "stage": "database"},
        )


class InMemoryPolicyReadModel:
    """`PolicyReadModel` for one model over the in-memory table, in exact mode: every row
    of the model compared, ordered by (distance, embedding_ref)."""

    def __init__(self, table: InMemoryPolicyTable, model_id: str) -> None:
        self._table = table
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    def _visible(self, view: Sequence[PolicyNamespace]) -> list[PolicyRow]:
        names = {n.text for n in view}
        return [r for r in self._table.of_model(self._model_id) if r.namespace.text in names]

    def search(
        self,
        vector: EmbeddingVector,
        request: SearchRequest,
        after: SearchCursor | None,
        timeout: float,
    ) -> ResultRows:
        _in_time(timeout)
        floors = dict(request.group_floors)
        scored = []
        for row in self._visible(request.view):
            distance = _distance(vector.values, row.vector)
            group = script_group(row.content)
            if distance > request.threshold.max_distance or not _matches(request.filter, row):
                continue
            if group in floors and distance > 1.0 - floors[group]:
                continue
            scored.append((distance, row.embedding_ref, row, group))
        scored.sort(key=lambda s: (s[0], s[1]))
        if after is not None:
            scored = [s for s in scored if (s[0], s[1]) > (after.distance, after.embedding_ref)]
        else:
            scored = scored[request.page.offset :]
        page = scored[: request.page.size + 1]
        results = [
            SimilarityResult(
                embedding_ref=row.embedding_ref,
                policy_id=row.policy_id,
                version=row.version,
                similarity=1.0 - distance,
                distance=distance,
                metadata=row.metadata,
                timestamp=row.updated_at,
                namespace=row.namespace,
                script_group=group,
            )
            for distance, _, row, group in page
        ]
        return ResultRows(results[: request.page.size], len(results) > request.page.size)

    def get(
        self,
        embedding_ref: uuid.UUID,
        query: EmbeddingVector | None,
        timeout: float,
        view: Sequence[PolicyNamespace],
    ) -> PolicyDocument | None:
        _in_time(timeout)
        for row in self._visible(view):
            if row.embedding_ref == embedding_ref:
                return PolicyDocument(
                    embedding_ref=row.embedding_ref,
                    policy_id=row.policy_id,
                    version=row.version,
                    content=row.content,
                    metadata=row.metadata,
                    timestamp=row.updated_at,
                    similarity=None if query is None else 1.0 - _distance(query.values, row.vector),
                    namespace=row.namespace,
                )
        return None

    def list_policies(
        self, request: ListRequest, after: ListPosition | None, timeout: float
    ) -> PolicyRows:
        _in_time(timeout)
        rows = [
            r
            for r in self._visible(request.view)
            if (request.source is None or r.metadata.source == request.source)
            and (request.tag is None or request.tag in r.metadata.tags)
            and (request.updated_since is None or r.updated_at >= request.updated_since)
        ]
        rows.sort(key=lambda r: (r.updated_at, r.embedding_ref), reverse=True)
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.embedding_ref) < tuple(after_key(after))]
        page = rows[: request.limit + 1]
        policies = [
            StoredPolicy(
                policy_id=r.policy_id,
                embedding_ref=r.embedding_ref,
                version=r.version,
                content=r.content,
                metadata=r.metadata,
                model=r.model,
                stored_at=r.created_at,
                updated_at=r.updated_at,
                namespace=r.namespace,
            )
            for r in page
        ]
        return PolicyRows(policies[: request.limit], len(page) > request.limit)


def after_key(after: ListPosition) -> tuple[datetime, uuid.UUID]:
    return (after.updated_at, after.embedding_ref)


class InMemoryPolicySimilarityDistribution:
    """`PolicySimilarityDistribution` over every row of the model in the view."""

    def __init__(self, table: InMemoryPolicyTable, model_id: str) -> None:
        self._table = table
        self._model_id = model_id

    def distribution(
        self, vector: EmbeddingVector, view: Sequence[PolicyNamespace], timeout: float
    ) -> QueryDistribution:
        _in_time(timeout)
        names = {n.text for n in view}
        return QueryDistribution.of(
            [
                (script_group(r.content), 1.0 - _distance(vector.values, r.vector))
                for r in self._table.of_model(self._model_id)
                if r.namespace.text in names
            ]
        )


class InMemoryPolicyProjection:
    """One model's projection, run on demand over the in-memory event log: `catch_up`
    processes every event recorded since its position, in the caller's thread."""

    def __init__(
        self,
        log: EventSourcedPolicyLog,
        table: InMemoryPolicyTable,
        model: EmbeddingModel,
        on_commit: Callable[[int], None] | None = None,
    ) -> None:
        self._log = log
        self.view = InMemoryPolicyView(table, on_commit)
        self.projection = PolicyEmbeddingsProjection(self.view, model, log)
        self._lock = threading.Lock()
        # Whether it ever ran (a projector's first start creates its tracking table).
        self.started = False

    @property
    def position(self) -> int | None:
        return self.view.max_tracking_id(PolicyApplication.name)

    def catch_up(self) -> int | None:
        app = self._log.app
        with self._lock:
            self.started = True
            start = (self.position or 0) + 1
            for notification in app.recorder.select_notifications(start=start, limit=100_000):
                event = app.mapper.to_domain_event(notification)
                tracking = Tracking(PolicyApplication.name, notification.id)
                try:
                    self.projection.process_event(event, tracking)
                except Exception as exc:
                    # As the runner reports it: processing stopped; it resumes from here.
                    raise ProjectorFailed(f"projection failed: {exc}") from exc
        return self.position


class InMemoryProjectionWaiter:
    """`ProjectionWaiter` whose projection runs when a writer waits (in its thread); while
    `paused` (no projector running anywhere) it runs nothing and the wait times out."""

    def __init__(self, projection: InMemoryPolicyProjection) -> None:
        self._projection = projection
        self.paused = False
        self.waited_for: list[int] = []

    def wait(self, notification_id: int, timeout: float) -> bool:
        self.waited_for.append(notification_id)
        if self.paused:
            return False
        try:
            position = self._projection.catch_up()
        except ProjectorFailed:
            return False  # the write is recorded; it becomes searchable once projected
        return position is not None and position >= notification_id


class InMemoryProjectorLeases:
    """The projector leases of every process sharing one database: a model's lease is held
    by one projector at a time."""

    def __init__(self) -> None:
        self.holders: dict[str, object] = {}
        self.lock = threading.Lock()


class InMemoryPolicyProjector:
    """`PolicyProjector` in memory: the lease is real (shared `InMemoryProjectorLeases`),
    processing is the projection's catch-up at each `check`. Knobs: `failure` (raised by
    `check`, as `ProjectorFailed`), `lease_lost` (the lease's connection ended)."""

    def __init__(
        self,
        leases: InMemoryProjectorLeases,
        projection: InMemoryPolicyProjection,
        model_id: str,
    ) -> None:
        self._leases = leases
        self._projection = projection
        self._model_id = model_id
        self.running = False
        self.failure: str | None = None
        self.lease_lost = False

    def try_start(self) -> bool:
        with self._leases.lock:
            holder = self._leases.holders.setdefault(self._model_id, self)
        if holder is not self:
            return False
        self.running = True
        return True

    def lease_alive(self) -> bool:
        return self.running and not self.lease_lost

    def check(self) -> None:
        if not self.running:
            raise ProjectorFailed(f"projector for {self._model_id} is not running")
        if self.failure is not None:
            raise ProjectorFailed(f"projector for {self._model_id} failed: {self.failure}")
        if self.lease_lost:
            raise ProjectorFailed(f"projector for {self._model_id} lost its lease")
        self._projection.catch_up()

    def stop(self) -> None:
        self.running = False
        with self._leases.lock:
            if self._leases.holders.get(self._model_id) is self:
                del self._leases.holders[self._model_id]


class InMemoryPolicyModelStore:
    """`PolicyModelStore` over the in-memory table and log: each model's projection (the
    active one's is shared with the waiter), re-embeds that replay the log, drops.
    `untied` holds tracking tables no model is tied to (a re-embed that predates labels)."""

    def __init__(
        self,
        log: EventSourcedPolicyLog,
        table: InMemoryPolicyTable,
        leases: InMemoryProjectorLeases,
        build_model: Callable[[str], EmbeddingModel],
    ) -> None:
        self._log = log
        self._table = table
        self._leases = leases
        self.build_model = build_model
        self.projections: dict[str, InMemoryPolicyProjection] = {}
        self.untied: list[str] = []

    def projection(self, model: EmbeddingModel) -> InMemoryPolicyProjection:
        model_id = model.identity.id
        if model_id not in self.projections:
            self.projections[model_id] = InMemoryPolicyProjection(self._log, self._table, model)
        return self.projections[model_id]

    def stored_id(self, spec: str) -> str:
        return stored_model_id(spec)

    def head(self) -> int | None:
        return self._log.head()

    def rows_per_model(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._table.lock:
            for _, model in self._table.rows:
                counts[model] = counts.get(model, 0) + 1
        return counts

    def position(self, model_id: str) -> int | None:
        projection = self.projections.get(model_id)
        return None if projection is None else projection.position

    def drop(self, model_id: str) -> int:
        self._refuse_busy(model_id)
        with self._table.lock:
            doomed = [key for key in self._table.rows if key[1] == model_id]
            for key in doomed:
                del self._table.rows[key]
        self.projections.pop(model_id, None)
        return len(doomed)

    def tracking_tables(self, known_models: Sequence[str]) -> list[TrackingTable]:
        tied = [
            TrackingTable(ModelObjects(m).tracking_table, m)
            for m, projection in sorted(self.projections.items())
            if projection.started
        ]
        return tied + [TrackingTable(t, None) for t in self.untied]

    def drop_tracking_table(self, table: str) -> None:
        self.untied.remove(table)

    def reembed(
        self, spec: str, *, rebuild: bool, on_progress: ReembedProgress | None
    ) -> ReembedReport:
        model = self.build_model(spec)
        model_id = model.identity.id
        self._refuse_busy(model_id)
        removed = self.drop(model_id) if rebuild else 0
        projection = self.projection(model)
        started_at, head = projection.position, self._log.head()
        # This replay's texts (the real store starts a projector of its own per replay).
        embedded_before = projection.projection.embedded_texts
        reached = projection.catch_up()
        if on_progress is not None:
            on_progress(reached, head)
        return ReembedReport(
            model=model_id,
            started_at=started_at,
            reached=reached,
            head=head,
            texts_embedded=projection.projection.embedded_texts - embedded_before,
            rows_removed=removed,
        )

    def _refuse_busy(self, model_id: str) -> None:
        if model_id in self._leases.holders:
            raise ProjectionBusy(f"the projector for model {model_id} is running")


@dataclass
class InMemoryPolicy:
    """Every policy port in memory, wired together: the library's in-memory event store,
    the read model table every model's projection writes, the active model's projection
    (run when a writer waits, or by a leading projector's checks) and the leases."""

    model: FakeModel
    log: EventSourcedPolicyLog
    table: InMemoryPolicyTable
    read_model: InMemoryPolicyReadModel
    waiter: InMemoryProjectionWaiter
    models: InMemoryPolicyModelStore
    leases: InMemoryProjectorLeases
    distribution: InMemoryPolicySimilarityDistribution
    projectors: list[InMemoryPolicyProjector]

    @classmethod
    def create(cls, model: FakeModel | None = None) -> InMemoryPolicy:
        model = model or FakeModel()
        log = EventSourcedPolicyLog(
            PolicyApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        )
        table = InMemoryPolicyTable()
        leases = InMemoryProjectorLeases()
        models = InMemoryPolicyModelStore(
            log,
            table,
            leases,
            lambda spec: FakeModel(stored_model_id(spec), model.identity.dimensions),
        )
        active = models.projection(model)
        return cls(
            model=model,
            log=log,
            table=table,
            read_model=InMemoryPolicyReadModel(table, model.identity.id),
            waiter=InMemoryProjectionWaiter(active),
            models=models,
            leases=leases,
            distribution=InMemoryPolicySimilarityDistribution(table, model.identity.id),
            projectors=[],
        )

    def new_projector(self) -> InMemoryPolicyProjector:
        projector = InMemoryPolicyProjector(
            self.leases, self.models.projection(self.model), self.model.identity.id
        )
        self.projectors.append(projector)
        return projector

    def ports(self) -> PolicyPorts:
        return PolicyPorts(
            log=self.log,
            read_model=self.read_model,
            waiter=self.waiter,
            models=self.models,
            projectors=self.new_projector,
            distribution=self.distribution,
        )

    def recorded(self) -> list[Notification]:
        """Every event notification recorded so far."""
        return list(self.log.app.recorder.select_notifications(start=1, limit=100_000))
