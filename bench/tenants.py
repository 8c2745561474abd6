"""Tenant scale (issue 16): what search, the sweep and the sweep status cost as an org's
channels and the number of orgs grow, and how long a new org waits behind another's backlog.

    .venv/bin/python bench/tenants.py                          # defaults below
    .venv/bin/python bench/tenants.py --sizes 1,100,1000 --orgs 200 --backlog 20000

Starts a private PostgreSQL cluster in a temporary home, with three databases, all loaded
through the service's own ingest in batches of 1,000 events (so every trigger and state the
service keeps is written as in production) and embedded with the `hash:1024` test model:

1. One org per size with N channels (`--sizes`, 1 / 100 / 1,000 / 10,000), each channel one
   closed conversation window of 4 messages. Per size: hybrid search p50/p95 (query
   vectors precomputed, as in bench/history.py) beside the full-text statement and the
   exact-KNN statement measured alone in the same run (target: hybrid p50 within 1.3x of
   their sum), and the KNN statement search itself runs (with the query's relevance
   statistics, ADR 0112) alone; a sweep pass with nothing new; the first page of the
   sweep status beside the whole org's status read page by page (what the route answered
   before ADR 0093).
   Sweep throughput over 10,000 partitions of 1 window against 10 partitions of 1,000
   windows (same model, same total windows).
2. `--orgs` orgs (1,000) of 10 channels each: the same measurements, the pass over every org,
   and (with `--backlog`) part 3 among them: one more org's backlog and a new org, while
   the 1,000 orgs are settled.
3. An org with a backlog of `--backlog` messages (100,000) being swept by a loop of passes
   every `--interval` seconds, and a new org ingesting its first closed window meanwhile:
   how long until that window is embedded.

The table has one row per org measured (each size, the 1,000 orgs) and every column issue
16 item 9 lists: hybrid p50/p95 beside the full-text and KNN statements, a pass with nothing
new, the org's first sweep (windows/s), the status' first page, and a new org's first
window behind another org's backlog where that was measured (the 1,000 orgs' row).

Measurements that cost more than `--budget` seconds stop early (at least 3 samples): the
table says how many samples each figure has. Ratios are against baselines of the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pgvector import HalfVector
from tqdm import tqdm

from history import WORDS, PrecomputedQueries, pct
from memory.domain.audit.admin_action import Actor
from memory.domain.history.chat_event import MAX_EVENTS_PER_REQUEST, ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition_listing import PARTITION_PAGE_MAX
from memory.domain.history.search import HistoryQuery, SemanticState
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database
from memory.infrastructure.settings import Settings

MODEL = "hash:1024"
ACTOR = Actor("bench", "bench/tenants.py")
MESSAGES_PER_WINDOW = 4
# Windows of one channel start this far apart: their last and first messages are 34 minutes
# apart, more than the 30-minute session gap, so each is a window of its own.
WINDOW_SPACING = timedelta(minutes=35)
SEARCH_LIMIT = 20
STATUS_REPEATS = 20
DEEP = (10, 1_000)  # channels x windows: the throughput baseline
WIDE_CHANNELS = 10_000  # x 1 window
CHANNELS_PER_SMALL_ORG = 10
# The backlog org's channels: 100,000 messages are 250 windows in each, 6 days of them.
BACKLOG_CHANNELS = 100


@dataclass
class Latency:
    samples: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    def text(self, *, p95: bool = True) -> str:
        n = len(self.samples)
        low = " (n=%d)" % n if n < 20 else ""  # noqa: UP031
        if not p95:
            return f"{fmt_ms(self.p50)}{low}"
        return f"{fmt_ms(self.p50)} / {fmt_ms(pct(self.samples, 0.95))}{low}"


def interleaved(
    runs: dict[str, Callable[[str], None]], queries: Sequence[str], budget: float
) -> dict[str, Latency]:
    """Each query through every run in turn, the order rotating, so that a busy machine's
    drift weighs on all of them alike (their ratio is the figure that matters). One warm-up
    query; stops early (at least 3 queries) once all runs together passed `budget` s."""
    for run in runs.values():
        run(queries[0])
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    started = time.perf_counter()
    for i, query in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            t = time.perf_counter()
            runs[name](query)
            samples[name].append((time.perf_counter() - t) * 1000)
        if i >= 2 and time.perf_counter() - started > budget:
            break
    return {name: Latency(values) for name, values in samples.items()}


def fmt_ms(ms: float) -> str:
    return f"{ms / 1000:,.1f} s" if ms >= 10_000 else f"{ms:,.1f} ms"


def measure(run: Callable[[], object], *, count: int, budget: float) -> Latency:
    """`count` timed runs after one warm-up, stopping early (at least 3) past `budget` s. A
    warm-up that alone takes longer than `budget` is the only sample."""
    t = time.perf_counter()
    run()
    first = (time.perf_counter() - t) * 1000
    if first > budget * 1000:
        return Latency([first])
    samples: list[float] = []
    started = time.perf_counter()
    for _ in range(count):
        t = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t) * 1000)
        if len(samples) >= 3 and time.perf_counter() - started > budget:
            break
    return Latency(samples)


# Data ---------------------------------------------------------------------------------------


def windows(
    rng: random.Random, org: str, channels: int, per_channel: int, start: datetime
) -> Iterator[ChatEvent]:
    """`per_channel` closed windows of MESSAGES_PER_WINDOW messages in each channel."""
    for w in range(per_channel):
        base = start + WINDOW_SPACING * w
        for c in range(channels):
            for m in range(MESSAGES_PER_WINDOW):
                yield ChatEvent(
                    event_id=f"{org}-{c}-{w}-{m}",
                    provider="webchat",
                    channel_id=f"S{c:05d}",
                    sender="agent" if m % 2 else "visitor",
                    text=" ".join(rng.choice(WORDS) for _ in range(12)),
                    occurred_at=base + timedelta(seconds=20 * m),
                )


def ingest(runtime: HistoryRuntime, org: str, events: Iterator[ChatEvent], total: int) -> None:
    batch: list[ChatEvent] = []
    with tqdm(total=total, desc=f"ingest {org}", unit="event", leave=False) as bar:
        for event in events:
            batch.append(event)
            if len(batch) == MAX_EVENTS_PER_REQUEST:
                runtime.service.ingest(org, batch)
                bar.update(len(batch))
                batch = []
        if batch:
            runtime.service.ingest(org, batch)
            bar.update(len(batch))


def embedded(database: Database, org: str | None = None) -> int:
    where, params = ("AND org_id = %s", (MODEL, org)) if org else ("", (MODEL,))
    with database.connection() as conn:
        row = conn.execute(
            f"SELECT count(*) AS n FROM dw_message_embeddings WHERE model = %s {where}", params
        ).fetchone()
    assert row is not None
    return int(str(row["n"]))


@dataclass
class Swept:
    windows: int
    expected: int
    seconds: float
    passes: int

    @property
    def rate(self) -> float:
        return self.windows / self.seconds

    def text(self) -> str:
        return f"{self.rate:,.0f} windows/s ({self.windows:,} in {self.passes} passes){self.note()}"

    def note(self) -> str:
        """Empty when every window was embedded; else what the sweep left."""
        if self.windows == self.expected:
            return ""
        return (
            f" (STOPPED at {self.windows:,} of {self.expected:,} windows: passes found nothing due)"
        )


def sweep_all(runtime: HistoryRuntime, database: Database, org: str | None, expected: int) -> Swept:
    """Passes until `expected` windows are embedded (a pass serves bounded slices). Passes
    that embed nothing end it early (3 in a row): the figures say so instead of failing."""
    started, passes, idle = time.perf_counter(), 0, 0
    with tqdm(total=expected, desc=f"sweep {org or 'every org'}", unit="window") as bar:
        done = embedded(database, org)
        while done < expected and idle < 3:
            runtime.service.sweep(org, trigger="bench")
            passes += 1
            now = embedded(database, org)
            bar.update(now - done)
            idle = idle + 1 if now == done else 0
            done = now
    swept = Swept(done, expected, time.perf_counter() - started, passes)
    if swept.note():
        print(f"  sweep of {org or 'every org'}:{swept.note()}", flush=True)
    return swept


# Measurements --------------------------------------------------------------------------------


@dataclass
class OrgFigures:
    label: str
    hybrid: Latency
    full_text: Latency
    knn: Latency
    knn_relevance: Latency
    idle_pass: Latency
    status_page: Latency
    status_whole: Latency
    directory: Latency
    first_sweep: str = "-"
    newcomer: str = "-"

    def row(self) -> str:
        alone = self.full_text.p50 + self.knn.p50
        return (
            f"| {self.label} | {self.hybrid.text()} | {self.full_text.text(p95=False)} |"
            f" {self.knn.text(p95=False)} | {self.hybrid.p50 / alone:.2f} |"
            f" {self.knn_relevance.text(p95=False)} |"
            f" {self.idle_pass.text(p95=False)} | {self.first_sweep} |"
            f" {self.status_page.text(p95=False)} |"
            f" {self.status_whole.text(p95=False)} | {self.directory.text(p95=False)} |"
            f" {self.newcomer} |"
        )


ORG_HEADER = (
    "| org | hybrid p50 / p95 | full-text statement p50 | KNN statement p50 |"
    " hybrid / (full-text + KNN) | search's KNN statement with relevance p50 |"
    " sweep pass, nothing new | first sweep of its windows | status first page p50 |"
    " whole org's status, every page (baseline) | its org directory entry p50 |"
    " a new org's first window behind another org's backlog |"
    "\n|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def measure_org(
    runtime: HistoryRuntime,
    database: Database,
    model: PrecomputedQueries,
    org: str,
    label: str,
    texts: Sequence[str],
    budget: float,
) -> OrgFigures:
    def hybrid(q: str) -> None:
        result = runtime.service.search(org, HistoryQuery(q, limit=SEARCH_LIMIT))
        assert result.semantic is SemanticState.ON, result.semantic

    def full_text(q: str) -> None:
        runtime.events.full_text(org, HistoryQuery(q, limit=SEARCH_LIMIT))

    def knn(q: str) -> None:
        vector = HalfVector(list(model.embed_query(q).values))
        # One round trip, as search's own reads (Database.read, docs/adr/0117).
        database.read(
            lambda conn: conn.execute(
                "SELECT id FROM dw_message_embeddings WHERE org_id = %s AND model = %s"
                " ORDER BY embedding <=> %s LIMIT %s",
                (org, MODEL, vector, SEARCH_LIMIT),
            ).fetchall()
        )

    def knn_relevance(q: str) -> None:
        # The statement search runs (the query's relevance statistics, ADR 0112; since ADR
        # 0155 also the chosen windows' messages), for where hybrid's time goes beyond the
        # bare top-k.
        query = HistoryQuery(q, limit=SEARCH_LIMIT)
        runtime.windows.nearest(org, MODEL, model.embed_query(q), query, k=SEARCH_LIMIT)

    def idle() -> None:
        report = runtime.service.sweep(org, trigger="bench")
        assert report.windows_embedded == 0, report

    def whole_status() -> None:
        cursor = None
        while True:
            page = runtime.service.sweep_status(org, limit=PARTITION_PAGE_MAX, cursor=cursor)
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    print(f"  measuring {label}", flush=True)
    searches = interleaved(
        {"hybrid": hybrid, "full_text": full_text, "knn": knn, "knn_relevance": knn_relevance},
        texts,
        budget,
    )
    return OrgFigures(
        label=label,
        hybrid=searches["hybrid"],
        full_text=searches["full_text"],
        knn=searches["knn"],
        knn_relevance=searches["knn_relevance"],
        idle_pass=measure(idle, count=5, budget=budget),
        status_page=measure(
            lambda: runtime.service.sweep_status(org), count=STATUS_REPEATS, budget=budget
        ),
        status_whole=measure(whole_status, count=3, budget=budget),
        directory=measure(
            lambda: runtime.service.orgs(prefix=org, limit=1), count=STATUS_REPEATS, budget=budget
        ),
    )


def analyze(database: Database) -> None:
    with database.session() as conn:
        conn.execute(
            "ANALYZE dw_chat_events, dw_chat_partitions, dw_message_embeddings, dw_sweep_work"
        )


@contextmanager
def runtime_on(database: Database, model: PrecomputedQueries) -> Iterator[HistoryRuntime]:
    runtime = HistoryRuntime(Settings(), database, model)
    try:
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=ACTOR)
        yield runtime
    finally:
        runtime.close()


def one_org_per_size(
    url: str,
    rng: random.Random,
    model: PrecomputedQueries,
    texts: Sequence[str],
    args: argparse.Namespace,
) -> tuple[list[str], list[str]]:
    """Each size's row is printed as soon as it is measured (a long run shows its figures
    early); the deep org is swept before the largest size, for the throughput ratio."""
    start = datetime.now(UTC) - timedelta(days=26)
    rows, throughput = [], []
    sizes = sorted(set(args.sizes) | ({WIDE_CHANNELS} if args.throughput else set()))
    with opened(url) as database, runtime_on(database, model) as runtime:
        deep_rate = None
        for size in sizes:
            if args.throughput and size == WIDE_CHANNELS:
                deep_rate = sweep_deep(runtime, database, rng, start)
                throughput.append(
                    f"| {DEEP[0]} partitions x {DEEP[1]:,} windows (baseline) |"
                    f" {deep_rate[0]:,.0f} windows/s{deep_rate[2]} | {deep_rate[1]} | 1.00 |"
                )
            org = f"channels-{size}"
            ingest(runtime, org, windows(rng, org, size, 1, start), size * MESSAGES_PER_WINDOW)
            swept = sweep_all(runtime, database, org, size)
            if deep_rate is not None and size == WIDE_CHANNELS:
                throughput.append(
                    f"| {size:,} partitions x 1 window | {swept.rate:,.0f} windows/s"
                    f"{swept.note()} | {swept.passes} | {swept.rate / deep_rate[0]:.2f} |"
                )
                print("\n".join(throughput), flush=True)
            if size not in args.sizes:
                continue
            analyze(database)
            label = f"1 org x {size:,} channel{'' if size == 1 else 's'}"
            figures = measure_org(runtime, database, model, org, label, texts, args.budget)
            figures.first_sweep = swept.text()
            rows.append(figures.row())
            print(rows[-1], flush=True)
    return rows, throughput


def sweep_deep(
    runtime: HistoryRuntime, database: Database, rng: random.Random, start: datetime
) -> tuple[float, int, str]:
    channels, per_channel = DEEP
    org = f"deep-{channels}x{per_channel}"
    total = channels * per_channel
    events = windows(rng, org, channels, per_channel, start)
    ingest(runtime, org, events, total * MESSAGES_PER_WINDOW)
    swept = sweep_all(runtime, database, org, total)
    return swept.rate, swept.passes, swept.note()


def many_orgs(
    url: str,
    rng: random.Random,
    model: PrecomputedQueries,
    texts: Sequence[str],
    args: argparse.Namespace,
) -> tuple[list[str], str, str]:
    """The 1,000 orgs' row, the line on their sweep, and (with `--backlog`) the backlog
    row measured among them."""
    start = datetime.now(UTC) - timedelta(days=26)
    orgs = [f"org-{i:05d}" for i in range(args.orgs)]
    total = args.orgs * CHANNELS_PER_SMALL_ORG
    fair = ""
    with opened(url) as database, runtime_on(database, model) as runtime:
        for org in tqdm(orgs, desc=f"ingest {args.orgs:,} orgs", unit="org"):
            events = list(windows(rng, org, CHANNELS_PER_SMALL_ORG, 1, start))
            runtime.service.ingest(org, events)
        swept = sweep_all(runtime, database, None, total)
        analyze(database)
        org = orgs[len(orgs) // 2]
        label = f"{args.orgs:,} orgs x {CHANNELS_PER_SMALL_ORG} channels (one org's search)"
        figures = measure_org(runtime, database, model, org, label, texts, args.budget)
        figures.first_sweep = f"{swept.text()}, every org"

        def idle_everything() -> None:
            report = runtime.service.sweep(None, trigger="bench")
            assert report.windows_embedded == 0, report

        every = measure(idle_everything, count=5, budget=args.budget)
        if args.backlog:
            waited = newcomer_wait(runtime, database, rng, args, start)
            figures.newcomer = waited.text()
            fair = waited.row(f", {args.orgs:,} other orgs settled")
    sweep_line = (
        f"sweep of {total:,} partitions in {args.orgs:,} orgs (1 window each):"
        f" {swept.rate:,.0f} windows/s in {swept.passes} passes{swept.note()}; a pass over"
        " every org with"
        f" nothing new: {every.text(p95=False)}"
    )
    print(figures.row(), sweep_line, fair, sep="\n", flush=True)
    return [figures.row()], sweep_line, fair


@dataclass
class NewcomerWait:
    """How long a new org's first closed window waited behind another org's backlog."""

    backlog_messages: int
    backlog_windows: int
    interval: float
    waited: float | None
    timeout: float
    behind: int

    def text(self) -> str:
        if self.waited is None:
            return f"not embedded within {self.timeout:.0f} s"
        return f"{self.waited:,.1f} s ({self.waited / self.interval:.1f} sweep intervals)"

    def row(self, where: str = "") -> str:
        return (
            f"| {self.backlog_messages:,} messages ({self.backlog_windows:,} windows) in"
            f" {BACKLOG_CHANNELS} channels{where} | {self.interval:g} s | {self.text()} |"
            f" {self.behind:,} of {self.backlog_windows:,} |"
        )


def newcomer_wait(
    runtime: HistoryRuntime,
    database: Database,
    rng: random.Random,
    args: argparse.Namespace,
    start: datetime,
) -> NewcomerWait:
    """An org of `--backlog` messages swept by a loop of passes every `--interval` s; once
    the loop is into it, a new org ingests one closed window: how long until it is embedded."""
    channels = BACKLOG_CHANNELS
    per_channel = args.backlog // (channels * MESSAGES_PER_WINDOW)
    backlog_windows = channels * per_channel
    events = windows(rng, "backlog", channels, per_channel, start)
    ingest(runtime, "backlog", events, backlog_windows * MESSAGES_PER_WINDOW)
    stop = threading.Event()

    def sweeper() -> None:
        while not stop.is_set():
            runtime.service.sweep(trigger="bench")
            stop.wait(args.interval)

    thread = threading.Thread(target=sweeper, name="bench-sweeper", daemon=True)
    thread.start()
    try:
        while embedded(database, "backlog") == 0:  # the pass is into the backlog
            time.sleep(0.05)
        newcomer = list(windows(rng, "newcomer", 1, 1, start))
        started = time.perf_counter()
        runtime.service.ingest("newcomer", newcomer)
        waited: float | None = None
        while time.perf_counter() - started < args.fairness_timeout:
            if embedded(database, "newcomer"):
                waited = time.perf_counter() - started
                break
            time.sleep(0.05)
        behind = embedded(database, "backlog")
    finally:
        stop.set()
        runtime.service.stop_sweeps()
        thread.join()
    return NewcomerWait(
        args.backlog, backlog_windows, args.interval, waited, args.fairness_timeout, behind
    )


def fairness(
    url: str, rng: random.Random, model: PrecomputedQueries, args: argparse.Namespace
) -> str:
    start = datetime.now(UTC) - timedelta(days=26)
    with opened(url) as database, runtime_on(database, model) as runtime:
        return newcomer_wait(runtime, database, rng, args, start).row()


# Cluster -------------------------------------------------------------------------------------


@contextmanager
def cluster() -> Iterator[Callable[[str], str]]:
    home = Path(tempfile.mkdtemp(prefix="memory-bench-tenants-"))
    home.chmod(0o755)
    pg = EmbeddedPostgres(home, durable=False)
    try:
        base = pg.start()
        yield lambda name: create_database(base, name)
    finally:
        pg.stop()
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def opened(url: str) -> Iterator[Database]:
    database = Database(url, min_size=1, max_size=8)
    database.open()
    try:
        database.migrate()
        yield database
    finally:
        database.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1,100,1000,10000", help="channels in one org ('': skip part 1)"
    )
    parser.add_argument("--orgs", type=int, default=1_000, help="orgs of 10 channels (0: skip)")
    parser.add_argument("--backlog", type=int, default=100_000, help="messages waiting (0: skip)")
    parser.add_argument(
        "--no-lone-backlog",
        dest="lone_backlog",
        action="store_false",
        help="measure the backlog only among the --orgs orgs, not also alone (part 3)",
    )
    parser.add_argument("--interval", type=float, default=2.0, help="s between sweep passes")
    parser.add_argument("--fairness-timeout", type=float, default=300.0)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--budget", type=float, default=20.0, help="s per measurement")
    parser.add_argument(
        "--no-throughput", dest="throughput", action="store_false", help="skip 10k x 1 vs 10 x 1k"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    rng = random.Random(args.seed)
    texts = [" ".join(rng.sample(WORDS, 2)) for _ in range(args.queries)]
    model = PrecomputedQueries(HashEmbeddingModel(1024), texts)
    started = time.perf_counter()
    rows: list[str] = []
    throughput: list[str] = []
    many: list[str] = []
    sweep_line = fair = fair_among = ""
    with cluster() as new_database:
        if args.sizes:
            print("1. one org per size", ORG_HEADER, sep="\n", flush=True)
            rows, throughput = one_org_per_size(
                new_database("tenants_sizes"), rng, model, texts, args
            )
        if args.orgs:
            print(f"2. {args.orgs:,} orgs", flush=True)
            many, sweep_line, fair_among = many_orgs(
                new_database("tenants_orgs"), rng, model, texts, args
            )
        if args.backlog and args.lone_backlog:
            print("3. a new org behind a backlog", flush=True)
            fair = fairness(new_database("tenants_fairness"), rng, model, args)
            print(fair, flush=True)
    print()
    if rows or many:
        print(ORG_HEADER)
        print("\n".join(rows + many))
    if sweep_line:
        print(f"\n{sweep_line}")
    if throughput:
        print("\n| sweep throughput (hash:1024) | windows/s | passes | ratio |\n|---|---|---|---|")
        print("\n".join(throughput))
    if fair or fair_among:
        print(
            "\n| another org's backlog | sweep interval | new org's first window embedded after |"
            " backlog windows embedded by then |\n|---|---|---|---|"
        )
        print("\n".join(line for line in (fair, fair_among) if line))
    print(f"\n(total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
