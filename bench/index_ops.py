"""Operating history's search indexes (docs/adr/0141): what watching a build, the shrink
check and the status reads cost.

    .venv/bin/python bench/index_ops.py                       # 20,000 windows
    .venv/bin/python bench/index_ops.py --windows 5000 --rows 1000

Starts a private PostgreSQL cluster in a temporary home and bulk-loads one org's windows with
COPY (bench/large_orgs.py's clustered 1024-dimension vectors), then measures, each beside its
baseline in the same run:

- the org's index build (the builder, as `memory serve` runs it) while an operator reads
  `HistoryService.search_indexes` every 0.5 s: the phases and progress that read showed, and
  what a read costs during the build against the same read when nothing builds;
- the retention purge of 1% of the org's windows, an org with a ready index (the shrink check
  counts its windows to the drop line in the purge's transaction) against the same purge of
  an org without one, and the shrink check's statement alone;
- the summary (/healthz, the metrics, `memory history indexes`) with `--rows` index requests
  in the table, against the org's own read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

from bench_cluster import cluster, timed_ms
from large_orgs import (
    HISTORY_DIMS,
    HISTORY_MODEL,
    ClusteredVectors,
    QueryVectors,
    Row,
    load_windows,
    pct,
)
from memory.application.history.search_indexes import SUMMARY_QUEUE_LIMIT
from memory.domain.history.search_path import HistorySearchMode, SearchIndexState
from memory.domain.time_range import AcceptedTimeRange
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.retention import PostgresRetention
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

READ_EVERY_SECONDS = 0.5
REPEATS = 30
PURGES = 10


def table(rows: list[Row]) -> str:
    lines = ["| measurement | result | ratio vs baseline | notes |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {r.value} | {r.ratio} | {r.note} |" for r in rows]
    return "\n".join(lines)


def ms(samples: list[float]) -> str:
    return f"p50 {statistics.median(samples):.2f} ms, p95 {pct(samples, 0.95):.2f} ms"


def watch_build(runtime: HistoryRuntime, org: str) -> tuple[list[Row], float]:
    """Builds the org's index in a thread while reading its status every READ_EVERY_SECONDS;
    the phases seen (first and last progress of each) and the read's cost meanwhile."""
    idle = timed_ms(lambda: runtime.service.search_indexes(org), REPEATS)
    runtime.window_indexes.request(org, HISTORY_MODEL, 0)
    result: list[object] = []
    builder = threading.Thread(target=lambda: result.append(runtime.window_indexes.build_next()))
    started = time.perf_counter()
    builder.start()
    seen: dict[str, list[str]] = {}
    during: list[float] = []
    while builder.is_alive():
        read_at = time.perf_counter()
        [status] = runtime.service.search_indexes(org).indexes
        during.append((time.perf_counter() - read_at) * 1000)
        if status.state is SearchIndexState.BUILDING and status.phase is not None:
            progress = "" if status.progress is None else f" {100 * status.progress:.0f}%"
            seen.setdefault(status.phase, []).append(
                f"{time.perf_counter() - started:.1f} s{progress}"
            )
        time.sleep(READ_EVERY_SECONDS)
    builder.join()
    seconds = time.perf_counter() - started
    assert result and result[0] is not None, "the build did not finish"
    phases = "; ".join(
        f"{phase}: {marks[0]}" + (f" .. {marks[-1]}" if len(marks) > 1 else "")
        for phase, marks in seen.items()
    )
    rows = [
        Row(
            "org status read, nothing building (baseline)",
            ms(idle),
            "1.00",
        ),
        Row(
            f"org status read during the build ({len(during)} reads)",
            ms(during),
            f"{statistics.median(during) / statistics.median(idle):.2f}",
            f"phases seen: {phases or 'none (the build ended before a copy)'}",
        ),
    ]
    return rows, seconds


def purge_cost(
    database: Database, runtime: HistoryRuntime, orgs: dict[str, datetime], size: int
) -> list[Row]:
    """PURGES purges of 1% of each org's windows (its oldest; the retention adapter the
    service purges through), alternating between the org with a ready index and the org
    without; then the shrink check's statement alone, rolled back."""
    retention = PostgresRetention(database, indexes=runtime.window_indexes)
    stored = AcceptedTimeRange.for_stored_rows(datetime.now(UTC))
    times: dict[str, list[float]] = {org: [] for org in orgs}
    for n in range(1, PURGES + 1):
        for org, start in orgs.items():
            cutoff = start + timedelta(minutes=n * size // 100)
            started = time.perf_counter()
            retention.purge(org, cutoff, stored)
            times[org].append((time.perf_counter() - started) * 1000)
    indexed, plain = list(orgs)
    check: list[float] = []
    for _ in range(REPEATS):
        with database.connection() as conn:
            started = time.perf_counter()
            runtime.window_indexes.retire_shrunk(conn, indexed)
            check.append((time.perf_counter() - started) * 1000)
            conn.rollback()
    base = statistics.median(times[plain])
    return [
        Row(
            f"purge of 1% ({size // 100:,} windows), org without an index (baseline)",
            ms(times[plain]),
            "1.00",
        ),
        Row(
            f"purge of 1% ({size // 100:,} windows), org with a ready index",
            ms(times[indexed]),
            f"{statistics.median(times[indexed]) / base:.2f}",
            "the shrink check included",
        ),
        Row(
            "the shrink check alone (count to the drop line, 2,500)",
            ms(check),
            f"{statistics.median(check) / base:.2f}",
            "against the baseline purge",
        ),
    ]


def summary_cost(database: Database, runtime: HistoryRuntime, org: str, rows: int) -> list[Row]:
    own = timed_ms(lambda: runtime.service.search_indexes(org), REPEATS)
    with database.connection() as conn:
        conn.execute(
            "INSERT INTO dw_window_indexes (org_id, model, index_name, state, windows_seen,"
            " dimensions, ready_at)"
            " SELECT 'bench-' || i, %s, 'bench_' || i,"
            " (ARRAY['ready', 'ready', 'ready', 'wanted', 'failed'])[1 + i %% 5], 5000, 1024,"
            " now() FROM generate_series(1, %s) AS i",
            (HISTORY_MODEL, rows),
        )
        conn.execute("ANALYZE dw_window_indexes")
    summary = timed_ms(runtime.service.search_index_summary, REPEATS)
    read = runtime.service.search_index_summary()
    return [
        Row("one org's indexes (GET /v1/orgs/{org}/search-indexes) (baseline)", ms(own), "1.00"),
        Row(
            f"summary with {rows + 1:,} requests (/healthz, metrics, CLI)",
            ms(summary),
            f"{statistics.median(summary) / statistics.median(own):.2f}",
            f"{read.count(SearchIndexState.READY):,} ready, queue of {len(read.queue)}"
            f" (limit {SUMMARY_QUEUE_LIMIT})",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=20_000, help="windows per org")
    parser.add_argument("--rows", type=int, default=2_000, help="index requests for the summary")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.perf_counter()
    rows: list[Row] = []
    with cluster("index_ops") as url:
        database = Database(url, min_size=1, max_size=8)
        database.open()
        try:
            database.migrate()
            gen = ClusteredVectors(HISTORY_DIMS, args.windows, args.seed)
            start = datetime.now(UTC) - timedelta(days=40)
            orgs = {"indexed": start, "plain": start}
            for org in orgs:
                load_windows(database, org, gen.sample(args.windows), start)
            runtime = HistoryRuntime(
                Settings(history_search_mode=HistorySearchMode.AUTO),
                database,
                QueryVectors(gen.sample(1)),
            )
            try:
                watched, build_seconds = watch_build(runtime, "indexed")
                rows += watched
                print(table(rows), flush=True)
                rows += purge_cost(database, runtime, orgs, args.windows)
                rows += summary_cost(database, runtime, "indexed", args.rows)
            finally:
                runtime.close()
        finally:
            database.close()
    print()
    print(table(rows))
    print(
        f"\n({args.windows:,} windows per org of {HISTORY_DIMS} dimensions; build"
        f" {build_seconds:.1f} s; total {time.perf_counter() - started:.0f} s,"
        f" {os.cpu_count()} CPUs;"
    )
    print(f" before: {uptime};")
    print(f" after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
