"""The sweep at tenant scale (issue 16 items 2, 3, 7; docs/adr/0089, 0090).

    .venv/bin/python bench/sweep_work.py                       # defaults below
    .venv/bin/python bench/sweep_work.py --partitions 2000 --backlog 20000

Starts a private PostgreSQL cluster in a temporary home, model `hash:1024` (its cost is
~nothing, so the sweep's own cost shows). Measured, each with its baseline in the same run:

- a pass with nothing new over N partitions of one org, and over 1,000 orgs x 10 channels,
  against one statement's round trip (`SELECT 1`);
- a pass after new messages in k partitions, k = 1, 10, 100, 1,000, against k = 1 (O(k));
- sweep throughput over N partitions of one closed window each against 10 partitions of
  N / 10 windows each (same model, same number of windows), in rounds of alternating order;
- the time a new org's first window waits while another org's backlog is being swept, against
  the sweep interval.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench_cluster import cluster, timed_ms
from memory.domain.audit.admin_action import Actor
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

ACTOR = Actor("bench", "bench/sweep_work.py")
INGEST_BATCH = 1000
# Windows of one channel are this far apart (more than the 30-minute session gap).
SPACING = timedelta(minutes=40)
REPEATS = 5


@dataclass(frozen=True)
class Row:
    what: str
    value: str
    ratio: str
    note: str


def message(org: str, channel: str, n: int, at: datetime, i: int = 0) -> ChatEvent:
    return ChatEvent(
        event_id=f"{org}-{channel}-{n}-{i}",
        provider="slack",
        channel_id=channel,
        sender="ali" if i % 2 == 0 else "agent",
        text=f"question {n} part {i} about the invoice of order {n * 7 + i}",
        occurred_at=at,
    )


def windows(org: str, channels: int, per_channel: int, start: datetime) -> list[ChatEvent]:
    """`per_channel` closed windows of 3 messages in each of `channels` channels."""
    return [
        message(org, f"C{c}", w, start + w * SPACING + timedelta(seconds=i), i)
        for c in range(channels)
        for w in range(per_channel)
        for i in range(3)
    ]


def ingest(runtime: HistoryRuntime, org: str, events: list[ChatEvent]) -> None:
    for i in range(0, len(events), INGEST_BATCH):
        runtime.service.ingest(org, events[i : i + INGEST_BATCH])


def timed_pass(runtime: HistoryRuntime, org: str | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    report = runtime.service.sweep(org, trigger="bench", wait_for_locks=False)
    return time.perf_counter() - started, report.windows_embedded


def median_ms(runtime: HistoryRuntime, org: str | None = None) -> float:
    def one_pass() -> None:
        runtime.service.sweep(org, trigger="bench", wait_for_locks=False)

    return statistics.median(timed_ms(one_pass, REPEATS))


def round_trip_ms(database: Database) -> float:
    def once() -> None:
        with database.connection() as conn:
            conn.execute("SELECT 1")

    return statistics.median(timed_ms(once, 50))


def caught_up(runtime: HistoryRuntime) -> None:
    """Leave every partition's work as a pass that caught up leaves it, without embedding:
    what a pass reads is the due work only, so this is the state an idle pass meets (the
    bench measures throughput separately)."""
    runtime.schedule.register(runtime.service.model_id, datetime.now(UTC))
    with runtime.database.connection() as conn:
        conn.execute("UPDATE dw_sweep_work SET due_at = NULL, waiting_since = NULL")


def bench_idle_and_k(runtime: HistoryRuntime, database: Database, partitions: int) -> list[Row]:
    start = datetime.now(UTC) - timedelta(days=30)
    ingest(runtime, "wide", windows("wide", partitions, 1, start))
    caught_up(runtime)
    rtt = round_trip_ms(database)
    idle = median_ms(runtime)
    rows = [
        Row("one statement's round trip (baseline)", f"{rtt:.2f} ms", "1.0", "SELECT 1"),
        Row(
            f"pass with nothing new, {partitions:,} partitions in 1 org",
            f"{idle:.1f} ms",
            f"{idle / rtt:.1f}",
            "target <= 100 ms",
        ),
    ]
    later = start + timedelta(days=10)
    one = 0.0
    for k in (1, 10, 100, 1000):
        if k > partitions:
            break
        ingest(runtime, "wide", [message("wide", f"C{c}", 99, later, k) for c in range(k)])
        seconds, embedded = timed_pass(runtime)
        assert embedded >= k, (k, embedded)
        one = one or seconds
        rows.append(
            Row(
                f"pass after new messages in k = {k:,} partitions",
                f"{seconds * 1000:.1f} ms",
                f"{seconds / one:.1f}",
                "ratio to k = 1 (O(k): grows like k)",
            )
        )
        later += timedelta(hours=1)
    return rows


def bench_many_orgs(runtime: HistoryRuntime, database: Database, orgs: int) -> list[Row]:
    start = datetime.now(UTC) - timedelta(days=30)
    for o in range(orgs):
        ingest(runtime, f"org{o:04d}", windows(f"org{o:04d}", 10, 1, start))
    caught_up(runtime)
    idle = median_ms(runtime)
    rtt = round_trip_ms(database)
    return [
        Row(
            f"pass with nothing new, {orgs:,} orgs x 10 channels",
            f"{idle:.1f} ms",
            f"{idle / rtt:.1f}",
            "ratio to one round trip; target <= 100 ms",
        ),
    ]


def warmed_up(runtime: HistoryRuntime, start: datetime) -> None:
    """Leave the cluster as a deployment's is: one org ingested, swept and analysed. A table
    never analysed gives the planner default estimates for every index (the first minute of a
    new installation, docs/adr/0136); the rounds' orgs are then new to the statistics, as an
    org's backfill is."""
    ingest(runtime, "warmup", windows("warmup", 10, 10, start))
    runtime.service.sweep("warmup", trigger="bench", wait_for_locks=False)
    with runtime.database.connection() as conn:
        conn.execute("ANALYZE")


def bench_throughput(runtime: HistoryRuntime, total: int, rounds: int) -> list[Row]:
    """Each round sweeps a fresh org of 10 partitions x total / 10 windows and one of total
    partitions x 1 window, in alternating order (deep first, then broad first, ...), so a
    change in the machine's load weighs on both sides alike; rates are over all rounds, and
    the median of the rounds' ratios is beside them."""
    start = datetime.now(UTC) - timedelta(days=60)
    warmed_up(runtime, start - timedelta(days=30))
    deep, broad = 0.0, 0.0
    ratios = []
    for r in range(rounds):
        sides = [("deep", 10, total // 10), ("broad", total, 1)]
        seconds = {}
        for name, channels, per_channel in sides if r % 2 == 0 else sides[::-1]:
            org = f"{name}{r}"
            ingest(runtime, org, windows(org, channels, per_channel, start))
            seconds[name], embedded = timed_pass(runtime, org)
            assert embedded == total, (org, embedded)
        deep, broad = deep + seconds["deep"], broad + seconds["broad"]
        ratios.append(seconds["deep"] / seconds["broad"])
    each = ", ".join(f"{x:.2f}" for x in ratios)
    return [
        Row(
            f"throughput, 10 partitions x {total // 10:,} windows (baseline)",
            f"{total * rounds / deep:,.0f} windows/s",
            "1.00",
            f"{deep:.1f} s over {rounds} round(s)",
        ),
        Row(
            f"throughput, {total:,} partitions x 1 window",
            f"{total * rounds / broad:,.0f} windows/s",
            f"{deep / broad:.2f}",
            f"{broad:.1f} s; ratio per round {each} (median {statistics.median(ratios):.2f});"
            " target >= 0.8",
        ),
    ]


def bench_fairness(runtime: HistoryRuntime, backlog_messages: int, interval: float) -> list[Row]:
    """A pass sweeps an org with `backlog_messages` waiting (100 channels); a new org ingests
    one closed window meanwhile; how long until its window is embedded."""
    per_channel = max(1, backlog_messages // 3 // 100)
    start = datetime.now(UTC) - timedelta(days=90)
    ingest(runtime, "backlog", windows("backlog", 100, per_channel, start))
    stop = threading.Event()

    def sweep_until_stopped() -> None:
        while not stop.is_set():
            runtime.service.sweep(trigger="bench", wait_for_locks=False)

    sweeping = threading.Thread(target=sweep_until_stopped)
    sweeping.start()
    time.sleep(2.0)  # the backlog's pass is well under way
    arrived = time.perf_counter()
    runtime.service.ingest("newco", windows("newco", 1, 1, start))
    waited = None
    while waited is None and time.perf_counter() - arrived < 600:
        with runtime.database.connection() as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM dw_message_embeddings WHERE org_id = 'newco'"
            ).fetchone()
        if row and row["n"]:
            waited = time.perf_counter() - arrived
        time.sleep(0.05)
    with runtime.database.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM dw_message_embeddings WHERE org_id = 'backlog'"
        ).fetchone()
    done = int(row["n"]) if row else 0
    stop.set()
    runtime.service.stop_sweeps()
    sweeping.join()
    assert waited is not None, "the new org's window was never embedded"
    return [
        Row(
            f"new org's first window, another org has {per_channel * 300:,} messages waiting",
            f"{waited:.2f} s",
            f"{waited / interval:.2f}",
            f"ratio to the sweep interval ({interval:g} s; target <= 2);"
            f" {done:,} of the backlog's {per_channel * 100:,} windows embedded by then",
        )
    ]


def table(rows: list[Row]) -> str:
    lines = ["| measured | value | ratio | note |", "|---|---:|---:|---|"]
    lines += [f"| {r.what} | {r.value} | {r.ratio} | {r.note} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--orgs", type=int, default=1_000)
    parser.add_argument("--throughput-windows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2, help="throughput rounds, alternating")
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--only", default="idle,orgs,throughput,fairness")
    args = parser.parse_args()
    wanted = set(args.only.split(","))
    rows: list[Row] = []
    started = time.perf_counter()
    with cluster("sweep") as url:
        database = Database(url, min_size=1, max_size=8)
        database.open()
        try:
            database.migrate()
            runtime = HistoryRuntime(Settings(), database, HashEmbeddingModel(1024))
            try:
                runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=ACTOR)
                if "idle" in wanted:
                    rows += bench_idle_and_k(runtime, database, args.partitions)
                if "orgs" in wanted:
                    rows += bench_many_orgs(runtime, database, args.orgs)
                if "throughput" in wanted:
                    rows += bench_throughput(runtime, args.throughput_windows, args.rounds)
                if "fairness" in wanted:
                    rows += bench_fairness(runtime, args.backlog, Settings().sweep_interval)
            finally:
                runtime.close()
        finally:
            database.close()
    print()
    print(table(rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
