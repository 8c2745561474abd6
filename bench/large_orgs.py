"""Large orgs benchmark: history search past the exact scan, and policy recall at 100k.

    .venv/bin/python bench/large_orgs.py                           # defaults below
    .venv/bin/python bench/large_orgs.py --windows 1000,10000 --policies 10000

Starts a private PostgreSQL cluster in a temporary home and bulk-loads vectors with COPY
(no model, no sweep), so 100,000 windows and 100,000 policies load in minutes.

Vectors: clustered synthetic vectors whose similarity distribution is calibrated on the
bundled model's (multilingual-e5-small on the precision set, docs/adr/0134): a direction
every text shares (e5's scores crowd into 0.7-1.0), a topic, a sub-topic and noise. Queries
come from the same process. History windows are 1024 dimensions (bge-m3's size), a quarter
of them Han (a script group of their own, docs/adr/0112); policies are 384.

Measured, each path side by side in the same run:

- history, per org size: the semantic leg (`PostgresWindowEmbeddings.nearest`) on the exact
  scan (the baseline) and on the org's partial HNSW index, p50/p95 and recall@10 against the
  exact scan's answer; hybrid search (full-text + semantic + messages, query embedding
  excluded) on each path, with the org's tail empty and full (docs/adr/0153); the index's
  build time; sweep throughput of new windows into the org with its index kept (its tail
  merged by the builder's merge loop beside the sweep, and the wait for it timed) against a
  twin org of the same size without one, in rounds of alternating order; the upsert alone
  into the org's tail, into its graph and into the twin, and the merge per window;
  migration 0223's btrees' write cost (the twin's upsert with and without them);
- policies, per size: `PostgresPolicyReadModel.search` on the exact scan (the baseline) and
  on HNSW at several `ef_search`, unfiltered and with a tag filter that keeps 1%, p50/p95
  and recall@10 against exact.

Every ratio is against the exact path measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from pgvector import HalfVector
from psycopg.types.json import Jsonb

from bench_cluster import cluster
from memory.application.embedding import ModelStatus
from memory.application.history.ports import EmbeddedWindow
from memory.domain.audit.admin_action import Actor
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.conversation import ChatMessage, ConversationWindow, WindowClosure
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.domain.history.search import HistoryQuery, SemanticState
from memory.domain.history.search_path import HistorySearchMode
from memory.domain.policy.filters import SearchFilter, TagMatch, TagMode
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.search import SearchRequest
from memory.domain.policy.threshold import SimilarityThreshold
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.workers.history_indexes import MERGE_POLL_SECONDS
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.history import embeddings
from memory.infrastructure.history.embeddings import PostgresWindowEmbeddings
from memory.infrastructure.history.search_indexes import (
    MERGE_BATCH,
    TAIL_WINDOWS,
    PostgresWindowIndexes,
)
from memory.infrastructure.policy import read_model
from memory.infrastructure.policy.indexes import drop_hnsw_index, ensure_hnsw_index
from memory.infrastructure.policy.read_model import PostgresPolicyReadModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

HISTORY_MODEL = "hash:1024"
HISTORY_DIMS = 1024
POLICY_MODEL = "bench:384"
POLICY_DIMS = 384
SEARCH_LIMIT = 20
RECALL_K = 10
WARMUP_QUERIES = 10
MESSAGES_PER_WINDOW = 3
HAN_SHARE = 0.25
RARE_TAG = "rare"
RARE_SHARE = 0.01
SWEEP_WINDOWS = 1000
SWEEP_SPACING = timedelta(minutes=40)
POLICY_EF_SEARCH = (100, 150, 200, 400)
SEARCH_FILTERS = {
    "unfiltered": SearchFilter(),
    "tag filter keeping 1%": SearchFilter(tags=TagMatch(TagMode.ANY, (RARE_TAG,))),
}
# Each policy size's query vectors (drawn once per size).
QUERIES_CACHE: dict[int, np.ndarray] = {}
BENCH_ACTOR = Actor("bench", "bench/large_orgs.py")
WORDS = [
    "leave",
    "claim",
    "laptop",
    "password",
    "payroll",
    "invoice",
    "meeting",
    "deadline",
    "budget",
    "contract",
    "travel",
    "expense",
    "badge",
    "office",
    "printer",
    "vpn",
    "account",
    "refund",
    "holiday",
    "overtime",
    "training",
    "audit",
]


class ClusteredVectors:
    """Unit vectors `sqrt(a)*common + sqrt(b)*topic + sqrt(c)*jitter + sqrt(d)*noise`,
    normalised. Topics and jitter live in one 32-dimension subspace, so topics overlap by
    degrees as real ones do; the noise is full-dimensional. The weights were fitted to the
    bundled model's figures on the precision set (202 documents, 80 queries): per-query mean
    similarity 0.785 (here 0.80), spread 0.026 (0.027), best hit 3.3 spreads above the mean
    (3.4), tenth 1.7 (1.6), a document's nearest neighbour 0.90 (0.90); docs/adr/0134."""

    COMMON = 0.79
    TOPIC = 0.09
    JITTER = 0.05
    SUBSPACE = 32
    DOCUMENTS_PER_TOPIC = 50

    def __init__(self, dims: int, documents: int, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self.dims = dims
        self._common = self._unit(1, dims)[0]
        self._basis = self._unit(self.SUBSPACE, dims)
        topics = max(60, documents // self.DOCUMENTS_PER_TOPIC)
        self._topics = self._in_subspace(topics)

    def _unit(self, n: int, dims: int) -> np.ndarray:
        v = self._rng.standard_normal((n, dims)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def _in_subspace(self, n: int) -> np.ndarray:
        v = self._unit(n, self.SUBSPACE) @ self._basis
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def sample(self, n: int) -> np.ndarray:
        topic = self._topics[self._rng.integers(0, len(self._topics), n)]
        noise = 1.0 - self.COMMON - self.TOPIC - self.JITTER
        v = (
            np.sqrt(self.COMMON) * self._common
            + np.sqrt(self.TOPIC) * topic
            + np.sqrt(self.JITTER) * self._in_subspace(n)
            + np.sqrt(noise) * self._unit(n, self.dims)
        )
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float16)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Row:
    name: str
    value: str
    ratio: str = ""
    note: str = ""


def latency(fn: Callable[[int], object], queries: int) -> list[float]:
    for i in range(min(WARMUP_QUERIES, queries)):
        fn(i)
    samples = []
    for i in range(queries):
        started = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def timing(samples: Sequence[float]) -> str:
    return f"p50 {statistics.median(samples):.1f} ms, p95 {pct(samples, 0.95):.1f} ms"


def recall(found: Sequence[Sequence[Any]], truth: Sequence[Sequence[Any]]) -> float:
    hits = sum(
        len(set(f[:RECALL_K]) & set(t[:RECALL_K])) for f, t in zip(found, truth, strict=True)
    )
    return hits / max(1, sum(min(RECALL_K, len(t)) for t in truth))


# -- history -------------------------------------------------------------------------------


class QueryVectors:
    """`hash:1024` for documents (the sweep's write cost is measured with it: the model
    costs ~nothing, so the sweep's own cost shows), with query vectors drawn from the
    clustered set before timing: hybrid search measured without the query embedding."""

    def __init__(self, vectors: np.ndarray) -> None:
        self._documents = HashEmbeddingModel(HISTORY_DIMS)
        self._vectors = {f"q{i} {WORDS[i % len(WORDS)]}": v for i, v in enumerate(vectors)}
        self.texts = list(self._vectors)

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(HISTORY_MODEL, HISTORY_DIMS)

    @property
    def max_input_tokens(self) -> int:
        return 512

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        return self._documents.embed_documents(texts)

    def embed_query(self, text: str) -> EmbeddingVector:
        return EmbeddingVector(tuple(float(x) for x in self._vectors[text]))

    def status(self) -> ModelStatus:
        return ModelStatus(HISTORY_MODEL, HISTORY_DIMS, available=True)


def load_windows(
    database: Database,
    org: str,
    vectors: np.ndarray,
    start: datetime,
    *,
    first: int = 0,
    embedded: bool = True,
) -> list[EmbeddedWindow]:
    """COPY `len(vectors)` windows of three messages into one org over 20 channels: the
    messages always, the windows' rows only when `embedded` (else the caller upserts them)."""
    rng = np.random.default_rng(len(vectors) + first)
    han = rng.random(len(vectors)) < HAN_SHARE
    windows: list[EmbeddedWindow] = []
    for n, v in enumerate(vectors):
        i = first + n
        at = start + timedelta(minutes=i)
        text = (
            "\u5047\u671f" * 10
            if han[n]
            else " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6))
        )
        messages = tuple(
            ChatMessage(f"{org}-w{i}-m{m}", f"u{m}", f"{text} {i}", at + timedelta(seconds=m))
            for m in range(MESSAGES_PER_WINDOW)
        )
        windows.append(
            EmbeddedWindow(
                id=uuid.uuid5(uuid.NAMESPACE_URL, f"{org}/{i}"),
                partition=Partition(org, "slack", f"c{i % 20}"),
                window=ConversationWindow(messages, WindowClosure.GAP),
                vector=EmbeddingVector(tuple(float(x) for x in v)) if not embedded else _NO_VECTOR,
            )
        )
    with database.connection() as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY dw_chat_events (org_id, event_id, provider, external_channel_id, sender,"
            " event_type, decision, message_text, occurred_at) FROM STDIN"
        ) as copy:
            for w in windows:
                for m in w.window.messages:
                    copy.write_row(
                        (
                            org,
                            m.event_id,
                            "slack",
                            w.partition.channel_id,
                            m.sender,
                            "message",
                            "allow",
                            m.text,
                            m.occurred_at,
                        )
                    )
        if embedded:
            with cur.copy(
                "COPY dw_message_embeddings (id, org_id, provider, external_channel_id,"
                " model, embedding, content, source_event_ids, first_occurred_at,"
                " last_occurred_at, script_group) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(
                    [
                        "uuid",
                        "text",
                        "text",
                        "text",
                        "text",
                        "halfvec",
                        "text",
                        "text[]",
                        "timestamptz",
                        "timestamptz",
                        "text",
                    ]
                )
                for w, v, is_han in zip(windows, vectors, han, strict=True):
                    copy.write_row(
                        (
                            w.id,
                            org,
                            "slack",
                            w.partition.channel_id,
                            HISTORY_MODEL,
                            HalfVector(v),
                            w.window.content,
                            list(w.window.event_ids),
                            w.window.first.occurred_at,
                            w.window.last.occurred_at,
                            "han" if is_han else "other",
                        )
                    )
    with database.connection() as conn:
        conn.execute("ANALYZE dw_message_embeddings")
        conn.execute("ANALYZE dw_chat_events")
    return windows


_NO_VECTOR = EmbeddingVector((0.0,))


def semantic_leg(
    windows: PostgresWindowEmbeddings, org: str, model: QueryVectors
) -> tuple[list[float], list[list[uuid.UUID]]]:
    """The KNN statement alone (`nearest`), as search calls it."""
    vectors = [model.embed_query(text) for text in model.texts]
    found: dict[int, list[uuid.UUID]] = {}

    def one(i: int) -> None:
        query = HistoryQuery(model.texts[i], limit=SEARCH_LIMIT)
        matches = windows.nearest(org, HISTORY_MODEL, vectors[i], query, SEARCH_LIMIT)
        found[i] = [m.window_id for m in matches]

    samples = latency(one, len(vectors))
    return samples, [found[i] for i in range(len(vectors))]


def hybrid(runtime: HistoryRuntime, org: str, texts: Sequence[str]) -> list[float]:
    def one(i: int) -> None:
        result = runtime.service.search(org, HistoryQuery(texts[i], limit=SEARCH_LIMIT))
        assert result.semantic is SemanticState.ON, result.semantic

    return latency(one, len(texts))


def new_messages(org: str, tag: str, windows: int, start: datetime) -> list[ChatEvent]:
    """`windows` closed windows of new messages in 10 channels of their own."""
    return [
        ChatEvent(
            event_id=f"{org}-{tag}-{w}-{m}",
            provider="slack",
            channel_id=f"{tag}-{w % 10}",
            sender=f"u{m}",
            text=" ".join(WORDS[(w * 5 + m * 3 + j) % len(WORDS)] for j in range(12)),
            occurred_at=start + SWEEP_SPACING * (w // 10) + timedelta(seconds=30 * m),
        )
        for w in range(windows)
        for m in range(MESSAGES_PER_WINDOW)
    ]


def sweep_seconds(runtime: HistoryRuntime, org: str, tag: str, windows: int) -> float:
    """Seconds of one sweep pass over `windows` new windows of the org."""
    start = datetime.now(UTC) - timedelta(days=10)
    events = new_messages(org, tag, windows, start)
    for i in range(0, len(events), 900):
        runtime.service.ingest(org, events[i : i + 900])
    started = time.perf_counter()
    report = runtime.service.sweep(org, trigger="bench")
    seconds = time.perf_counter() - started
    assert report.windows_embedded == windows, report
    return seconds


def upsert_ms_per_window(
    database: Database, org: str, vectors: np.ndarray, start: datetime, first: int
) -> float:
    """Milliseconds per window of writing new windows as the sweep does (batches of 16, one
    `upsert` each), without the rest of the sweep: what the index adds shows alone."""
    windows = load_windows(database, org, vectors, start, first=first, embedded=False)
    store = PostgresWindowEmbeddings(database)
    started = time.perf_counter()
    for i in range(0, len(windows), 16):
        store.upsert(HISTORY_MODEL, windows[i : i + 16])
    return (time.perf_counter() - started) * 1000 / len(windows)


class Merger:
    """The index builder's merge loop (memory.entrypoints.workers.history_indexes), in a
    thread beside the sweep as `memory serve` runs it: a batch at a time, looking again
    every MERGE_POLL_SECONDS when no tail waits (docs/adr/0153)."""

    def __init__(self, indexes: PostgresWindowIndexes) -> None:
        self._indexes = indexes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-merger", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._indexes.merge_pending() < MERGE_BATCH:
                self._stop.wait(MERGE_POLL_SECONDS)

    def __enter__(self) -> Merger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def drained_seconds(indexes: PostgresWindowIndexes) -> float:
    """Seconds until the tails are empty (the merger merging them)."""
    started = time.perf_counter()
    while indexes.pending():
        time.sleep(0.05)
    return time.perf_counter() - started


def merge_ms_per_window(indexes: PostgresWindowIndexes) -> float:
    """Milliseconds per window of merging every tail into its index, batch after batch."""
    windows = 0
    started = time.perf_counter()
    while merged := indexes.merge_pending():
        windows += merged
    return (time.perf_counter() - started) * 1000 / max(1, windows)


@dataclass(frozen=True)
class SweepRounds:
    """Seconds per round of sweeping the same number of new windows into the org with its
    index and into its twin without one (today's sweep), and how long the merger took after
    each of the org's passes to empty its tail."""

    kept: list[float]
    plain: list[float]
    drain: list[float]

    @property
    def ratios(self) -> list[float]:
        """Throughput with the index kept over today's, per round."""
        return [p / k for k, p in zip(self.kept, self.plain, strict=True)]

    @property
    def merged_ratios(self) -> list[float]:
        """The same, counting the wait until the org's tail was merged into its index."""
        return [p / (k + d) for k, p, d in zip(self.kept, self.plain, self.drain, strict=True)]


def sweep_rounds(
    runtime: HistoryRuntime,
    indexes: PostgresWindowIndexes,
    org: str,
    twin: str,
    windows: int,
    rounds: int,
) -> SweepRounds:
    """`rounds` rounds of one pass of `windows` new windows into each org, in alternating
    order (indexed first, then its twin first, ...), so that a change in the machine's load or
    in what the previous pass left weighs on both alike. The merger runs throughout; after
    the org's pass the round waits until its tail is merged (timed), so that each round
    starts with an empty tail."""
    kept: list[float] = []
    plain: list[float] = []
    drain: list[float] = []
    with Merger(indexes):
        for r in range(rounds):
            sides = [(org, kept), (twin, plain)]
            for name, seconds in sides if r % 2 == 0 else sides[::-1]:
                seconds.append(sweep_seconds(runtime, name, f"r{r}", windows))
                if name == org:
                    drain.append(drained_seconds(indexes))
    return SweepRounds(kept, plain, drain)


# Migration 0223's btrees (docs/adr/0138, 0139), written by every upsert; before it the
# table had (org_id, model, id) in their place.
BTREES_0223 = {
    "dw_message_embeddings_org_model_group_id_idx": "(org_id, model, script_group, id)",
    "dw_message_embeddings_org_model_group_idx": "(org_id, model, script_group)",
    "dw_message_embeddings_org_model_channel_idx": "(org_id, model, external_channel_id)",
    "dw_message_embeddings_org_model_last_idx": "(org_id, model, last_occurred_at)",
}


@contextmanager
def without_0223_btrees(database: Database) -> Iterator[None]:
    """The table as before migration 0223: its four btrees replaced by (org_id, model, id)."""
    with database.connection() as conn:
        for name in BTREES_0223:
            conn.execute(f"DROP INDEX {name}")
        conn.execute(
            "CREATE INDEX bench_org_model_id_idx ON dw_message_embeddings (org_id, model, id)"
        )
    try:
        yield
    finally:
        with database.connection() as conn:
            conn.execute("DROP INDEX bench_org_model_id_idx")
            for name, columns in BTREES_0223.items():
                conn.execute(f"CREATE INDEX {name} ON dw_message_embeddings {columns}")


@contextmanager
def tail_closed() -> Iterator[None]:
    """The sweep writes into the graph as before ADR 0153 (no tail has room)."""
    saved = embeddings.TAIL_WINDOWS
    embeddings.TAIL_WINDOWS = 0
    try:
        yield
    finally:
        embeddings.TAIL_WINDOWS = saved


def bench_history(
    database: Database, size: int, queries: int, seed: int, rounds: int = 4
) -> list[Row]:
    gen = ClusteredVectors(HISTORY_DIMS, size, seed)
    org = f"org-{size}"
    # The same size without an index: today's sweep, measured beside the org's.
    twin = f"twin-{size}"
    start = datetime.now(UTC) - timedelta(days=20)
    load_started = time.perf_counter()
    load_windows(database, org, gen.sample(size), start)
    load_seconds = time.perf_counter() - load_started
    load_windows(database, twin, gen.sample(size), start)
    model = QueryVectors(gen.sample(queries))
    writes = min(SWEEP_WINDOWS, max(size // 10, 100))
    exact_runtime = HistoryRuntime(
        Settings(history_search_mode=HistorySearchMode.EXACT), database, model
    )
    index_runtime = HistoryRuntime(
        Settings(history_search_mode=HistorySearchMode.APPROXIMATE), database, model
    )
    numbers = iter(range(size * 2, size * 100, writes))  # window numbers (ids) of their own

    def upsert(name: str, count: int = writes) -> float:
        return upsert_ms_per_window(database, name, gen.sample(count), start, next(numbers))

    try:
        exact_runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=BENCH_ACTOR)
        for name in (org, twin):  # the first pass loads what it needs
            sweep_seconds(exact_runtime, name, "warm-up", 20)
        indexes = PostgresWindowIndexes(database)
        indexes.request(org, HISTORY_MODEL, size)
        built = indexes.build_next()
        assert built is not None and built.org_id == org, built
        swept = sweep_rounds(exact_runtime, indexes, org, twin, writes, rounds)
        # The upsert alone, alternating: into the org's tail (then merged, timed), into its
        # graph (the tail closed, as before ADR 0153), into the twin.
        upserts: dict[str, list[float]] = {"tail": [], "graph": [], "twin": [], "merge": []}
        for r in range(rounds):
            for side in ("tail", "graph", "twin") if r % 2 == 0 else ("twin", "graph", "tail"):
                if side == "graph":
                    with tail_closed():
                        upserts[side].append(upsert(org))
                else:
                    upserts[side].append(upsert(twin if side == "twin" else org))
                if side == "tail":
                    upserts["merge"].append(merge_ms_per_window(indexes))
        # Migration 0223's btrees' write cost: the twin's upsert without them, alternating
        # with the twin's upsert with them.
        btrees: dict[str, list[float]] = {"with": [], "without": []}
        for r in range(rounds):
            for side in ("with", "without") if r % 2 == 0 else ("without", "with"):
                if side == "without":
                    with without_0223_btrees(database):
                        btrees[side].append(upsert(twin))
                else:
                    btrees[side].append(upsert(twin))
        with database.connection() as conn:
            conn.execute("ANALYZE dw_message_embeddings")
        exact_ms, truth = semantic_leg(exact_runtime.windows, org, model)
        index_ms, found = semantic_leg(index_runtime.windows, org, model)
        hybrid_exact = hybrid(exact_runtime, org, model.texts)
        hybrid_index = hybrid(index_runtime, org, model.texts)
        # The same searches with the org's tail full (no merger): the worst case of the
        # exact scan beside the walk.
        upsert(org, TAIL_WINDOWS)
        tail = indexes.pending()
        _, tail_truth = semantic_leg(exact_runtime.windows, org, model)
        tail_ms, tail_found = semantic_leg(index_runtime.windows, org, model)
        tail_hybrid = hybrid(index_runtime, org, model.texts)
    finally:
        exact_runtime.close()
        index_runtime.close()
    total = size + 2 * rounds * writes + 20
    tail_ms_w, graph_ms, plain_ms = (
        statistics.median(upserts[side]) for side in ("tail", "graph", "twin")
    )
    merge_ms = statistics.median(upserts["merge"])
    with_ms, without_ms = statistics.median(btrees["with"]), statistics.median(btrees["without"])
    exact_p50 = statistics.median(exact_ms)
    return [
        Row(
            f"history @ {total:,} windows: semantic leg, exact scan (baseline)",
            timing(exact_ms),
            "1.00",
            f"{size:,} windows loaded in {load_seconds:.0f} s",
        ),
        Row(
            f"history @ {total:,} windows: semantic leg, the org's HNSW index",
            timing(index_ms),
            f"{statistics.median(index_ms) / exact_p50:.2f}",
            f"recall@10 {recall(found, truth):.3f}; index built in {built.seconds:.1f} s",
        ),
        Row(
            f"history @ {total:,} windows: hybrid, query embedding excluded, exact scan",
            timing(hybrid_exact),
            f"{statistics.median(hybrid_exact) / exact_p50:.2f}",
        ),
        Row(
            f"history @ {total:,} windows: hybrid, query embedding excluded, HNSW",
            timing(hybrid_index),
            f"{statistics.median(hybrid_index) / exact_p50:.2f}",
            f"{statistics.median(hybrid_index) / statistics.median(hybrid_exact):.2f}x"
            " the exact hybrid",
        ),
        Row(
            f"history @ {total:,} windows: semantic leg, HNSW with a full tail",
            timing(tail_ms),
            f"{statistics.median(tail_ms) / exact_p50:.2f}",
            f"recall@10 {recall(tail_found, tail_truth):.3f} ({tail:,} windows in the tail,"
            " scanned exactly beside the walk)",
        ),
        Row(
            f"history @ {total:,} windows: hybrid, query embedding excluded, HNSW with a full tail",
            timing(tail_hybrid),
            f"{statistics.median(tail_hybrid) / exact_p50:.2f}",
            f"{statistics.median(tail_hybrid) / statistics.median(hybrid_index):.2f}x the"
            " hybrid with an empty tail",
        ),
        Row(
            f"history @ {total:,} windows: sweep of {writes:,} new windows x {rounds} rounds,"
            " index kept (new windows into the tail, merged beside the sweep)",
            f"{rounds * writes / sum(swept.kept):,.1f} windows/s",
            f"{statistics.median(swept.ratios):.2f}",
            "median of the rounds' ratios to the same sweep into an org of the same size"
            f" without an index ({rounds * writes / sum(swept.plain):,.1f} windows/s); per"
            f" round {', '.join(f'{x:.2f}' for x in swept.ratios)} (hash:1024, the sweep's own"
            " cost); counting the wait until the tail was merged: median"
            f" {statistics.median(swept.merged_ratios):.2f} (merged"
            f" {', '.join(f'{d:.1f}' for d in swept.drain)} s after each pass)",
        ),
        Row(
            f"history @ {total:,} windows: upsert alone, {writes:,} new windows in batches of"
            " 16, into the org's tail",
            f"{tail_ms_w:.2f} ms/window",
            f"{plain_ms / tail_ms_w:.2f}",
            f"into the twin without an index: {plain_ms:.2f} ms/window; into the org's graph"
            f" (tail closed, as before ADR 0153): {graph_ms:.2f} ms/window"
            f" ({plain_ms / graph_ms:.2f}); the merge afterwards {merge_ms:.2f} ms/window"
            f" (medians of {rounds} rounds)",
        ),
        Row(
            f"history @ {total:,} windows: upsert alone into the twin, migration 0223's four"
            " btrees",
            f"{with_ms:.2f} ms/window",
            f"{without_ms / with_ms:.2f}",
            f"without them ((org_id, model, id) in their place): {without_ms:.2f} ms/window;"
            f" they add {with_ms - without_ms:.2f} ms/window (medians of {rounds} rounds)",
        ),
    ]


# -- policies ------------------------------------------------------------------------------


def load_policies(database: Database, vectors: np.ndarray) -> None:
    rng = np.random.default_rng(len(vectors))
    rare = rng.random(len(vectors)) < RARE_SHARE
    now = datetime.now(UTC)
    with database.connection() as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY policy_embeddings (embedding_ref, model, policy_id, version, embedding,"
            " source, tags, metadata, content, content_sha256, created_at, updated_at,"
            " namespace) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                [
                    "uuid",
                    "text",
                    "text",
                    "int4",
                    "halfvec",
                    "text",
                    "text[]",
                    "jsonb",
                    "text",
                    "text",
                    "timestamptz",
                    "timestamptz",
                    "text",
                ]
            )
            for i, v in enumerate(vectors):
                copy.write_row(
                    (
                        uuid.uuid5(uuid.NAMESPACE_URL, f"policy/{len(vectors)}/{i}"),
                        POLICY_MODEL,
                        f"p{len(vectors)}-{i}",
                        1,
                        HalfVector(v),
                        "bench",
                        [RARE_TAG] if rare[i] else ["common"],
                        Jsonb({}),
                        f"policy {i}",
                        "-",
                        now,
                        now,
                        "global",
                    )
                )
        ensure_hnsw_index(conn, POLICY_MODEL)
        conn.execute("ANALYZE policy_embeddings")


def policy_search(
    read_model: PostgresPolicyReadModel, queries: np.ndarray, search_filter: SearchFilter
) -> tuple[list[float], list[list[uuid.UUID]]]:
    vectors = [EmbeddingVector(tuple(float(x) for x in q)) for q in queries]
    request = SearchRequest(
        "q", SimilarityThreshold(0.0), PageRequest(limit=RECALL_K), search_filter
    )
    found: dict[int, list[uuid.UUID]] = {}

    def one(i: int) -> None:
        rows = read_model.search(vectors[i], request, None, 10.0)
        found[i] = [r.embedding_ref for r in rows.results]

    samples = latency(one, len(vectors))
    return samples, [found[i] for i in range(len(vectors))]


@contextmanager
def walking_filtered_searches() -> Iterator[None]:
    """Filtered searches walk the graph whatever the planner expects them to keep."""
    saved = read_model.EXACT_FILTERED_ROWS
    read_model.EXACT_FILTERED_ROWS = -1
    try:
        yield
    finally:
        read_model.EXACT_FILTERED_ROWS = saved


def policy_row(
    size: int,
    name: str,
    hnsw: PostgresPolicyReadModel,
    exact_ms: list[float],
    truth: list[list[uuid.UUID]],
) -> Row:
    samples, found = policy_search(hnsw, QUERIES_CACHE[size], SEARCH_FILTERS[name.split(":")[0]])
    return Row(
        f"policies @ {size:,}, {name}",
        timing(samples),
        f"{statistics.median(samples) / statistics.median(exact_ms):.2f}",
        f"recall@10 {recall(found, truth):.3f}",
    )


def bench_policies(database: Database, size: int, queries: int, seed: int) -> list[Row]:
    gen = ClusteredVectors(POLICY_DIMS, size, seed)
    with database.connection() as conn:
        conn.execute("TRUNCATE policy_embeddings")
        # Loaded without the graph, then built in one pass (as `reembed` does).
        drop_hnsw_index(conn, POLICY_MODEL)
    started = time.perf_counter()
    load_policies(database, gen.sample(size))
    load_seconds = time.perf_counter() - started
    query_vectors = gen.sample(queries)
    QUERIES_CACHE[size] = query_vectors
    rows: list[Row] = []
    for name, search_filter in SEARCH_FILTERS.items():
        exact = PostgresPolicyReadModel(database, POLICY_MODEL, mode="exact")
        exact_ms, truth = policy_search(exact, query_vectors, search_filter)
        rows.append(
            Row(
                f"policies @ {size:,}, {name}: exact scan (baseline)",
                timing(exact_ms),
                "1.00",
                f"loaded and indexed in {load_seconds:.0f} s",
            )
        )
        for ef in POLICY_EF_SEARCH:
            hnsw = PostgresPolicyReadModel(database, POLICY_MODEL, mode="hnsw", ef_search=ef)
            rows.append(policy_row(size, f"{name}: HNSW, ef_search {ef}", hnsw, exact_ms, truth))
        if search_filter != SearchFilter():
            # The same searches made to walk the graph, as before docs/adr/0135.
            with walking_filtered_searches():
                for ef in POLICY_EF_SEARCH:
                    hnsw = PostgresPolicyReadModel(
                        database, POLICY_MODEL, mode="hnsw", ef_search=ef
                    )
                    rows.append(
                        policy_row(
                            size,
                            f"{name}: graph walk forced, ef_search {ef}",
                            hnsw,
                            exact_ms,
                            truth,
                        )
                    )
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| measurement | result | ratio vs exact | notes |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {r.value} | {r.ratio} | {r.note} |" for r in rows]
    return "\n".join(lines)


def shown(rows: list[Row]) -> list[Row]:
    """Each size's rows as soon as they are measured (a 100k run takes a while)."""
    print(table(rows), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="1000,10000,100000", help="org sizes")
    parser.add_argument("--policies", default="10000,100000", help="policy counts")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--sweep-rounds", type=int, default=4, help="sweep rounds, org and twin alternating"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.windows.split(",") if s]
    policies = [int(s) for s in args.policies.split(",") if s]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows: list[Row] = []
    started = time.perf_counter()
    with cluster("large_orgs") as url:
        database = Database(url, min_size=1, max_size=8)
        database.open()
        try:
            database.migrate()
            for size in sizes:
                rows += shown(
                    bench_history(database, size, args.queries, args.seed, args.sweep_rounds)
                )
            for size in policies:
                rows += shown(bench_policies(database, size, args.queries, args.seed))
        finally:
            database.close()
    print()
    print(table(rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs;")
    print(f" before: {uptime};")
    print(f" after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
