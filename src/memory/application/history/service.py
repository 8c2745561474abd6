"""`HistoryService`: the history context's one application service.

HTTP routes, the `memory sweep`/`memory purge`/`memory history ...` commands, the background
workers and sibling contexts (through `memory.api`) all call this and nothing else. Each
public method reports one `ServiceCall` to the observers (metrics, logs, the last runs that
/healthz shows).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from memory.application.audit.ports import AuditTrail
from memory.application.embedding import EmbeddingModel
from memory.application.history.administration import HistoryAdministration
from memory.application.history.drop_model import DropModel, DropReport
from memory.application.history.erasure import (
    EraseHistory,
    ErasureReport,
    ErasureStore,
    OrgErasureReport,
)
from memory.application.history.feature_flags import FeatureFlags, GlobalFlag, OrgFlag
from memory.application.history.ingest import IngestChatEvents, IngestResult
from memory.application.history.org_directory import OrgDirectory, OrgPage, SignedCursors
from memory.application.history.ports import (
    ChatEventLog,
    Clock,
    FeatureFlagStore,
    FullTextIndex,
    OrgDirectoryStore,
    PartitionLockFactory,
    RetentionStore,
    SearchStateReader,
    SweepBacklog,
    SweepSchedule,
    SweepTotals,
    Transactions,
    WatermarkRepository,
    WindowEmbeddings,
)
from memory.application.history.query_embedding import QueryEmbedder
from memory.application.history.reindex import (
    ReindexFullText,
    ReindexObserver,
    ReindexReport,
)
from memory.application.history.retention import (
    HistoryRetention,
    PurgeObserver,
    PurgeReport,
    Retention,
)
from memory.application.history.search import SearchHistory, SearchStateOneByOne
from memory.application.history.search_indexes import (
    SUMMARY_QUEUE_LIMIT,
    OrgSearchIndexes,
    SearchIndexes,
    SearchIndexSummary,
)
from memory.application.history.sweep import Sweeper, SweepProgress, SweepReport
from memory.application.history.sweep_status import (
    PartitionStatus,
    SweepStatus,
)
from memory.application.observer import Observed, ServiceObserver
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import FieldChecks, InvalidInput
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.chat_input import check_event, check_events, check_org_id
from memory.domain.history.feature_flags import GlobalState
from memory.domain.history.org_directory import OrgListing
from memory.domain.history.partition_listing import PartitionListing
from memory.domain.history.search import HistoryQuery, HistorySearchResult
from memory.domain.time_range import DEFAULT_MAX_FUTURE_SKEW

CONTEXT = "history"
# Threads for the full-text half of hybrid searches (each holds a pooled connection).
FULL_TEXT_WORKERS = 4


@dataclass(frozen=True, slots=True)
class OrgSweepStatus:
    """How far the sweep got for one org, for the active model: its totals and one page of
    its partitions (`next_cursor` for the next, None after the last)."""

    org_id: str
    model: str
    semantic_search: bool
    totals: SweepTotals
    partitions: list[PartitionStatus]
    next_cursor: str | None
    # What of the org waits for the sweep now, from the maintained state (docs/adr/0089).
    backlog: SweepBacklog


@dataclass(frozen=True, slots=True)
class HistoryPorts:
    """The adapters the history use cases run on (picked by the composition root)."""

    events: ChatEventLog
    windows: WindowEmbeddings
    flags: FeatureFlagStore
    watermarks: WatermarkRepository
    locks: PartitionLockFactory
    retention: RetentionStore
    full_text: FullTextIndex
    erasure: ErasureStore
    directory: OrgDirectoryStore
    schedule: SweepSchedule
    # Reads a search's state together; None: from `events`, `flags` and `schedule` one by
    # one (stores where a read costs no round trip).
    search_state: SearchStateReader | None = None
    # The large orgs' search indexes (docs/adr/0134); None: the stores have none (every
    # search is an exact scan).
    indexes: SearchIndexes | None = None
    # What makes a sweep batch's windows and watermarks one transaction (docs/adr/0148);
    # None: each store commits its own (stores without transactions).
    transactions: Transactions | None = None


class HistoryService:
    """Ingest, search, the sweep, feature flags, retention and model drops of chat history.

    Errors are the project's typed ones: `InvalidInput` (naming the field), `NotFound` (an
    unknown flag), `ActiveModelDrop`. Embedding failures never surface from `search` (it
    degrades to full-text) nor from `sweep` (the partition stalls and the report says so).
    """

    def __init__(
        self,
        ports: HistoryPorts,
        model: EmbeddingModel,
        *,
        clock: Clock,
        query_embed_timeout: float,
        default_retention_days: int,
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
        similarity_floor: float | None = None,
        stored_model_id: Callable[[str], str] = str.strip,
        audit: AuditTrail,
        cursors: SignedCursors,
        erasure_key: bytes,
        observers: Sequence[ServiceObserver] = (),
    ) -> None:
        """`stored_model_id` turns a model spec as operators write it into the identity
        its rows are stored under (docs/adr/0010). `cursors` signs the org directory's
        cursors (the policy listing's codec). `erasure_key` keys the audit log's references
        to erased senders (docs/adr/0100)."""
        self._ports = ports
        self._model_id = model.identity.id
        self._stored_model_id = stored_model_id
        self._observed = Observed(CONTEXT, observers)
        # Set on shutdown: running sweep passes stop between batches, later ones at once.
        self._stopping = threading.Event()
        self._embedder = QueryEmbedder(model, query_embed_timeout)
        # Full-text queries that run beside the semantic part of hybrid searches.
        self._full_text_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=FULL_TEXT_WORKERS, thread_name_prefix="history-full-text"
        )
        self._ingest = IngestChatEvents(ports.events, clock=clock, max_future_skew=max_future_skew)
        self._search = SearchHistory(
            events=ports.events,
            windows=ports.windows,
            embedder=self._embedder,
            model_id=self._model_id,
            full_text_pool=self._full_text_pool,
            similarity_floor=similarity_floor,
            clock=clock,
            max_future_skew=max_future_skew,
            state=ports.search_state
            or SearchStateOneByOne(ports.events, ports.flags, ports.schedule),
        )
        self._sweeper = Sweeper(
            events=ports.events,
            windows=ports.windows,
            watermarks=ports.watermarks,
            locks=ports.locks,
            flags=ports.flags,
            model=model,
            clock=clock,
            directory=ports.directory,
            schedule=ports.schedule,
            transactions=ports.transactions,
        )
        self._status = SweepStatus(
            events=ports.events,
            watermarks=ports.watermarks,
            directory=ports.directory,
            cursors=cursors,
            model=model,
            clock=clock,
        )
        self._flags = FeatureFlags(ports.flags)
        self._retention = HistoryRetention(
            ports.retention, default_days=default_retention_days, clock=clock
        )
        self._reindex = ReindexFullText(ports.full_text)
        self._drop = DropModel(
            events=ports.events,
            windows=ports.windows,
            watermarks=ports.watermarks,
            directory=ports.directory,
            schedule=ports.schedule,
            active_model=self._model_id,
        )
        self._admin = HistoryAdministration(
            flags=self._flags,
            retention=self._retention,
            drop_model=self._drop,
            audit=audit,
            stored_model_id=stored_model_id,
        )

        self._directory = OrgDirectory(
            ports.directory,
            ports.flags,
            cursors,
            model_id=self._model_id,
            default_retention_days=default_retention_days,
            clock=clock,
        )
        self._erase = EraseHistory(
            ports.erasure,
            ports.watermarks,
            ports.locks,
            audit=audit,
            active_model=self._model_id,
            sender_key=erasure_key,
        )

    @property
    def model_id(self) -> str:
        """The active history model (the identity its embeddings are stored under)."""
        return self._model_id

    def observe(self, observer: ServiceObserver) -> None:
        self._observed.add(observer)

    # Ingest and search ------------------------------------------------------------------

    def ingest(self, org_id: str, events: Sequence[ChatEvent]) -> IngestResult:
        """Store 1..1000 events in one transaction (all or nothing); an event id the org
        already has is a duplicate and changes nothing. Never embeds."""

        def run() -> IngestResult:
            check_events(events)
            return self._ingest(check_org_id(org_id), events)

        return self._observed.run("ingest", run)

    def search(self, org_id: str, query: HistoryQuery) -> HistorySearchResult:
        """Full-text hits first, then semantic ones when the org's flags allow; `semantic`
        says whether the semantic half ran, was off, or degraded (model down or slow)."""
        return self._observed.run(
            "search", lambda: self._search(check_org_id(org_id), query), **_org_label(org_id)
        )

    def check_ingest(self, events: Mapping[int, ChatEvent]) -> None:
        """`ingest`'s rules over the events given (by their index in the request), alone:
        `InvalidInput` naming every broken field. Pure; changes nothing. For a door that
        found other fields of the wrong type, so that one error names them all
        (docs/adr/0088)."""
        checks = FieldChecks()
        for index, event in events.items():
            checks.run(partial(check_event, event, f"events.{index}"))
        checks.run(partial(self._ingest.check, events))
        checks.raise_any()

    def check_search(self, since: datetime | None = None, until: datetime | None = None) -> None:
        """`search`'s rules over the time bounds, alone, as `check_ingest`."""
        self._search.check_bounds(since, until)

    # Erasure ----------------------------------------------------------------------------

    def erase_events(
        self,
        org_id: str,
        *,
        event_ids: Sequence[str] | None = None,
        sender: str | None = None,
        actor: Actor,
    ) -> ErasureReport:
        """Erase events by id or by sender, and every window covering any of them, in one
        transaction; a sweep embedding one of those windows meanwhile cannot write it.
        Recorded in the audit trail in that transaction (ids or a digest of the sender,
        counts; never text)."""
        return self._observed.run(
            "erase_events",
            lambda: self._erase.events(
                check_org_id(org_id), event_ids=event_ids, sender=sender, actor=actor
            ),
        )

    def erase_org(self, org_id: str, *, actor: Actor) -> OrgErasureReport:
        """Erase the org's events, windows, partitions, flags and retention (recorded in the
        audit trail in that transaction); close its sweep watermarks so that no later sweep
        recreates anything."""
        return self._observed.run(
            "erase_org", lambda: self._erase.org(check_org_id(org_id), actor=actor)
        )

    # The sweep --------------------------------------------------------------------------

    def sweep(
        self,
        org_id: str | None = None,
        *,
        trigger: str = "api",
        wait_for_locks: bool = True,
        progress: SweepProgress | None = None,
        actor: Actor | None = None,
    ) -> SweepReport:
        """One pass over the enabled partitions (of one org, or all): embed the closed
        windows after each watermark. With `wait_for_locks`, a partition another sweeper
        holds is waited for instead of skipped. `stop_sweeps` ends it between batches."""
        labels = {"trigger": trigger} if org_id is None else {"trigger": trigger, "org_id": org_id}

        def run() -> SweepReport:
            org = _optional_org(org_id)
            # An operator's pass is recorded before it runs (it is many transactions).
            if actor is not None:
                self._admin.sweep_triggered(org, actor=actor)
            return self._sweeper.run_pass(
                org, wait_for_locks=wait_for_locks, progress=progress, stop=self._stopping
            )

        return self._observed.run("sweep", run, **labels)

    def sweep_status(
        self, org_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> OrgSweepStatus:
        """The org's totals, and per partition of one keyset page (`limit` of them, after
        `cursor`): watermark, lag, poison windows, stalls; and what of the org waits for the sweep
        now (partitions, since when). `InvalidInput` names `limit` or `cursor`."""

        def run() -> OrgSweepStatus:
            check_org_id(org_id)
            page = self._status(org_id, PartitionListing.parse(limit=limit, cursor=cursor))
            return OrgSweepStatus(
                org_id=org_id,
                model=self._model_id,
                semantic_search=self._flags.semantic_search(org_id),
                totals=page.totals,
                partitions=page.partitions,
                next_cursor=page.next_cursor,
                backlog=self._sweeper.backlog(org_id),
            )

        return self._observed.run("sweep_status", run)

    # Search indexes ---------------------------------------------------------------------

    def search_indexes(self, org_id: str) -> OrgSearchIndexes:
        """The org's search indexes, one per model that has one: wanted, building (with the
        build's progress), ready, failed or dropping (docs/adr/0134, 0141)."""

        def run() -> OrgSearchIndexes:
            org = check_org_id(org_id)
            indexes = self._ports.indexes
            found = [] if indexes is None else indexes.of_org(org)
            return OrgSearchIndexes(org, self._model_id, found)

        return self._observed.run("search_indexes", run, **_org_label(org_id))

    def search_index_summary(self) -> SearchIndexSummary:
        """Every org's indexes counted by state, and the builder's queue (running builds
        first) up to SUMMARY_QUEUE_LIMIT: /healthz, the metrics, `memory history indexes`."""

        def run() -> SearchIndexSummary:
            indexes = self._ports.indexes
            if indexes is None:
                return SearchIndexSummary({}, [])
            return indexes.summary(SUMMARY_QUEUE_LIMIT)

        return self._observed.run("search_index_summary", run)

    # The org directory -------------------------------------------------------------------

    def orgs(
        self,
        *,
        limit: int | None = None,
        prefix: str | None = None,
        cursor: str | None = None,
        visible: frozenset[str] | None = None,
    ) -> OrgPage:
        """Every org the context knows (partitions, an org flag or a retention setting), in
        byte order of org id, a keyset page at a time (`next_cursor` for the next), each
        with its summary. `visible` narrows the listing to the orgs a caller may see.
        `InvalidInput` names `limit`, `prefix` or `cursor`."""
        return self._observed.run(
            "orgs",
            lambda: self._directory(
                OrgListing.parse(limit=limit, prefix=prefix, cursor=cursor, visible=visible)
            ),
        )

    # Feature flags ----------------------------------------------------------------------

    def global_flags(self) -> list[GlobalFlag]:
        return self._observed.run("global_flags", self._flags.global_flags)

    def global_flag(self, flag: str) -> GlobalFlag:
        """`NotFound` for an unknown flag."""
        return self._observed.run("global_flag", lambda: self._flags.global_flag(flag))

    def set_global_flag(self, flag: str, state: GlobalState | bool, *, actor: Actor) -> GlobalFlag:
        """Set the flag's global state: `GlobalState.OPT_IN` turns it on for the orgs that
        set it `True` only; a bool is `ON`/`OFF`. Recorded in the audit trail with the
        change (so are the other changes below)."""
        wanted = state if isinstance(state, GlobalState) else GlobalState.of(state)
        return self._observed.run(
            "set_global_flag", lambda: self._admin.set_global_flag(flag, wanted, actor=actor)
        )

    def org_flags(self, org_id: str) -> list[OrgFlag]:
        return self._observed.run("org_flags", lambda: self._flags.org_flags(check_org_id(org_id)))

    def org_flag(self, org_id: str, flag: str) -> OrgFlag:
        return self._observed.run(
            "org_flag", lambda: self._flags.org_flag(check_org_id(org_id), flag)
        )

    def set_org_flag(
        self, org_id: str, flag: str, enabled: bool | None, *, actor: Actor
    ) -> OrgFlag:
        """`enabled=None` removes the org's own value: it follows the global layer again."""
        return self._observed.run(
            "set_org_flag",
            lambda: self._admin.set_org_flag(check_org_id(org_id), flag, enabled, actor=actor),
        )

    def semantic_search(self, org_id: str) -> bool:
        """Whether the org's searches get a semantic half (every flag layer agrees)."""
        return self._observed.run(
            "semantic_search", lambda: self._flags.semantic_search(check_org_id(org_id))
        )

    # Retention and models ---------------------------------------------------------------

    def retention(self, org_id: str) -> Retention:
        return self._observed.run("retention", lambda: self._retention.get(check_org_id(org_id)))

    def set_retention(self, org_id: str, days: int, *, actor: Actor) -> Retention:
        """`InvalidInput` (field `days`) outside 1..3650."""
        return self._observed.run(
            "set_retention",
            lambda: self._admin.set_retention(check_org_id(org_id), days, actor=actor),
        )

    def purge(
        self,
        org_id: str | None = None,
        *,
        observer: PurgeObserver | None = None,
        actor: Actor | None = None,
    ) -> PurgeReport:
        """Delete what is past each org's retention (one org, or all): events and, in the
        same transaction, the embeddings covering them. `observer` hears each org done.
        With an `actor` (an operator asked for it) the purge is recorded in the audit trail;
        None is the background schedule."""
        labels = {} if org_id is None else {"org_id": org_id}

        def run() -> PurgeReport:
            org = _optional_org(org_id)
            if actor is None:
                return self._retention.purge(org, observer)
            return self._admin.purge(org, actor=actor, observer=observer)

        return self._observed.run("purge", run, **labels)

    def drop_model(self, model: str, *, actor: Actor) -> DropReport:
        """Delete a no-longer-active model's embeddings and reset its watermarks. `model`
        is a spec as operators write it (`ollama:bge-m3:latest`) or a stored identity."""
        return self._observed.run("drop_model", lambda: self._admin.drop_model(model, actor=actor))

    def reindex_full_text(self, progress: ReindexObserver | None = None) -> ReindexReport:
        """Re-index rows indexed by an older full-text segmentation (resumable; rows
        ingested meanwhile are indexed by ingest). `stop_sweeps` also stops it."""
        return self._observed.run(
            "reindex_full_text", lambda: self._reindex(progress, stop=self._stopping)
        )

    def stale_full_text_rows(self, org_id: str | None = None) -> int:
        """Rows (of one org, or of all) still indexed by an older full-text segmentation:
        what a re-index rewrites."""
        return self._observed.run("stale_full_text_rows", lambda: self._reindex.stale(org_id))

    def sweep_backlog(self) -> SweepBacklog:
        """What waits for the sweep now across orgs: due partitions, the oldest's age, the
        orgs waiting longest (/healthz, the metrics). One statement over due work only."""
        return self._observed.run("sweep_backlog", self._sweeper.backlog)

    def stored_models(self) -> dict[str, int]:
        """Embedding rows per model."""
        return self._observed.run("stored_models", self._ports.windows.models)

    def stop_sweeps(self) -> None:
        """Make running sweep passes stop after their current batch (shutdown)."""
        self._stopping.set()

    def close(self) -> None:
        self.stop_sweeps()
        self._embedder.close()
        self._full_text_pool.shutdown(wait=True)


def _optional_org(org_id: str | None) -> str | None:
    return None if org_id is None else check_org_id(org_id)


def _org_label(org_id: str) -> dict[str, str]:
    """The org as a call's label once it is a valid id: an invalid one is never logged."""
    try:
        return {"org_id": check_org_id(org_id)}
    except InvalidInput:
        return {}
