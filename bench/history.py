"""History search benchmark: ingest, the sweep, and hybrid search.

    .venv/bin/python bench/history.py                        # defaults below
    .venv/bin/python bench/history.py --e5-windows 120 --ingest-events 50000

Starts a private PostgreSQL cluster in a temporary home. Measured:

- ingest throughput over real HTTP (a `memory serve` process on a loopback port), batched,
  against the same events stored through the application without HTTP (the baseline);
- sweep throughput in windows/s against the raw throughput of the same model on the same
  window texts in the same batches (the overhead ratio): the local e5 model on a modest
  number of windows, and `hash:1024` on 10k windows (where the model costs ~nothing, so the
  sweep's own cost shows);
- search p50/p95 at 1k and 10k windows per org (`hash:1024`): full-text only, hybrid with
  the query embedding excluded (query vectors precomputed), and the bare exact-KNN statement.

Every ratio in the table is against a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pgvector import HalfVector
from tqdm import tqdm

from bench_cluster import cluster
from memory.application.embedding import EmbeddingModel, ModelStatus
from memory.application.history.sweep import EMBED_BATCH_WINDOWS
from memory.domain.audit.admin_action import Actor
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.conversation import ChatMessage, render
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.search import HistoryQuery, SemanticState
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.serve_process import served
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.embedding.local_e5 import LocalE5Model
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

SERVER_START_SECONDS = 120
WARMUP_QUERIES = 20
SEARCH_LIMIT = 20
MESSAGES_PER_WINDOW = 3
# Windows of one channel are this far apart (> the 30-minute session gap), and spread over
# enough channels that the newest is still days old (every window is closed).
WINDOW_SPACING = timedelta(minutes=40)
CHANNELS = 50

WORDS = """
access account address agent alarm answer app approve archive arrive attach backup balance bank
bill booking branch broken budget bug build cancel card cart change charge chat check claim
client close code confirm contract cost courier credit customer data deadline delay delete
deliver deposit device discount document download driver email error expire export fee file
fix form fraud invoice issue item key laptop late limit link login lost manager meeting message
mobile monthly network notice office order package paid parcel password payment phone plan
policy portal price printer problem profile receipt refund register reminder renew report
request reset return review salary schedule screen send server service setting shipping sign
slow software status stock subscription support tax team ticket token transfer update upgrade
upload user verify voucher wallet warehouse website weekly wifi window
""".split()  # noqa: SIM905

# The servers the bench starts accept this admin key (MEMORY_ADMIN_TOKEN); the bench sends it.
BENCH_ACTOR = Actor("bench", "bench/history.py")
BENCH_ADMIN_TOKEN = os.environ.get("MEMORY_ADMIN_TOKEN") or "bench-admin-token-0123456789abcdefghij"
AUTH = {"Authorization": f"Bearer {BENCH_ADMIN_TOKEN}"}


@dataclass
class Row:
    name: str
    value: str
    ratio: str = ""
    note: str = ""


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def conversations(
    rng: random.Random,
    org: str,
    windows: int,
    *,
    words: int,
    start: datetime,
    channels: int = CHANNELS,
) -> list[list[ChatEvent]]:
    """`windows` closed conversation windows of MESSAGES_PER_WINDOW messages each, spread
    round-robin over `channels` channels."""
    out = []
    for w in range(windows):
        channel = f"C{w % channels:02d}"
        base = start + WINDOW_SPACING * (w // channels)
        out.append(
            [
                ChatEvent(
                    event_id=f"{org}-{w}-{m}",
                    provider="slack",
                    channel_id=channel,
                    sender=rng.choice(["ali", "mei", "raj", "agent"]),
                    text=sentence(rng, words),
                    occurred_at=base + timedelta(seconds=30 * m),
                )
                for m in range(MESSAGES_PER_WINDOW)
            ]
        )
    return out


def window_text(window: list[ChatEvent]) -> str:
    messages = [ChatMessage(str(e.event_id), e.sender, e.text, e.occurred_at) for e in window]
    return render(messages)


def as_json(e: ChatEvent) -> dict[str, Any]:
    return {
        "event_id": e.event_id,
        "provider": e.provider,
        "channel_id": e.channel_id,
        "sender": e.sender,
        "text": e.text,
        "occurred_at": e.occurred_at.isoformat(),
    }


@contextmanager
def serve(url: str, home: Path) -> Iterator[str]:
    settings = {
        "MEMORY_ADMIN_TOKEN": BENCH_ADMIN_TOKEN,
        "MEMORY_DATABASE_URL": url,
        "MEMORY_HOME": str(home),
        "MEMORY_HISTORY_MODEL": "hash:1024",
        "MEMORY_POLICY_MODEL": "hash:384",
        "MEMORY_LOG_LEVEL": "WARNING",
    }
    log_path = home / "serve.log"
    with served(settings, deadline_seconds=SERVER_START_SECONDS, log_path=log_path) as server:
        yield server.base_url


class PrecomputedQueries:
    """The hash model, with query vectors computed before timing starts: hybrid search
    measured without the query embedding."""

    def __init__(self, inner: EmbeddingModel, queries: Sequence[str]) -> None:
        self._inner = inner
        self._vectors = {q: inner.embed_query(q) for q in queries}

    @property
    def identity(self) -> ModelIdentity:
        return self._inner.identity

    @property
    def max_input_tokens(self) -> int:
        return self._inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> EmbeddingVector:
        return self._vectors[text]

    def status(self) -> ModelStatus:
        return self._inner.status()


class TimedModel:
    """Counts the time the sweep spends inside the model, so that the sweep's own overhead
    is measured on the same run (model speed drifts between runs on a busy machine)."""

    def __init__(self, inner: EmbeddingModel) -> None:
        self._inner = inner
        self.seconds = 0.0

    @property
    def identity(self) -> ModelIdentity:
        return self._inner.identity

    @property
    def max_input_tokens(self) -> int:
        return self._inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)  # the sweep's own work: not model time

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        started = time.perf_counter()
        try:
            return self._inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> EmbeddingVector:
        return self._inner.embed_query(text)

    def status(self) -> ModelStatus:
        return self._inner.status()


def time_batches(model: EmbeddingModel, texts: list[str], desc: str) -> float:
    started = time.perf_counter()
    for i in tqdm(range(0, len(texts), EMBED_BATCH_WINDOWS), desc=desc, leave=False):
        model.embed_documents(texts[i : i + EMBED_BATCH_WINDOWS])
    return time.perf_counter() - started


def bench_ingest(
    url: str, home: Path, database: Database, rng: random.Random, events: int, batch: int
) -> list[Row]:
    windows = events // MESSAGES_PER_WINDOW
    start = datetime.now(UTC) - timedelta(days=20)
    http_events = [
        e for w in conversations(rng, "ingest-http", windows, words=12, start=start) for e in w
    ]
    app_events = [
        e for w in conversations(rng, "ingest-app", windows, words=12, start=start) for e in w
    ]
    with (
        serve(url, home / "serve") as base,
        httpx.Client(base_url=base, timeout=60, headers=AUTH) as client,
    ):
        client.post("/v1/orgs/warmup/chat-events", json={"events": [as_json(http_events[0])]})
        started = time.perf_counter()
        for i in tqdm(range(0, len(http_events), batch), desc="ingest over HTTP"):
            chunk = [as_json(e) for e in http_events[i : i + batch]]
            response = client.post("/v1/orgs/ingest-http/chat-events", json={"events": chunk})
            response.raise_for_status()
        http_seconds = time.perf_counter() - started
    runtime = HistoryRuntime(Settings(), database, HashEmbeddingModel(1024))
    try:
        started = time.perf_counter()
        for i in tqdm(range(0, len(app_events), batch), desc="ingest in process"):
            runtime.service.ingest("ingest-app", app_events[i : i + batch])
        app_seconds = time.perf_counter() - started
    finally:
        runtime.close()
    http_rate = len(http_events) / http_seconds
    app_rate = len(app_events) / app_seconds
    return [
        Row(
            "ingest, in process (baseline)",
            f"{app_rate:,.0f} events/s",
            "1.00",
            f"batches of {batch}",
        ),
        Row(
            "ingest over HTTP",
            f"{http_rate:,.0f} events/s",
            f"{http_rate / app_rate:.2f}",
            f"{len(http_events):,} events, batches of {batch}",
        ),
    ]


def bench_sweep(
    database: Database,
    rng: random.Random,
    label: str,
    model: EmbeddingModel,
    windows: int,
    *,
    words: int,
    channels: int,
) -> list[Row]:
    org = "sweep-" + label.replace(" ", "-")  # an org id has no spaces
    start = datetime.now(UTC) - timedelta(days=20)
    convs = conversations(rng, org, windows, words=words, start=start, channels=channels)
    texts = [window_text(w) for w in convs]
    timed = TimedModel(model)
    runtime = HistoryRuntime(Settings(), database, timed)
    try:
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=BENCH_ACTOR)
        for i in range(0, len(convs), 300):
            runtime.service.ingest(org, [e for w in convs[i : i + 300] for e in w])
        model.embed_documents(texts[:2])  # warm-up
        # The baseline: the model alone on the same texts, in the same batches.
        raw = time_batches(model, texts, f"raw {label}")
        started = time.perf_counter()
        report = runtime.service.sweep(org, trigger="bench")
        sweep_seconds = time.perf_counter() - started
    finally:
        runtime.close()
    assert report.windows_embedded == windows, report
    stored = runtime_contents(database, org)
    assert stored == sorted(texts), "the sweep embedded other texts than the baseline"
    overhead = (sweep_seconds - timed.seconds) / timed.seconds
    # A pass with nothing new: the work state says no partition is due (docs/adr/0089).
    idle_runtime = HistoryRuntime(Settings(), database, model)
    try:
        started = time.perf_counter()
        idle = idle_runtime.service.sweep(org, trigger="bench")
        idle_ms = (time.perf_counter() - started) * 1000
    finally:
        idle_runtime.close()
    return [
        Row(
            f"{label}: model alone (baseline)",
            f"{windows / raw:,.1f} windows/s",
            "1.00",
            f"{windows:,} windows of {MESSAGES_PER_WINDOW} messages in {channels} channels",
        ),
        Row(
            f"{label}: sweep",
            f"{windows / sweep_seconds:,.1f} windows/s",
            f"{raw / sweep_seconds:.2f}",
            f"overhead {overhead:+.1%} of the model's time in the same pass",
        ),
        Row(
            f"{label}: a pass with nothing new",
            f"{idle_ms:.1f} ms",
            "",
            f"visited {idle.partitions} of {channels} partitions",
        ),
    ]


def runtime_contents(database: Database, org: str) -> list[str]:
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT content FROM dw_message_embeddings WHERE org_id = %s ORDER BY content", (org,)
        ).fetchall()
    return [str(r["content"]) for r in rows]


def latency(fn: Callable[[str], object], queries: Sequence[str], desc: str) -> list[float]:
    for q in queries[:WARMUP_QUERIES]:
        fn(q)
    samples = []
    for q in tqdm(queries, desc=desc, leave=False):
        started = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def bench_search(
    database: Database, rng: random.Random, sizes: Sequence[int], queries: int
) -> list[Row]:
    texts = [" ".join(rng.sample(WORDS, 2)) for _ in range(queries)]
    hash_model = HashEmbeddingModel(1024)
    model = PrecomputedQueries(hash_model, texts)
    runtime = HistoryRuntime(Settings(), database, model)
    rows: list[Row] = []
    try:
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=BENCH_ACTOR)
        start = datetime.now(UTC) - timedelta(days=20)
        for size in sizes:
            org = f"search-{size}"
            convs = conversations(rng, org, size, words=12, start=start)
            for i in tqdm(range(0, len(convs), 300), desc=f"load {size:,} windows", leave=False):
                runtime.service.ingest(org, [e for w in convs[i : i + 300] for e in w])
            sweep_started = time.perf_counter()
            report = runtime.service.sweep(org, trigger="bench")
            sweep_seconds = time.perf_counter() - sweep_started
            assert report.windows_embedded == size, report
            with database.connection() as conn:
                conn.execute("ANALYZE dw_message_embeddings")
                conn.execute("ANALYZE dw_chat_events")

            def hybrid(q: str, org: str = org) -> None:
                result = runtime.service.search(org, HistoryQuery(q, limit=SEARCH_LIMIT))
                assert result.semantic is SemanticState.ON

            def knn(q: str, org: str = org) -> None:
                vector = HalfVector(list(model.embed_query(q).values))
                # One round trip, as search's own reads (Database.read, docs/adr/0117).
                database.read(
                    lambda conn: conn.execute(
                        "SELECT id FROM dw_message_embeddings WHERE org_id = %s AND model = %s"
                        " ORDER BY embedding <=> %s LIMIT %s",
                        (org, "hash:1024", vector, SEARCH_LIMIT),
                    ).fetchall()
                )

            hybrid_ms = latency(hybrid, texts, f"hybrid {size:,}")
            knn_ms = latency(knn, texts, f"knn {size:,}")
            runtime.service.set_org_flag(org, SEMANTIC_SEARCH_FLAG, False, actor=BENCH_ACTOR)

            def fts(q: str, org: str = org) -> None:
                result = runtime.service.search(org, HistoryQuery(q, limit=SEARCH_LIMIT))
                assert result.semantic is SemanticState.OFF

            fts_ms = latency(fts, texts, f"fts {size:,}")
            embed_ms = latency(hash_model.embed_query, texts, "query embedding (hash)")
            base = statistics.median(fts_ms)
            together = base + statistics.median(knn_ms)
            hybrid_note = (
                f"{statistics.median(hybrid_ms) / together:.2f}x the full-text search and the"
                " KNN statement together"
            )
            for name, samples, note in (
                ("full-text only (baseline)", fts_ms, ""),
                ("hybrid, query embedding excluded", hybrid_ms, hybrid_note),
                ("exact KNN statement alone", knn_ms, ""),
            ):
                rows.append(
                    Row(
                        f"search @ {size:,} windows/org: {name}",
                        f"p50 {statistics.median(samples):.1f} ms, p95 {pct(samples, 0.95):.1f} ms",
                        f"{statistics.median(samples) / base:.2f}",
                        note,
                    )
                )
            rows.append(
                Row(
                    f"sweep of {size:,} windows (hash:1024)",
                    f"{size / sweep_seconds:,.0f} windows/s",
                    "",
                    f"hash query embedding p50 {statistics.median(embed_ms):.2f} ms",
                )
            )
    finally:
        runtime.close()
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| measurement | result | ratio vs baseline | notes |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {r.value} | {r.ratio} | {r.note} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--e5-windows", type=int, default=60)
    parser.add_argument("--hash-windows", type=int, default=10_000)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[Row] = []
    started = time.perf_counter()
    with cluster("history") as url:
        database = Database(url, min_size=1, max_size=8)
        database.open()
        try:
            database.migrate()
            home = Path(tempfile.mkdtemp(prefix="memory-bench-home-"))
            try:
                rows += bench_ingest(url, home, database, rng, args.ingest_events, args.batch)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            rows += bench_sweep(
                database, rng, "local e5", LocalE5Model(), args.e5_windows, words=40, channels=10
            )
            rows += bench_sweep(
                database,
                rng,
                "hash:1024",
                HashEmbeddingModel(1024),
                args.hash_windows,
                words=12,
                channels=CHANNELS,
            )
            rows += bench_search(database, rng, sizes, args.queries)
        finally:
            database.close()
    print()
    print(table(rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
