"""`memory check`: how well a model retrieves across English, Malay, Chinese and rojak,
beside what full-text search alone finds, before an operator turns semantic search on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from memory.application.embedding import EmbeddingModel
from memory.datasets.retrieval_check import CheckSet
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
