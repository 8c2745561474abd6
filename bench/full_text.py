"""Full-text search for Chinese: quality and cost of segmentations, measured in one run.

    .venv/bin/python bench/full_text.py                 # defaults below
    .venv/bin/python bench/full_text.py --windows 2000  # quicker

Starts a private PostgreSQL cluster in a temporary home. Variants, each stored in its own org
of the same table and asked through the same kind of statement:

- `today`: PostgreSQL's parser alone (`to_tsvector('simple', text)`), asked with the
  statement search used before (`plainto_tsquery('simple', q)`, `ts_rank`): the baseline;
- `bigrams, run = phrase`: CJK runs cut into overlapping bigrams at ingest; each CJK run
  of the query one phrase of bigrams;
- `jieba`: the jieba dictionary segmenter on CJK runs (search mode at ingest, precise mode
  for the query, the query's words all required);
- `memory: bigrams, jieba-cut query`: what ingest and search do now (docs/adr/0050): the
  bigram index, and the query's CJK runs cut into words by jieba, each word a phrase.

All but `today` go through `PostgresChatEventLog` (the statement search uses).

Measured:

- on the hand-written evaluation set (bench/data/full_text_eval.py): recall@10 of keyword
  queries (each (message, keyword) pair: is the message in the first 10?), precision of the
  first 10 for short (<= 2 characters) Chinese queries, and what one-character queries return;
- ingest throughput of each variant against `today` (same events, batches interleaved so
  machine drift hits all variants alike), for chat mixing Chinese, rojak and Latin messages
  and for Latin-only chat;
- full-text query p50/p95 at N windows (3 messages each) per org, against `today`.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cluster import cluster
from data.full_text_eval import CHINESE, LATIN, ONE_CHARACTER, ROJAK, TRAPS
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.full_text import (
    _CJK_RUN,
    CJK_BIGRAMS,
    WHOLE_RUNS,
    FullTextQuery,
    Segmentation,
    WordSplitter,
    has_cjk,
)
from memory.domain.history.search import HistoryQuery
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.history.chinese_words import jieba_words
from memory.infrastructure.postgres.database import Database

TOP = 10
WARMUP_QUERIES = 20
SEARCH_LIMIT = 20
MESSAGES_PER_WINDOW = 3
LATIN_WORDS = """
access account address agent alarm answer app approve archive arrive attach backup balance bank
bill booking branch broken budget bug build cancel card cart change charge chat check claim
client close code confirm contract cost courier credit customer data deadline delay delete
deliver deposit device discount document download driver email error expire export fee file
fix form fraud invoice issue item key laptop late limit link login lost manager meeting message
""".split()  # noqa: SIM905

# The statement full-text search ran before Chinese segmentation (the baseline).
TODAY_STATEMENT = """
SELECT event_id FROM dw_chat_events, plainto_tsquery('simple', %(q)s) AS q
WHERE org_id = %(org_id)s AND search_tsv @@ q
ORDER BY ts_rank(search_tsv, q) DESC, occurred_at DESC, event_id
LIMIT %(limit)s
"""

Labelled = list[tuple[str, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class JiebaSegmentation(Segmentation):
    """jieba's words for CJK runs (search mode, which adds the shorter words inside long
    ones, at ingest; precise mode for the query, every word required)."""

    def index_text(self, text: str) -> str:
        import jieba

        if not has_cjk(text):
            return text
        return _CJK_RUN.sub(lambda m: " " + " ".join(jieba.cut_for_search(m.group())) + " ", text)

    def query(self, text: str, split_words: WordSplitter | None = None) -> FullTextQuery:
        import jieba

        words = _CJK_RUN.sub(lambda m: " " + " ".join(jieba.cut(m.group())) + " ", text)
        return FullTextQuery(" ".join(words.split()), ())


class Variant:
    def __init__(
        self,
        name: str,
        database: Database,
        segmentation: Segmentation,
        split_words: WordSplitter | None = None,
    ) -> None:
        self.name = name
        self.database = database
        self.log = PostgresChatEventLog(database, segmentation, split_words=split_words)

    def search(self, org: str, q: str, limit: int) -> list[str]:
        if self.name == "today":
            with self.database.connection() as conn:
                rows = conn.execute(
                    TODAY_STATEMENT, {"q": q, "org_id": org, "limit": limit}
                ).fetchall()
            return [str(r["event_id"]) for r in rows]
        return [h.event_id for h in self.log.full_text(org, HistoryQuery(q, limit=limit))]


@dataclass
class Row:
    cells: list[str]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def corpus() -> Labelled:
    return CHINESE + ROJAK + LATIN


def occurs(keyword: str, text: str) -> bool:
    if has_cjk(keyword):
        return keyword in text
    # Latin words end where a non-Latin letter starts ("我的parcel" holds "parcel").
    pattern = rf"(?<![a-z0-9]){re.escape(keyword)}(?![a-z0-9])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def validate(messages: Labelled) -> None:
    """Every occurrence of a keyword is labelled, or a declared trap: complete labels."""
    vocabulary = {k for _, keywords in messages for k in keywords}
    problems = []
    texts = [t for t, _ in messages]
    if len(set(texts)) != len(texts):
        problems.append("duplicate messages")
    for text, keywords in messages:
        for k in keywords:
            if not occurs(k, text):
                problems.append(f"{k!r} labelled but absent: {text}")
        for k in vocabulary - set(keywords):
            if occurs(k, text) and text not in TRAPS.get(k, ()):
                problems.append(f"{k!r} occurs but is not labelled: {text}")
    if problems:
        raise SystemExit("evaluation set:\n" + "\n".join(problems))


def events_for(org: str, messages: Sequence[str], start: datetime) -> list[ChatEvent]:
    return [
        ChatEvent(
            event_id=f"m{i:04d}",
            provider="whatsapp",
            channel_id=f"C{i % 7}",
            sender="user",
            text=text,
            occurred_at=start + timedelta(minutes=i),
        )
        for i, text in enumerate(messages)
    ]


def quality(variants: list[Variant]) -> list[Row]:
    messages = corpus()
    validate(messages)
    ids = {text: f"m{i:04d}" for i, (text, _) in enumerate(messages)}
    start = datetime.now(UTC) - timedelta(days=3)
    for v in variants:
        v.log.append(
            f"eval-{v.name}", events_for(f"eval-{v.name}", [t for t, _ in messages], start)
        )
    relevant: dict[str, set[str]] = {}
    for text, keywords in messages:
        for k in keywords:
            relevant.setdefault(k, set()).add(ids[text])

    def recall(pairs: list[tuple[str, str]], v: Variant) -> float:
        cache: dict[str, list[str]] = {}
        hits = 0
        for text, q in pairs:
            if q not in cache:
                cache[q] = v.search(f"eval-{v.name}", q, TOP)
            hits += ids[text] in cache[q]
        return hits / len(pairs)

    groups: list[tuple[str, list[tuple[str, str]]]] = []
    groups.append(
        (
            "Chinese keyword, Chinese messages",
            [(t, k) for t, ks in CHINESE for k in ks],
        )
    )
    groups.append(
        ("Chinese keyword, rojak messages", [(t, k) for t, ks in ROJAK for k in ks if has_cjk(k)])
    )
    groups.append(
        ("Latin keyword, rojak messages", [(t, k) for t, ks in ROJAK for k in ks if not has_cjk(k)])
    )
    groups.append(
        ("Latin keyword, English/Malay messages", [(t, k) for t, ks in LATIN for k in ks])
    )
    two = [(t, ks[0], ks[1]) for t, ks in CHINESE if len(ks) >= 2]
    groups.append(("two Chinese keywords, space between", [(t, f"{a} {b}") for t, a, b in two]))
    groups.append(("two Chinese keywords, written together", [(t, f"{a}{b}") for t, a, b in two]))
    rows = []
    for name, pairs in groups:
        rows.append(
            Row(
                [f"recall@10: {name}", str(len(pairs))]
                + [f"{recall(pairs, v):.3f}" for v in variants]
            )
        )

    short = sorted(k for k in relevant if has_cjk(k) and len(k) <= 2)
    cells_p, cells_empty = [], []
    for v in variants:
        precisions, empty = [], 0
        for q in short:
            found = v.search(f"eval-{v.name}", q, TOP)
            if not found:
                empty += 1
                continue
            precisions.append(sum(f in relevant[q] for f in found) / len(found))
        cells_p.append(f"{statistics.mean(precisions):.3f}" if precisions else "n/a")
        cells_empty.append(f"{empty}")
    rows.append(
        Row(
            [
                "precision@10: short Chinese queries (<= 2 chars), answered ones",
                str(len(short)),
                *cells_p,
            ]
        )
    )
    rows.append(Row(["short Chinese queries answering nothing", str(len(short)), *cells_empty]))
    for trap in TRAPS:
        cells = []
        for v in variants:
            found = v.search(f"eval-{v.name}", trap, TOP)
            wrong = sum(f not in relevant.get(trap, set()) for f in found)
            cells.append(f"{len(found) - wrong} right, {wrong} wrong")
        rows.append(
            Row([f"trap query {trap} (word boundary crossed in another message)", "1", *cells])
        )
    for char in ONE_CHARACTER:
        containing = sum(char in t for t, _ in messages)
        cells = [str(len(v.search(f"eval-{v.name}", char, 100))) for v in variants]
        rows.append(
            Row(
                [
                    f"one-character query {char}: results (of {containing} containing it)",
                    "1",
                    *cells,
                ]
            )
        )
    return rows


def interleaved_ingest(
    variants: list[Variant], events: list[list[ChatEvent]], desc: str, batch: int
) -> dict[str, float]:
    seconds = {v.name: 0.0 for v in variants}
    for w in variants:  # warm-up (jieba loads its dictionary on first use)
        w.log.append(f"warm-{w.name}-{desc}", events[0][:5])
    assert all(len(stream) == len(events[0]) for stream in events)
    for i in tqdm(range(0, len(events[0]), batch), desc=desc, leave=False):
        order = list(zip(variants, events, strict=True))
        random.Random(i).shuffle(order)
        for v, stream in order:
            started = time.perf_counter()
            v.log.append(f"ingest-{v.name}-{desc}", stream[i : i + batch])
            seconds[v.name] += time.perf_counter() - started
    return seconds


def latin_sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(LATIN_WORDS) for _ in range(12))


def chat_messages(rng: random.Random, count: int, mix: str) -> list[str]:
    """`corpus`: the evaluation set's messages (96% hold Chinese); `thirds`: a third each of
    Chinese, rojak and Latin-only messages; `latin`: Latin-only messages."""
    pools = {
        "corpus": [[t for t, _ in corpus()]],
        "thirds": [[t for t, _ in CHINESE], [t for t, _ in ROJAK], []],
        "latin": [[]],
    }[mix]
    out = []
    for i in range(count):
        pool = pools[i % len(pools)]
        out.append(f"{rng.choice(pool)} #{i}" if pool else latin_sentence(rng))
    return out


def bench_ingest(variants: list[Variant], rng: random.Random, count: int, batch: int) -> list[Row]:
    rows = []
    start = datetime.now(UTC) - timedelta(days=10)
    workloads = (
        ("evaluation-set chat (96% of messages hold Chinese)", "corpus"),
        ("a third each Chinese, rojak, Latin-only", "thirds"),
        ("Latin-only chat", "latin"),
    )
    for label, mix in workloads:
        texts = chat_messages(rng, count, mix)
        streams = [events_for("x", texts, start) for _ in variants]
        seconds = interleaved_ingest(variants, streams, label, batch)
        base = count / seconds["today"]
        cells = []
        for v in variants:
            rate = count / seconds[v.name]
            cells.append(f"{rate:,.0f} events/s ({rate / base:.2f}x)")
        rows.append(Row([f"ingest, {label}", f"{count:,} events", *cells]))
    return rows


def bench_query(
    variants: list[Variant], rng: random.Random, windows: int, queries: int
) -> list[Row]:
    count = windows * MESSAGES_PER_WINDOW
    texts = chat_messages(rng, count, "corpus")
    start = datetime.now(UTC) - timedelta(days=30)
    for v in variants:
        org = f"search-{v.name}"
        evs = events_for(org, texts, start)
        for i in tqdm(range(0, len(evs), 1000), desc=f"load {v.name}", leave=False):
            v.log.append(org, evs[i : i + 1000])
    with variants[0].database.connection() as conn:
        conn.execute("ANALYZE dw_chat_events")
    keywords = sorted({k for _, ks in corpus() for k in ks})
    chinese = [k for k in keywords if has_cjk(k)]
    latin = [k for k in keywords if not has_cjk(k)] + LATIN_WORDS
    rows = []
    for label, vocab in (("Chinese keyword", chinese), ("Latin keyword", latin)):
        qs = [rng.choice(vocab) for _ in range(queries)]
        samples: dict[str, list[float]] = {v.name: [] for v in variants}
        found: dict[str, int] = {v.name: 0 for v in variants}
        for v in variants:
            for q in qs[:WARMUP_QUERIES]:
                v.search(f"search-{v.name}", q, SEARCH_LIMIT)
        for q in tqdm(qs, desc=f"queries {label}", leave=False):
            order = list(variants)
            rng.shuffle(order)
            for v in order:
                started = time.perf_counter()
                hits = v.search(f"search-{v.name}", q, SEARCH_LIMIT)
                samples[v.name].append((time.perf_counter() - started) * 1000)
                found[v.name] += len(hits)
        base = statistics.median(samples["today"])
        cells = []
        for v in variants:
            p50 = statistics.median(samples[v.name])
            cells.append(
                f"p50 {p50:.1f} ms ({p50 / base:.2f}x), p95 {pct(samples[v.name], 0.95):.1f} ms,"
                f" {found[v.name] / len(qs):.1f} hits"
            )
        rows.append(
            Row(
                [
                    f"full-text query @ {windows:,} windows/org, {label}",
                    f"{queries} queries",
                    *cells,
                ]
            )
        )
    return rows


def table(header: list[str], rows: list[Row]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r.cells) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--windows", type=int, default=10_000, help="windows per org for queries")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    with cluster("full_text") as url:
        database = Database(url, min_size=1, max_size=4)
        database.open()
        try:
            database.migrate()
            variants = [
                Variant("today", database, WHOLE_RUNS),
                Variant("bigrams, run = phrase", database, CJK_BIGRAMS),
                Variant("jieba", database, JiebaSegmentation(2, False)),
                Variant("memory: bigrams, jieba-cut query", database, CJK_BIGRAMS, jieba_words()),
            ]
            header = ["measurement", "n", *[v.name for v in variants]]
            quality_rows = quality(variants)
            ingest_rows = bench_ingest(variants, rng, args.ingest_events, args.batch)
            query_rows = bench_query(variants, rng, args.windows, args.queries)
        finally:
            database.close()
    print()
    print(table(header, quality_rows))
    print()
    print(table(header, ingest_rows + query_rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
