"""`memory check`: how well a model retrieves across English, Malay, Chinese and rojak,
beside what full-text search alone finds, and how much of what it returns is on topic (the
precision set, judged with and without the relevance rule), before an operator turns
semantic search on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from memory.application.embedding import EmbeddingModel
from memory.datasets.precision_check import PrecisionQuery, PrecisionSet
from memory.datasets.retrieval_check import CheckSet
from memory.domain.relevance import (
    RelevanceFilter,
    relevances,
    script_group,
)
from memory.domain.retrieval_precision import Judged, PrecisionTable
from memory.domain.retrieval_recall import Answered, RecallTable, top_k


class FullTextRanker(Protocol):
    def rank(self, query: str, documents: Sequence[tuple[str, str]], k: int) -> list[str]:
        """The ids of at most `k` documents (id, text) full-text search matches, best
        first, as history search would match them."""
        ...


def check_model(
    model: EmbeddingModel,
    full_text: FullTextRanker,
    data: CheckSet,
    *,
    k: int,
    on_question: Callable[[], object] | None = None,
) -> RecallTable:
    ids = [d.id for d in data.documents]
    texts = [d.text for d in data.documents]
    vectors = model.embed_documents(texts)
    documents = list(zip(ids, texts, strict=True))
    answered = []
    for query in data.queries:
        q = model.embed_query(query.text)
        # Vectors are unit length (the port's contract): the dot product is the cosine.
        scores = {i: _dot(q.values, v.values) for i, v in zip(ids, vectors, strict=True)}
        semantic = query.document in top_k(scores, k)
        lexical = query.document in full_text.rank(query.text, documents, k)
        answered.append(Answered((query.lang, data.language_of(query.document)), semantic, lexical))
        if on_question is not None:
            on_question()
    return RecallTable.of(answered, k)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class PrecisionReport:
    """The precision check: today's answer (the top k by similarity, no floor) beside the
    answer the relevance rule gives (the top k by relevance that `rule` keeps)."""

    rule: RelevanceFilter
    unfiltered: PrecisionTable
    relevance: PrecisionTable


@dataclass(frozen=True, slots=True)
class ScoredQuery:
    """One query's similarity to every document, with each document's script group."""

    query: PrecisionQuery
    similarities: list[float]


def score_precision_set(
    model: EmbeddingModel,
    data: PrecisionSet,
    *,
    on_question: Callable[[], object] | None = None,
) -> list[ScoredQuery]:
    vectors = model.embed_documents([d.text for d in data.documents])
    scored = []
    for query in data.queries:
        q = model.embed_query(query.text)
        scored.append(ScoredQuery(query, [_dot(q.values, v.values) for v in vectors]))
        if on_question is not None:
            on_question()
    return scored


def judge_precision(
    data: PrecisionSet,
    scored: Sequence[ScoredQuery],
    *,
    k: int,
    rule: RelevanceFilter | None,
) -> PrecisionTable:
    """The table for one rule: `None` is today's top k by similarity, a filter the top k by
    relevance that it keeps."""
    groups = [script_group(d.text) for d in data.documents]
    judged = []
    for item in scored:
        if rule is None:
            ranked = sorted(range(len(groups)), key=lambda i: -item.similarities[i])[:k]
        else:
            rel = relevances(list(zip(groups, item.similarities, strict=True)))
            order = sorted(range(len(groups)), key=lambda i: -(rel[i] or 0.0))[:k]
            kept = rule.keep([rel[i] for i in order])
            ranked = [i for i, keep in zip(order, kept, strict=True) if keep]
        judged.append(
            Judged(
                item.query.lang,
                {a: data.language_of(a) for a in item.query.answers},
                [(data.documents[i].id, data.documents[i].lang) for i in ranked],
            )
        )
    return PrecisionTable.of(judged, k)


def check_precision(
    model: EmbeddingModel,
    data: PrecisionSet,
    *,
    k: int,
    rule: RelevanceFilter | None = None,
    on_question: Callable[[], object] | None = None,
) -> PrecisionReport:
    """`rule`: the service's default relevance rule unless given."""
    chosen = rule or RelevanceFilter()
    scored = score_precision_set(model, data, on_question=on_question)
    return PrecisionReport(
        chosen,
        judge_precision(data, scored, k=k, rule=None),
        judge_precision(data, scored, k=k, rule=chosen),
    )
