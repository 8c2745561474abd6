"""Wiring of the history context: its adapters and use cases, its routes, the sweep and
purge workers `memory serve` runs, and its health."""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import anyio
from starlette.routing import BaseRoute

from memory.application.embedding import EmbeddingModel
from memory.application.history.drop_model import DropModel, DropReport
from memory.application.history.feature_flags import FeatureFlags
from memory.application.history.ingest import IngestChatEvents, IngestResult
from memory.application.history.ports import Clock
from memory.application.history.query_embedding import QueryEmbedder
from memory.application.history.reindex import ReindexFullText
from memory.application.history.retention import HistoryRetention, PurgeReport
from memory.application.history.search import SearchHistory
from memory.application.history.sweep import Sweeper, SweepObserver, SweepReport
from memory.application.history.sweep_status import SweepStatus
from memory.application.history.watermarks import SweepWatermarks
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.search import HistoryQuery, HistorySearchResult
from memory.entrypoints.runtime import Worker
from memory.infrastructure.embedding.factory import ModelRegistry, stored_model_id
from memory.infrastructure.history import metrics
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.history.chinese_words import jieba_words
from memory.infrastructure.history.clock import system_clock
from memory.infrastructure.history.embeddings import PostgresWindowEmbeddings
from memory.infrastructure.history.feature_flags import PostgresFeatureFlags
from memory.infrastructure.history.ingest_listener import listen_for_ingest
from memory.infrastructure.history.partition_locks import AdvisoryPartitionLocks
from memory.infrastructure.history.retention import PostgresRetention
from memory.infrastructure.history.watermark_store import open_sweep_watermarks
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

log = logging.getLogger(__name__)

# After the ingest listener's connection fails, wait this long before reconnecting (a refused
# connection costs nothing, and the sweep should resume soon after the database returns).
# Each time it starts listening, one pass sweeps whatever was ingested while it could not
# hear (before a start, a crash, or during an outage).
LISTENER_RETRY_SECONDS = 1.0
# Threads for the full-text half of hybrid searches (each holds a pooled connection).
FULL_TEXT_WORKERS = 4

T = TypeVar("T")


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
    ) -> None:
        self.settings = settings
        self.database = database
        self.model = model
        self.clock = clock
        self.model_id = model.identity.id
        words = jieba_words()
        words.warm_up()
        self.events = PostgresChatEventLog(database, clock=clock, split_words=words)
        self.windows = PostgresWindowEmbeddings(database)
        self.flag_store = PostgresFeatureFlags(database)
        self.locks = AdvisoryPartitionLocks(
            database.url, wait_timeout=settings.sweep_lock_timeout, connect_seconds=database.timeout
        )
        self.watermarks = watermarks or open_sweep_watermarks(database)
        self.embedder = QueryEmbedder(model, settings.history_query_embed_timeout)
        # Full-text queries that run beside the semantic part of hybrid searches.
        self._full_text_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=FULL_TEXT_WORKERS, thread_name_prefix="history-full-text"
        )
        max_future_skew = timedelta(seconds=settings.max_future_skew)
        self.ingest = IngestChatEvents(self.events, clock=clock, max_future_skew=max_future_skew)
        self.reindex_full_text = ReindexFullText(self.events)
        self.search = SearchHistory(
            events=self.events,
            windows=self.windows,
            flags=self.flag_store,
            embedder=self.embedder,
            model_id=self.model_id,
            full_text_pool=self._full_text_pool,
            similarity_floor=settings.history_similarity_floor,
            clock=clock,
            max_future_skew=max_future_skew,
        )
        self.sweeper = Sweeper(
            events=self.events,
            windows=self.windows,
            watermarks=self.watermarks,
            locks=self.locks,
            flags=self.flag_store,
            model=model,
            clock=clock,
        )
        self.sweep_status = SweepStatus(
            events=self.events, watermarks=self.watermarks, model=model, clock=clock
        )
        self.flags = FeatureFlags(self.flag_store)
        self.retention = HistoryRetention(
            PostgresRetention(database), default_days=settings.default_retention_days, clock=clock
        )
        self.drop_model = DropModel(
            events=self.events,
            windows=self.windows,
            watermarks=self.watermarks,
            active_model=self.model_id,
        )
        self.last_sweep: dict[str, Any] | None = None
        self.last_purge: dict[str, Any] | None = None
        # Set on shutdown: a background pass stops between batches.
        self._stop = threading.Event()
        # Held by a background pass while it runs, so shutdown can wait for it.
        self._background = threading.Lock()
        self._wake: anyio.Event | None = None

    # Use cases with their metrics ---------------------------------------------------------

    def ingest_events(self, org_id: str, events: list[ChatEvent]) -> IngestResult:
        result = self.ingest(org_id, events)
        metrics.record_ingest(result.inserted, result.duplicates)
        return result

    def search_history(self, org_id: str, query: HistoryQuery) -> HistorySearchResult:
        result = self.search(org_id, query)
        metrics.record_search(result.semantic)
        return result

    def run_sweep(
        self,
        org_id: str | None = None,
        *,
        trigger: str,
        wait_for_locks: bool = True,
        observer: SweepObserver | None = None,
    ) -> SweepReport:
        started = time.perf_counter()
        report = self.sweeper.run_pass(
            org_id, wait_for_locks=wait_for_locks, observer=observer, stop=self._stop
        )
        seconds = time.perf_counter() - started
        metrics.record_sweep(report, seconds, trigger)
        self.last_sweep = {
            "finished_at": datetime.now(UTC).isoformat(),
            "seconds": round(seconds, 3),
            "trigger": trigger,
            "org_id": org_id,
            **report.summary(),
        }
        return report

    def run_purge(self, org_id: str | None = None) -> PurgeReport:
        report = self.retention.purge(org_id)
        metrics.record_purge(report)
        self.last_purge = {
            "finished_at": datetime.now(UTC).isoformat(),
            "orgs": report.orgs,
            "events_deleted": report.events_deleted,
            "embeddings_deleted": report.embeddings_deleted,
        }
        return report

    def drop_model_spec(self, spec_text: str) -> DropReport:
        """Drop a model named as operators write it (`ollama:bge-m3:latest`, `...@1024`): the
        spec is turned into the identity stored with its rows (docs/adr/0010)."""
        return self.drop_model(stored_model_id(spec_text))

    # ContextRuntime ----------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        from memory.entrypoints.http.history_routes import history_routes

        return history_routes(self)

    def workers(self) -> list[Worker]:
        return [self.run_sweep_worker, self.run_purge_worker]

    async def run_sweep_worker(self) -> None:
        """A pass every `sweep_interval`, and `sweep_debounce` after an ingest NOTIFY."""
        async with anyio.create_task_group() as tg:
            self._wake = anyio.Event()
            tg.start_soon(self._listen)
            while True:
                woken = False
                with anyio.move_on_after(self.settings.sweep_interval):
                    await self._wake.wait()
                    woken = True
                if woken:
                    await anyio.sleep(self.settings.sweep_debounce)
                # A NOTIFY during the pass wakes the next one.
                self._wake = anyio.Event()
                trigger = "notify" if woken else "interval"
                await self._in_background(functools.partial(self._background_sweep, trigger))

    def _background_sweep(self, trigger: str) -> SweepReport:
        return self.run_sweep(trigger=trigger, wait_for_locks=False)

    async def run_purge_worker(self) -> None:
        while True:
            await self._in_background(self.run_purge)
            await anyio.sleep(self.settings.purge_interval)

    async def _listen(self) -> None:
        failures = 0

        def on_listening() -> None:
            nonlocal failures
            failures = 0
            self._on_listening()

        while True:
            try:
                await listen_for_ingest(
                    self.database.url,
                    self._on_ingest,
                    on_listening=on_listening,
                    connect_seconds=self.database.timeout,
                )
            except Exception as exc:  # a lost connection must not end the sweep worker
                failures += 1
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc
                # Once per outage, not once a second.
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "history ingest listener failed (%s); reconnecting", reason)
            await anyio.sleep(LISTENER_RETRY_SECONDS)

    def _on_listening(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _on_ingest(self, org_id: str) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _in_background(self, work: Callable[[], T]) -> T | None:
        """Run blocking work in a thread. On cancellation (shutdown), ask it to stop and
        wait for it, so that nothing runs on a closed pool."""

        def guarded() -> T | None:
            with self._background:
                if self._stop.is_set():
                    return None
                return work()

        try:
            return await anyio.to_thread.run_sync(guarded, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            self._stop.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._wait_for_background)
            raise

    def _wait_for_background(self) -> None:
        with self._background:
            pass

    def health(self) -> dict[str, Any]:
        return {
            "model": self.model.status().as_health(),
            "sweep": {"last_run": self.last_sweep},
            "purge": {"last_run": self.last_purge},
        }

    def request_stop(self) -> None:
        """A running sweep pass (background, or one a request started) stops at its next
        batch, so that it ends within the drain time (ADR 0044)."""
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        self._wait_for_background()
        self.embedder.close()
        self._full_text_pool.shutdown(wait=True)
        self.watermarks.close()


def build(settings: Settings, database: Database, models: ModelRegistry) -> HistoryRuntime:
    return HistoryRuntime(settings, database, models.get(settings.history_model))
