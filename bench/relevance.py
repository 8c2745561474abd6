"""Relevance rules compared on the precision set (docs/adr/0112), with the bundled model.

    .venv/bin/python bench/relevance.py                       # local:multilingual-e5-small
    .venv/bin/python bench/relevance.py --model hash:384      # any model spec
    .venv/bin/python bench/relevance.py --messages            # and per-message scoring

Embeds the precision set (src/memory/datasets/precision_check.json: 202 documents in
English, Malay, Chinese and rojak, 230 queries of which 56 have no answer) once, caching the
vectors in --cache (a rerun costs seconds instead of minutes of CPU), and prints:

1. semantic rules: the top 5 by similarity (today's answer: the baseline of every ratio),
   a raw similarity floor, the gap to the query's best hit, standardisation over the whole
   corpus, standardisation within the hit's script group (the relevance the service
   computes) at several floors, and combinations. Per rule: recall@5, off-topic hits per
   query in the top 5, the share of no-answer queries answered with no semantic hit, and
   recall beside the baseline's;
2. the default rule per language pair (recall per (query, answer) language, off-topic hits
   per query by the hit's language, empty share per query language);
3. groupings compared (docs/adr/0120): the script groups of ADR 0112 (Han, everything else)
   against Malay grouped apart by its function words (the service's grouping), and the
   documents' own language labels (what a perfect detector would give), each at the top 5
   by relevance and at several two-level rules, with recall for the cross-language pairs;
4. with --messages, per-message scoring (docs/adr/0119): each line of a conversation is a
   message; the messages of the windows the default rule keeps, ordered as history search
   orders them (windows by relevance, each window's messages in time order) against orders
   by each message's own relevance (its similarity to the query, standardised as its
   window's is), and what embedding those messages at query time would cost (the model
   uncached, one call per query, as a search would make it);
5. merge orders for the whole answer (full-text hits from PostgreSQL's ranking of the same
   documents, as history search ranks messages): full-text first with the semantic hits
   appended (what history search does) against reciprocal-rank fusion of the two ranks.

Starts a private PostgreSQL cluster in a temporary home for the full-text ranks.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.application.embedding import EmbeddingModel
from memory.application.model_check import ScoredQuery, score_precision_set
from memory.datasets.precision_check import PrecisionSet, load_precision_set
from memory.domain.relevance import (
    DEFAULT_BEST_RELEVANCE,
    DEFAULT_MIN_RELEVANCE,
    QueryDistribution,
    RelevanceFilter,
    ScriptGroup,
    SimilarityDistribution,
    script_group,
)
from memory.domain.retrieval_precision import Judged, PrecisionTable
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.embedding.vector_cache import CachedEmbeddingModel
from memory.infrastructure.history.full_text_ranker import PostgresFullTextRanker
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database
from memory.infrastructure.settings import Settings

K = 5
# (best relevance a query needs, floor of every hit) pairs compared.
TWO_LEVEL_RULES = [
    (2.5, 2.0),
    (2.75, 2.0),
    (2.75, 2.25),
    (2.75, 2.5),
    (3.0, 2.0),
    (3.0, 2.25),
    (3.0, 2.5),
    (3.25, 2.25),
]
# Reciprocal-rank fusion's constant (Cormack et al. 2009).
RRF_K = 60


@dataclass(frozen=True)
class QueryView:
    """One query's scores: similarity, relevance (script group), corpus z, best hit."""

    scored: ScoredQuery
    relevance: list[float]
    corpus_z: list[float]


Rule = Callable[[QueryView, int], bool]  # keeps document i?
Order = Callable[[QueryView], list[int]]


def by_similarity(view: QueryView) -> list[int]:
    s = view.scored.similarities
    return sorted(range(len(s)), key=lambda i: -s[i])


def by_relevance(view: QueryView) -> list[int]:
    return sorted(range(len(view.relevance)), key=lambda i: -view.relevance[i])


Grouping = Callable[[PrecisionSet], list[str]]


def _script_only(data: PrecisionSet) -> list[str]:
    """ADR 0112's groups: Han, and every other text together."""
    return ["han" if script_group(d.text) is ScriptGroup.HAN else "other" for d in data.documents]


def _service(data: PrecisionSet) -> list[str]:
    return [script_group(d.text).value for d in data.documents]


def _labels(data: PrecisionSet) -> list[str]:
    return [d.lang for d in data.documents]


GROUPINGS: list[tuple[str, Grouping]] = [
    ("script: han / other (ADR 0112)", _script_only),
    ("script + Malay words: han / malay / other (service)", _service),
    ("language labels: en / ms / rojak / zh", _labels),
]
# Cross-language pairs whose recall a grouping moves (the Latin-script languages').
GROUPING_PAIRS = [("en", "ms"), ("ms", "en"), ("en", "rojak"), ("rojak", "en"), ("zh", "ms")]


def views(
    data: PrecisionSet, scored: Sequence[ScoredQuery], grouping: Grouping = _service
) -> list[QueryView]:
    groups = grouping(data)
    out = []
    for item in scored:
        rel = _relevances(groups, item.similarities)
        corpus = SimilarityDistribution.of(item.similarities)
        out.append(
            QueryView(
                item,
                [r if r is not None else 0.0 for r in rel],
                [corpus.standardise(s) for s in item.similarities],
            )
        )
    return out


def _relevances(groups: Sequence[str], similarities: Sequence[float]) -> list[float | None]:
    """The domain's relevance (`memory.domain.relevance.QueryDistribution`) over any
    grouping: standardised within the item's group, or against the whole set when the group
    is too small, or None when the set is."""
    by_group: dict[str, list[float]] = {}
    for group, similarity in zip(groups, similarities, strict=True):
        by_group.setdefault(group, []).append(similarity)
    overall = SimilarityDistribution.of(similarities)
    per_group = {g: SimilarityDistribution.of(v) for g, v in by_group.items()}
    out: list[float | None] = []
    for group, similarity in zip(groups, similarities, strict=True):
        own = per_group[group]
        against = own if own.usable else overall
        out.append(against.standardise(similarity) if against.usable else None)
    return out


def judge(data: PrecisionSet, vs: Sequence[QueryView], order: Order, keep: Rule) -> PrecisionTable:
    judged = []
    for v in vs:
        top = order(v)[:K]
        kept = [i for i in top if keep(v, i)]
        judged.append(
            Judged(
                v.scored.query.lang,
                {a: data.language_of(a) for a in v.scored.query.answers},
                [(data.documents[i].id, data.documents[i].lang) for i in kept],
            )
        )
    return PrecisionTable.of(judged, K)


def semantic_rules() -> list[tuple[str, Order, Rule]]:
    def best(v: QueryView) -> float:
        return max(v.scored.similarities)

    def best_rel(v: QueryView) -> float:
        return max(v.relevance)

    rules: list[tuple[str, Order, Rule]] = [
        ("top 5 by similarity, no floor (today)", by_similarity, lambda v, i: True),
    ]
    for floor in (0.80, 0.83, 0.85):
        rules.append(
            (
                f"raw floor: similarity >= {floor}",
                by_similarity,
                lambda v, i, f=floor: v.scored.similarities[i] >= f,
            )
        )
    for gap in (0.01, 0.02):
        rules.append(
            (
                f"gap to best <= {gap}",
                by_similarity,
                lambda v, i, g=gap: v.scored.similarities[i] >= best(v) - g,
            )
        )
    for z in (2.0, 2.5, 3.0):
        rules.append((f"corpus z >= {z}", by_similarity, lambda v, i, z=z: v.corpus_z[i] >= z))
    rules.append(
        (
            "corpus z >= 2.5 and gap to best <= 0.02",
            by_similarity,
            lambda v, i: max(v.corpus_z) >= 2.5 and v.scored.similarities[i] >= best(v) - 0.02,
        )
    )
    rules.append(("top 5 by relevance, no floor", by_relevance, lambda v, i: True))
    for z in (2.0, 2.25, 2.5, 2.75, 3.0):
        rules.append((f"relevance >= {z}", by_relevance, lambda v, i, z=z: v.relevance[i] >= z))
    default = (DEFAULT_BEST_RELEVANCE, DEFAULT_MIN_RELEVANCE)
    for top, floor in TWO_LEVEL_RULES:
        marker = " (default)" if (top, floor) == default else ""
        rules.append(
            (
                f"relevance >= {floor} when best relevance >= {top}{marker}",
                by_relevance,
                lambda v, i, b=top, f=floor: best_rel(v) >= b and v.relevance[i] >= f,
            )
        )
    return rules


def default_rule(v: QueryView, i: int) -> bool:
    """The service's default (RelevanceFilter), for a hit among the query's hits."""
    return RelevanceFilter().keep([max(v.relevance), v.relevance[i]])[1]


def rule_table(data: PrecisionSet, vs: Sequence[QueryView]) -> str:
    lines = [
        "| rule | recall@5 | vs today | off-topic / query | no-answer empty |",
        "|---|---:|---:|---:|---:|",
    ]
    baseline: float | None = None
    for name, order, keep in semantic_rules():
        table = judge(data, vs, order, keep)
        if baseline is None:
            baseline = table.recall
        lines.append(
            f"| {name} | {table.recall:.3f} | {table.recall / baseline:.2f}x |"
            f" {table.off_topic_per_query:.2f} | {table.empty_share:.2f} |"
        )
    return "\n".join(lines)


def pair_table(data: PrecisionSet, vs: Sequence[QueryView]) -> str:
    today = judge(data, vs, by_similarity, lambda v, i: True)
    default = judge(data, vs, by_relevance, default_rule)
    old = {p.pair: p for p in today.pairs}
    lines = [
        "| query -> document | answers | recall@5 today | recall@5 default | off-topic today |"
        " off-topic default |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in default.pairs:
        before = old.get(p.pair)
        lines.append(
            f"| {p.pair[0]} -> {p.pair[1]} | {p.answers} | {_r(before.recall if before else None)}"
            f" | {_r(p.recall)} | {before.off_topic_per_query if before else 0:.2f}"
            f" | {p.off_topic_per_query:.2f} |"
        )
    before_empty = {x.lang: x.empty_share for x in today.languages}
    lines += [
        "",
        "| query language | no-answer queries | empty today | empty default |",
        "|---|---:|---:|---:|",
    ]
    for x in default.languages:
        lines.append(
            f"| {x.lang} | {x.no_answer_queries} | {before_empty[x.lang]:.2f}"
            f" | {x.empty_share:.2f} |"
        )
    return "\n".join(lines)


def grouping_table(data: PrecisionSet, scored: Sequence[ScoredQuery]) -> str:
    pairs = " | ".join(f"{a} -> {b}" for a, b in GROUPING_PAIRS)
    lines = [
        f"| grouping | rule | recall@5 | off-topic / query | no-answer empty | {pairs} |",
        "|---|---|---:|---:|---:|" + "---:|" * len(GROUPING_PAIRS),
    ]
    rules: list[tuple[str, Rule]] = [("top 5 by relevance", lambda v, i: True)]
    for top, floor in TWO_LEVEL_RULES:
        rules.append(
            (
                f"{floor} when best >= {top}",
                lambda v, i, b=top, f=floor: max(v.relevance) >= b and v.relevance[i] >= f,
            )
        )
    for name, grouping in GROUPINGS:
        vs = views(data, scored, grouping)
        for rule_name, keep in rules:
            table = judge(data, vs, by_relevance, keep)
            recall = {p.pair: p.recall for p in table.pairs}
            lines.append(
                f"| {name} | {rule_name} | {table.recall:.3f} | {table.off_topic_per_query:.2f}"
                f" | {table.empty_share:.2f} | "
                + " | ".join(_r(recall.get(pair)) for pair in GROUPING_PAIRS)
                + " |"
            )
    return "\n".join(lines)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two unit vectors (what the model returns)."""
    return sum(x * y for x, y in zip(a, b, strict=True))


MESSAGES_SHOWN = 5  # a reader's first screen of a history answer
COST_QUERIES = 30  # queries whose kept windows' messages are embedded uncached


@dataclass(frozen=True)
class MessageOrder:
    name: str
    order: Callable[[list[tuple[str, float, list[tuple[str, float]]]]], list[tuple[str, str]]]


def _messages(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def message_orders() -> list[MessageOrder]:
    """Each takes the kept windows [(document id, window relevance, [(message, message
    relevance)])], best window first, and gives the answer's (document id, message) list."""

    def service(ws: list[tuple[str, float, list[tuple[str, float]]]]) -> list[tuple[str, str]]:
        return [(d, m) for d, _, ms in ws for m, _ in ms]

    def within(ws: list[tuple[str, float, list[tuple[str, float]]]]) -> list[tuple[str, str]]:
        return [(d, m) for d, _, ms in ws for m, _ in sorted(ms, key=lambda x: -x[1])]

    def across(ws: list[tuple[str, float, list[tuple[str, float]]]]) -> list[tuple[str, str]]:
        scored = [(r, d, m) for d, _, ms in ws for m, r in ms]
        return [(d, m) for _, d, m in sorted(scored, key=lambda x: -x[0])]

    def floored(ws: list[tuple[str, float, list[tuple[str, float]]]]) -> list[tuple[str, str]]:
        return [(d, m) for d, _, ms in ws for m, r in ms if r >= DEFAULT_MIN_RELEVANCE]

    return [
        MessageOrder("windows by relevance, messages in time order (history search)", service),
        MessageOrder("windows by relevance, messages by their own relevance", within),
        MessageOrder("messages by their own relevance, across windows", across),
        MessageOrder(
            f"time order, messages below relevance {DEFAULT_MIN_RELEVANCE} dropped", floored
        ),
    ]


def message_table(
    data: PrecisionSet, scored: Sequence[ScoredQuery], model: EmbeddingModel, raw: EmbeddingModel
) -> str:
    vs = views(data, scored)
    groups = [script_group(d.text) for d in data.documents]
    lines = sorted({m for d in data.documents for m in _messages(d.text)})
    vectors = dict(zip(lines, model.embed_documents(lines), strict=True))
    kept_windows: list[list[tuple[str, float, list[tuple[str, float]]]]] = []
    for v in vs:
        query = model.embed_query(v.scored.query.text)
        distribution = QueryDistribution.of(list(zip(groups, v.scored.similarities, strict=True)))
        kept = [i for i in by_relevance(v) if default_rule(v, i)]
        windows = []
        for i in kept:
            doc = data.documents[i]
            ms = [
                (m, distribution.relevance(groups[i], _dot(vectors[m].values, query.values)) or 0.0)
                for m in _messages(doc.text)
            ]
            windows.append((doc.id, v.relevance[i], ms))
        kept_windows.append(windows)
    answered = [n for n, ws in enumerate(kept_windows) if ws]
    out = [
        f"{len(answered)} of {len(vs)} queries keep a window; {len(lines)} messages,"
        f" {statistics.mean(len(_messages(d.text)) for d in data.documents):.1f} per"
        " conversation",
        "",
        f"| order of the semantic messages | order differs | right conversations in first"
        f" {MESSAGES_SHOWN} | off-topic messages in first {MESSAGES_SHOWN} | first message"
        " right | messages shown |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    baseline = [message_orders()[0].order(ws) for ws in kept_windows]
    for order in message_orders():
        answers = [order.order(ws) for ws in kept_windows]
        differs = sum(1 for n in answered if answers[n] != baseline[n])
        right, off, first, shown = [], [], [], []
        for n in answered:
            truth = set(vs[n].scored.query.answers)
            top = answers[n][:MESSAGES_SHOWN]
            off.append(sum(1 for d, _ in top if d not in truth))
            shown.append(len(answers[n]))
            if truth:
                right.append(len({d for d, _ in top if d in truth}))
                first.append(1.0 if answers[n] and answers[n][0][0] in truth else 0.0)
        out.append(
            f"| {order.name} | {differs} | {statistics.mean(right):.3f} |"
            f" {statistics.mean(off):.2f} | {statistics.mean(first):.3f} |"
            f" {statistics.mean(shown):.1f} |"
        )
    costs = []
    for n in answered[:COST_QUERIES]:
        texts = [m for _, _, ms in kept_windows[n] for m, _ in ms]
        started = time.perf_counter()
        raw.embed_documents(texts)
        costs.append((time.perf_counter() - started, len(texts)))
    seconds = [c for c, _ in costs]
    out += [
        "",
        f"Embedding the kept windows' messages at query time ({len(costs)} queries, one call"
        f" each, {statistics.mean(n for _, n in costs):.1f} messages on average; load average"
        f" {os.getloadavg()[0]:.1f}): p50 {statistics.median(seconds) * 1000:.0f} ms,"
        f" max {max(seconds) * 1000:.0f} ms",
    ]
    return "\n".join(out)


def _r(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def merge_table(
    data: PrecisionSet, vs: Sequence[QueryView], full_text: Callable[[str], list[str]]
) -> str:
    index = {d.id: n for n, d in enumerate(data.documents)}
    fts = [[index[i] for i in full_text(v.scored.query.text)] for v in vs]

    def semantic(v: QueryView) -> list[int]:
        return [i for i in by_relevance(v) if default_rule(v, i)]

    def fts_first(n: int, v: QueryView) -> list[int]:
        merged = list(fts[n])
        merged += [i for i in semantic(v) if i not in merged]
        return merged

    def rrf(n: int, v: QueryView) -> list[int]:
        score: dict[int, float] = {}
        for ranked in (fts[n], semantic(v)):
            for rank, i in enumerate(ranked):
                score[i] = score.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
        return sorted(score, key=lambda i: -score[i])

    def semantic_only(n: int, v: QueryView) -> list[int]:
        return semantic(v)

    def fts_only(n: int, v: QueryView) -> list[int]:
        return list(fts[n])

    lines = [
        "| answer order (semantic part: the default rule) | recall@5 | off-topic / query |"
        " no-answer empty |",
        "|---|---:|---:|---:|",
    ]
    orders: list[tuple[str, Callable[[int, QueryView], list[int]]]] = [
        ("full-text alone", fts_only),
        ("semantic alone", semantic_only),
        ("full-text first, semantic appended (history search)", fts_first),
        ("reciprocal-rank fusion of the two ranks", rrf),
    ]
    for name, merge in orders:
        judged = [
            Judged(
                v.scored.query.lang,
                {a: data.language_of(a) for a in v.scored.query.answers},
                [(data.documents[i].id, data.documents[i].lang) for i in merge(n, v)[:K]],
            )
            for n, v in enumerate(vs)
        ]
        table = PrecisionTable.of(judged, K)
        lines.append(
            f"| {name} | {table.recall:.3f} | {table.off_topic_per_query:.2f} |"
            f" {table.empty_share:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:multilingual-e5-small")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memory-bench-relevance",
        help="where evaluation vectors are kept between runs",
    )
    parser.add_argument(
        "--messages",
        action="store_true",
        help="also per-message scoring (embeds ~500 messages once, then cached)",
    )
    args = parser.parse_args(argv)
    data = load_precision_set()
    registry = ModelRegistry(Settings())
    messages = None
    try:
        model = CachedEmbeddingModel(registry.get(args.model), args.cache)
        scored = score_precision_set(model, data)
        if args.messages:
            messages = message_table(data, scored, model, registry.get(args.model))
        model.save()
    finally:
        registry.close()
    vs = views(data, scored)
    print(
        f"model {args.model}; {len(data.documents)} documents, {len(data.queries)} queries"
        f" ({sum(1 for q in data.queries if not q.answers)} without an answer); k = {K}"
    )
    print("\n" + rule_table(data, vs))
    print("\n" + pair_table(data, vs))
    print("\n" + grouping_table(data, scored))
    if messages is not None:
        print("\n" + messages)
    home = Path(tempfile.mkdtemp(prefix="memory-bench-relevance-"))
    home.chmod(0o755)
    pg = EmbeddedPostgres(home, durable=False)
    try:
        database = Database(create_database(pg.start(), "relevance_bench"), min_size=1, max_size=1)
        database.open()
        try:
            ranker = PostgresFullTextRanker(database)
            documents = [(d.id, d.text) for d in data.documents]
            print("\n" + merge_table(data, vs, lambda q: ranker.rank(q, documents, K)))
        finally:
            database.close()
    finally:
        pg.stop()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
