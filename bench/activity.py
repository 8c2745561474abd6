"""What the console's last-hour trends cost (docs/adr/0122), measured in one run.

    .venv/bin/python bench/activity.py [--calls 200000] [--rounds 7]

1. **On the search path**: `ActivityTally.observe` (a dictionary update under a lock) per
   finished history search, against the baseline of the observer every search already has,
   `HistoryMetrics.observe` (Prometheus counters), with 1, 100 and 10,000 orgs tallied.
2. **The flush**: one `PostgresActivityLog.add` of the tallies of N orgs (one minute), on a
   private PostgreSQL cluster, against the baseline of writing one search's tally as its own
   statement (what a write per search would cost each search). And one trend read.

Rounds interleave the configurations; medians. Ratios are against this run's baselines.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memory.application.history.activity import ActivityTally
from memory.application.observer import ServiceCall
from memory.domain.history.activity import ActivityCount, minute_of, trend_start
from memory.domain.history.search import HistorySearchResult, SemanticState
from memory.infrastructure.history.activity_log import PostgresActivityLog
from memory.infrastructure.history.metrics import HistoryMetrics
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database

ORG_COUNTS = (1, 100, 10_000)
FLUSH_ORGS = (10, 100, 1_000)
WRITES_PER_ROUND = 50


def now() -> datetime:
    return datetime.now(UTC)


def searches(orgs: int, calls: int) -> list[ServiceCall]:
    result = HistorySearchResult([], SemanticState.ON)
    return [
        ServiceCall("history", "search", 0.01, result, None, {"org_id": f"org-{i % orgs}"})
        for i in range(calls)
    ]


def per_call_ns(observe: Callable[[ServiceCall], None], calls: list[ServiceCall]) -> float:
    started = time.perf_counter_ns()
    for call in calls:
        observe(call)
    return (time.perf_counter_ns() - started) / len(calls)


def search_path(calls: int, rounds: int) -> None:
    print("\n## On the search path (ns per finished search, median of rounds)\n")
    print("| orgs tallied | HistoryMetrics (baseline) | ActivityTally | ratio |")
    print("|---:|---:|---:|---:|")
    metrics = HistoryMetrics()
    for orgs in ORG_COUNTS:
        workload = searches(orgs, calls)
        base, tally_ns = [], []
        for _ in range(rounds):
            tally = ActivityTally(now)
            base.append(per_call_ns(metrics.observe, workload))
            tally_ns.append(per_call_ns(tally.observe, workload))
        b, t = statistics.median(base), statistics.median(tally_ns)
        print(f"| {orgs:,} | {b:,.0f} | {t:,.0f} | {t / b:.2f}x |")


def timed_add(log: PostgresActivityLog, counts: list[ActivityCount]) -> float:
    forget = trend_start(now())
    started = time.perf_counter()
    log.add(counts, forget_before=forget)
    return (time.perf_counter() - started) * 1000


def timed_read(log: PostgresActivityLog, org_id: str) -> float:
    started = time.perf_counter()
    log.minutes(org_id, trend_start(now()))
    return (time.perf_counter() - started) * 1000


def flush(rounds: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="memory-bench-activity-"))
    home.chmod(0o755)
    pg = EmbeddedPostgres(home, durable=False)
    try:
        url = create_database(pg.start(), "bench_activity")
        db = Database(url, min_size=1, max_size=2)
        db.open()
        try:
            db.migrate()
            log = PostgresActivityLog(db)
            print("\n## The flush (ms, median of rounds)\n")
            print(
                "| orgs in the flush | one search's own write (baseline) | one flush"
                " | flush / write | trend read |"
            )
            print("|---:|---:|---:|---:|---:|")
            for orgs in FLUSH_ORGS:
                single, whole, read = [], [], []
                for _ in range(rounds):
                    minute = minute_of(now())
                    one = [ActivityCount("org-0", minute, 1, 1, 0)]
                    single += [timed_add(log, one) for _ in range(WRITES_PER_ROUND)]
                    counts = [ActivityCount(f"org-{i}", minute, 3, 2, 1, 4) for i in range(orgs)]
                    whole.append(timed_add(log, counts))
                    read.append(timed_read(log, "org-0"))
                s, w, r = (statistics.median(x) for x in (single, whole, read))
                print(f"| {orgs:,} | {s:.2f} | {w:.2f} | {w / s:.1f}x | {r:.2f} |")
        finally:
            db.close()
    finally:
        pg.stop()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    search_path(args.calls, args.rounds)
    flush(args.rounds)


if __name__ == "__main__":
    main()
