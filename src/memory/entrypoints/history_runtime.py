"""Wiring of the history context: the adapters under its `HistoryService`, the service's
observers, its routes, its workers (`memory.entrypoints.workers.history`) and its health."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory.application.audit.ports import AuditTrail
from memory.application.embedding import EmbeddingModel
from memory.application.errors import ServiceUnavailable
from memory.application.history.activity import HistoryActivity
from memory.application.history.ports import Clock
from memory.application.history.retention import PurgeReport
from memory.application.history.service import HistoryPorts, HistoryService
from memory.application.history.sweep import SweepReport
from memory.application.history.watermarks import SweepWatermarks
from memory.application.observer import ServiceCall, ServiceObserver
from memory.domain.policy.cursor import CursorCodec
from memory.entrypoints.runtime import Worker
from memory.entrypoints.workers.activity import ActivityFlusher
from memory.entrypoints.workers.history import HistoryWorkers
from memory.entrypoints.workers.history_indexes import WindowIndexBuilder
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.embedding.factory import ModelRegistry, stored_model_id
from memory.infrastructure.history.activity_log import PostgresActivityLog
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.history.chinese_words import jieba_words
from memory.infrastructure.history.clock import system_clock
from memory.infrastructure.history.embeddings import PostgresWindowEmbeddings
from memory.infrastructure.history.erasure import PostgresErasure
from memory.infrastructure.history.feature_flags import PostgresFeatureFlags
from memory.infrastructure.history.metrics import HistoryMetrics
from memory.infrastructure.history.org_directory import PostgresOrgDirectory
from memory.infrastructure.history.partition_locks import AdvisoryPartitionLocks
from memory.infrastructure.history.retention import PostgresRetention
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes
from memory.infrastructure.history.search_state import PostgresSearchState
from memory.infrastructure.history.sweep_schedule import PostgresSweepSchedule
from memory.infrastructure.history.watermark_store import open_sweep_watermarks
from memory.infrastructure.policy.secrets import load_cursor_key, load_erasure_key
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.service_log import ServiceLog
from memory.infrastructure.settings import Settings

if TYPE_CHECKING:
    # Only for annotations: building a context never imports Starlette (memory.api).
    from starlette.routing import BaseRoute


class LastRuns:
    """`ServiceObserver` keeping the last sweep pass and purge, as /healthz shows them: each
    with its `outcome` (docs/adr/0071), so a pass that failed is not hidden behind the last
    one that worked."""

    def __init__(self) -> None:
        self.sweep: dict[str, Any] | None = None
        self.purge: dict[str, Any] | None = None
        # What this replica's passes did since it started (/healthz, docs/adr/0062): passes
        # by trigger, windows it embedded, partitions it found another sweeper holding.
        self.passes: dict[str, int] = {}
        self.windows_embedded_total = 0
        self.partitions_busy_total = 0

    def observe(self, call: ServiceCall) -> None:
        finished_at = datetime.now(UTC).isoformat()
        if call.operation == "sweep":
            trigger = str(call.labels.get("trigger"))
            self.passes[trigger] = self.passes.get(trigger, 0) + 1
            self.sweep = {
                "finished_at": finished_at,
                "seconds": round(call.seconds, 3),
                "trigger": call.labels.get("trigger"),
                "org_id": call.labels.get("org_id"),
                **_outcome(call),
            }
            if isinstance(call.result, SweepReport):
                self.sweep.update(call.result.summary())
                self.windows_embedded_total += call.result.windows_embedded
                self.partitions_busy_total += call.result.partitions_busy
        elif call.operation == "purge":
            self.purge = {"finished_at": finished_at, **_outcome(call)}
            if isinstance(call.result, PurgeReport):
                self.purge.update(
                    orgs=call.result.orgs,
                    events_deleted=call.result.events_deleted,
                    embeddings_deleted=call.result.embeddings_deleted,
                )


def _outcome(call: ServiceCall) -> dict[str, Any]:
    """`ok`; for a sweep, `stalled` (a partition's model failed) or `interrupted` (stopped
    between batches); `failed` with the error's class (never its message: it may quote
    data) when the call raised."""
    if call.error is not None:
        return {"outcome": "failed", "error": type(call.error).__name__}
    if isinstance(call.result, SweepReport):
        if call.result.partitions_stalled:
            return {"outcome": "stalled"}
        if call.result.partitions_interrupted:
            return {"outcome": "interrupted"}
    return {"outcome": "ok"}


class HistoryRuntime:
    name = "history"

    def __init__(
        self,
        settings: Settings,
        database: Database,
        model: EmbeddingModel,
        *,
        clock: Clock = system_clock,
        watermarks: SweepWatermarks | None = None,
        observers: tuple[ServiceObserver, ...] | None = None,
        audit: AuditTrail | None = None,
    ) -> None:
        """`audit`: the composition root's audit trail (else one of its own)."""
        self.settings = settings
        self.database = database
        self.model = model
        self.clock = clock
        words = jieba_words()
        words.warm_up()
        self.events = PostgresChatEventLog(database, clock=clock, split_words=words)
        self.window_indexes = PostgresWindowIndexes(database, mode=settings.history_search_mode)
        self.windows = PostgresWindowEmbeddings(
            database, mode=settings.history_search_mode, indexes=self.window_indexes, clock=clock
        )
        self.flag_store = PostgresFeatureFlags(database)
        self.locks = AdvisoryPartitionLocks(
            database.direct_url,
            wait_timeout=settings.sweep_lock_timeout,
            connect_seconds=database.timeout,
        )
        self.watermarks = watermarks or open_sweep_watermarks(database)
        self.schedule = PostgresSweepSchedule(database)
        self.last_runs = LastRuns()
        # The console's last-hour trends: this replica's tallies, stored every few seconds.
        self.activity = HistoryActivity(PostgresActivityLog(database), clock)
        self._activity_flusher = ActivityFlusher(self.activity)
        self.service = HistoryService(
            HistoryPorts(
                events=self.events,
                windows=self.windows,
                flags=self.flag_store,
                watermarks=self.watermarks,
                locks=self.locks,
                retention=PostgresRetention(database, indexes=self.window_indexes),
                full_text=self.events,
                erasure=PostgresErasure(database, indexes=self.window_indexes),
                directory=PostgresOrgDirectory(database),
                schedule=self.schedule,
                search_state=PostgresSearchState(database),
                indexes=self.window_indexes,
                transactions=database,
            ),
            model,
            clock=clock,
            query_embed_timeout=settings.history_query_embed_timeout,
            default_retention_days=settings.default_retention_days,
            max_future_skew=timedelta(seconds=settings.max_future_skew),
            similarity_floor=settings.history_similarity_floor,
            stored_model_id=stored_model_id,
            audit=audit if audit is not None else PostgresAuditTrail(database),
            # The org directory's cursors are signed as the policy listing's are.
            cursors=CursorCodec(load_cursor_key(database)),
            erasure_key=load_erasure_key(database),
            observers=(
                (HistoryMetrics(), ServiceLog(), self.last_runs, self.activity.tally)
                if observers is None
                else (*observers, self.last_runs, self.activity.tally)
            ),
        )
        self._index_builder = WindowIndexBuilder(
            self.window_indexes, report=self.service.search_index_summary
        )
        self._workers = HistoryWorkers(
            self.service,
            # The ingest listener's LISTEN and its leadership lock need a session.
            database.direct_url,
            connect_seconds=database.timeout,
            sweep_interval=settings.sweep_interval,
            sweep_debounce=settings.sweep_debounce,
            purge_interval=settings.purge_interval,
        )

    def routes(self) -> list[BaseRoute]:
        from memory.entrypoints.http.activity_routes import activity_routes
        from memory.entrypoints.http.history_routes import history_routes

        return history_routes(self.service) + activity_routes(self.activity)

    def workers(self) -> list[Worker]:
        return [*self._workers.workers(), self._activity_flusher.run, self._index_builder.run]

    def health(self) -> dict[str, Any]:
        return {
            "model": self.model.status().as_health(),
            "sweep": {"last_run": self.last_runs.sweep},
            "purge": {"last_run": self.last_runs.purge},
            "sweeper": {
                **self._workers.activity(),
                "passes": dict(self.last_runs.passes),
                "windows_embedded_total": self.last_runs.windows_embedded_total,
                "partitions_busy_total": self.last_runs.partitions_busy_total,
                "waiting": self._waiting(),
            },
            "search_indexes": self._search_indexes(),
        }

    def _search_indexes(self) -> dict[str, Any]:
        """The large orgs' search indexes (docs/adr/0134, 0141): the mode, counts by state,
        and the builder's queue with each running build's progress and each failure."""
        try:
            summary = self.service.search_index_summary()
        except ServiceUnavailable as exc:
            return {"error": type(exc).__name__}
        from memory.entrypoints.presenters.history import search_index_summary_body
        from memory.entrypoints.presenters.wire import wire

        return {
            "mode": self.settings.history_search_mode.value,
            **wire(search_index_summary_body(summary)),
        }

    def _waiting(self) -> dict[str, Any]:
        """Which orgs wait for the sweep and for how long (ADR 0089): one statement over the
        due work only. The database being away is /healthz's own answer (503), not this."""
        try:
            backlog = self.service.sweep_backlog()
        except ServiceUnavailable as exc:
            return {"error": type(exc).__name__}
        return {
            "partitions": backlog.partitions,
            "orgs": backlog.orgs,
            "oldest_age_seconds": backlog.oldest_age_seconds,
            "longest": [
                {
                    "org_id": o.org_id,
                    "partitions": o.partitions,
                    "age_seconds": backlog.age_seconds(o.waiting_since),
                }
                for o in backlog.longest
            ],
        }

    def request_stop(self) -> None:
        """A running sweep pass (background, or one a request started) stops at its next
        batch, so that it ends within the drain time (ADR 0044)."""
        self.service.stop_sweeps()
        self._index_builder.stop.set()

    def close(self) -> None:
        self._workers.stop()
        self._activity_flusher.flush()
        self.service.close()
        self.watermarks.close()


def build(
    settings: Settings,
    database: Database,
    models: ModelRegistry,
    *,
    audit: AuditTrail | None = None,
) -> HistoryRuntime:
    return HistoryRuntime(settings, database, models.get(settings.history_model), audit=audit)
