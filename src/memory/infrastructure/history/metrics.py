"""Prometheus metrics of the history context (exposed on /metrics)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from prometheus_client import Counter, Gauge, Histogram

from memory.application.history.ingest import IngestResult
from memory.application.history.ports import SweepBacklog
from memory.application.history.retention import PurgeReport
from memory.application.history.search_indexes import SearchIndexSummary
from memory.application.history.sweep import SweepReport
from memory.application.observer import ServiceCall
from memory.domain.history.search import HistorySearchResult, SemanticState
from memory.domain.history.search_path import SearchIndexState

INGESTED_EVENTS = Counter(
    "memory_history_ingested_events_total", "Chat events received by ingest", ["result"]
)
SWEEP_WINDOWS = Counter(
    "memory_history_sweep_windows_total", "Windows the sweep consumed, by outcome", ["outcome"]
)
SWEEP_STALLS = Counter(
    "memory_history_sweep_stalls_total", "Partitions stalled by a model failure", ["reason"]
)
SWEEP_POISON_EVENTS = Counter(
    "memory_history_sweep_poison_events_total",
    "Stored events skipped unread as poison (occurred_at outside the accepted range)",
)
SWEEP_PASSES = Counter("memory_history_sweep_passes_total", "Sweep passes run", ["trigger"])
SWEEP_SECONDS = Histogram(
    "memory_history_sweep_seconds",
    "Duration of one sweep pass",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900),
)
SWEEP_OPEN_WINDOWS = Gauge(
    "memory_history_sweep_open_windows", "Open windows left after the last sweep pass"
)
# Orgs are counted into these lag buckets (cumulative, as Prometheus histograms are): the
# per-org picture with a fixed number of series however many orgs there are.
ORG_LAG_BUCKETS = (0, 10, 100, 1_000, 10_000)
SWEEP_ORGS_BY_LAG = Gauge(
    "memory_history_sweep_orgs_by_lag",
    "Orgs with semantic search on whose unconsumed events are at most `le` after their last sweep",
    ["le"],
)
SWEEP_LAG_MAX = Gauge(
    "memory_history_sweep_lag_events_max", "The largest per-org sweep lag (events)"
)
SWEEP_LAG_SUM = Gauge(
    "memory_history_sweep_lag_events_sum", "Unconsumed events over all swept orgs"
)
# Work waiting for the sweep after the last pass, from the maintained state (ADR 0089);
# orgs are counted into waiting-age buckets (cumulative): no series names an org.
SWEEP_WAITING_PARTITIONS = Gauge(
    "memory_history_sweep_waiting_partitions",
    "Partitions with work the sweep could do now, after the last pass",
)
SWEEP_WAITING_ORGS = Gauge(
    "memory_history_sweep_waiting_orgs", "Orgs with work the sweep could do now"
)
SWEEP_WAITING_OLDEST = Gauge(
    "memory_history_sweep_waiting_oldest_seconds",
    "How long the longest-waiting partition has waited for the sweep",
)
SWEEP_ORGS_BY_WAIT = Gauge(
    "memory_history_sweep_orgs_by_wait_seconds",
    "Orgs with work waiting whose oldest has waited at most `le` seconds",
    ["le"],
)
SEARCHES = Counter(
    "memory_history_searches_total", "History searches by semantic state", ["semantic"]
)
PURGED = Counter("memory_history_purged_total", "Rows deleted by retention", ["kind"])
# When the last pass over all orgs (and purge) finished without failing, as Unix time: an
# alert on `time() - ...` says "no sweep for an hour" however busy the orgs are, which the
# lag counts cannot (docs/adr/0108). Absent until this process has run one.
SWEEP_LAST_SUCCESS = Gauge(
    "memory_history_sweep_last_success_timestamp_seconds",
    "When this process's last sweep pass over all orgs finished without failing or being"
    " interrupted (Unix time)",
)
PURGE_LAST_SUCCESS = Gauge(
    "memory_history_purge_last_success_timestamp_seconds",
    "When this process's last retention purge of all orgs finished without failing (Unix time)",
)

# Large orgs' search indexes (docs/adr/0134, 0141), as the last read of their summary left
# them (/healthz, and the index builder every few seconds).
SEARCH_INDEXES = Gauge(
    "memory_history_search_indexes",
    "Org search indexes by state (wanted, building, ready, failed, dropping)",
    ["state"],
)
SEARCH_INDEX_BUILD_PROGRESS = Gauge(
    "memory_history_search_index_build_progress",
    "Share done of the running index builds, on average (0..1; 0 when none runs)",
)


def record_ingest(inserted: int, duplicates: int) -> None:
    INGESTED_EVENTS.labels("inserted").inc(inserted)
    INGESTED_EVENTS.labels("duplicate").inc(duplicates)


class OrgLag:
    """The last measured lag of each swept org, exported only as aggregates. A pass over
    all orgs replaces the picture (an org turned off drops out); a one-org pass updates it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lag: dict[str, int] = {}

    def update(self, lag: Mapping[str, int], *, all_orgs: bool) -> None:
        with self._lock:
            if all_orgs:
                self._lag = dict(lag)
            else:
                self._lag.update(lag)
            values = list(self._lag.values())
        for bound in ORG_LAG_BUCKETS:
            SWEEP_ORGS_BY_LAG.labels(str(bound)).set(sum(1 for v in values if v <= bound))
        SWEEP_ORGS_BY_LAG.labels("+Inf").set(len(values))
        SWEEP_LAG_MAX.set(max(values, default=0))
        SWEEP_LAG_SUM.set(sum(values))


ORG_LAG = OrgLag()


def record_sweep(
    report: SweepReport, seconds: float, trigger: str, *, all_orgs: bool = True
) -> None:
    ORG_LAG.update(report.org_lag_events, all_orgs=all_orgs)
    SWEEP_PASSES.labels(trigger).inc()
    SWEEP_SECONDS.observe(seconds)
    SWEEP_WINDOWS.labels("embedded").inc(report.windows_embedded)
    SWEEP_WINDOWS.labels("skipped").inc(report.windows_skipped)
    SWEEP_WINDOWS.labels("poisoned").inc(report.windows_poisoned)
    SWEEP_POISON_EVENTS.inc(report.events_poisoned)
    SWEEP_OPEN_WINDOWS.set(report.windows_open)
    for reason in report.stall_reasons:
        SWEEP_STALLS.labels(reason).inc()
    if report.backlog is not None and all_orgs:
        record_backlog(report.backlog)
    # A stalled partition is its own alert (stalls, the model's circuit); a pass that was
    # stopped between batches did not get through, so it does not count as one.
    if all_orgs and not report.partitions_interrupted:
        SWEEP_LAST_SUCCESS.set(time.time())


def record_backlog(backlog: SweepBacklog) -> None:
    SWEEP_WAITING_PARTITIONS.set(backlog.partitions)
    SWEEP_WAITING_ORGS.set(backlog.orgs)
    SWEEP_WAITING_OLDEST.set(backlog.oldest_age_seconds or 0.0)
    for bound, orgs in backlog.orgs_by_age:
        SWEEP_ORGS_BY_WAIT.labels(f"{bound:g}").set(orgs)
    SWEEP_ORGS_BY_WAIT.labels("+Inf").set(backlog.orgs)


def record_search(state: SemanticState) -> None:
    SEARCHES.labels(state.value).inc()


def record_purge(report: PurgeReport, *, all_orgs: bool = True) -> None:
    PURGED.labels("events").inc(report.events_deleted)
    PURGED.labels("embeddings").inc(report.embeddings_deleted)
    if all_orgs:
        PURGE_LAST_SUCCESS.set(time.time())


def record_search_indexes(summary: SearchIndexSummary) -> None:
    for state in SearchIndexState:
        SEARCH_INDEXES.labels(state.value).set(summary.count(state))
    running = [s.progress for s in summary.queue if s.progress is not None]
    SEARCH_INDEX_BUILD_PROGRESS.set(sum(running) / len(running) if running else 0.0)


class HistoryMetrics:
    """`ServiceObserver` that turns `HistoryService` calls into the counters above."""

    def observe(self, call: ServiceCall) -> None:
        result = call.result
        if isinstance(result, IngestResult):
            record_ingest(result.inserted, result.duplicates)
        elif isinstance(result, HistorySearchResult):
            record_search(result.semantic)
        elif isinstance(result, SweepReport):
            record_sweep(
                result,
                call.seconds,
                call.labels.get("trigger", "api"),
                all_orgs="org_id" not in call.labels,
            )
        elif isinstance(result, PurgeReport):
            record_purge(result, all_orgs="org_id" not in call.labels)
        elif isinstance(result, SearchIndexSummary):
            record_search_indexes(result)
