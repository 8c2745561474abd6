from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from memory.application.embedding import ModelStatus, ModelUnavailable
from memory.application.history.query_embedding import QUERY_EMBED_WORKERS, QueryEmbedder
from memory.domain.embedding import EmbeddingVector, ModelIdentity


class EdgeModel:
    """A model server at the edge: answers, fails, or hangs until released."""

    def __init__(self) -> None:
        self.identity = ModelIdentity("fake:q", 2)
        self.max_input_tokens = 512
        self.fail: Exception | None = None
        self.release = threading.Event()
        self.release.set()
        self.vector = (1.0, 0.0)
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        raise AssertionError("search never embeds documents")

    def embed_query(self, text: str) -> EmbeddingVector:
        self.calls += 1
        self.release.wait(10)
        if self.fail is not None:
            raise self.fail
        return EmbeddingVector(self.vector)

    def status(self) -> ModelStatus:
        return ModelStatus("fake:q", 2, True)


def test_a_query_vector_within_the_budget() -> None:
    model = EdgeModel()
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() == EmbeddingVector((1.0, 0.0))
    assert pending.failure is None
    embedder.close()


def test_a_failing_model_gives_no_vector() -> None:
    model = EdgeModel()
    model.fail = ModelUnavailable("fake:q", "connection refused")
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() is None
    assert pending.failure == "ModelUnavailable"
    embedder.close()


def test_a_wrong_dimension_gives_no_vector() -> None:
    model = EdgeModel()
    model.vector = (1.0, 0.0, 0.0)
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() is None and pending.failure == "bad_vector"
    embedder.close()


def test_a_hung_model_times_out_and_takes_at_most_its_threads() -> None:
    model = EdgeModel()
    model.release.clear()
    embedder = QueryEmbedder(model, timeout=0.05)
    pendings = [embedder.start("q") for _ in range(QUERY_EMBED_WORKERS + 2)]
    assert all(p.result() is None for p in pendings)
    assert {p.failure for p in pendings} == {"timeout"}
    model.release.set()
    embedder.close()


def test_queries_abandoned_while_the_model_hangs_never_reach_it_after_it_recovers() -> None:
    """Searches that already answered `degraded` must not queue work for the model: only
    the calls that were running when the model hung are still delivered."""
    model = EdgeModel()
    model.release.clear()
    embedder = QueryEmbedder(model, timeout=0.05)
    searches = 40
    pendings = [embedder.start("q") for _ in range(searches)]
    assert all(p.result() is None for p in pendings)
    model.release.set()
    # Long enough for a backlog of instant calls to drain into the recovered model.
    threading.Event().wait(0.5)
    assert model.calls <= QUERY_EMBED_WORKERS
    embedder.close()


def test_a_query_picked_up_after_its_deadline_is_dropped_without_calling_the_model() -> None:
    model = EdgeModel()
    model.release.clear()
    embedder = QueryEmbedder(model, timeout=0.2)
    for _ in range(QUERY_EMBED_WORKERS):
        embedder.start("q")
    # The workers are stuck; `late` is still queued when its budget runs out, and nobody has
    # collected its result yet (as when the searching thread itself was slow).
    late = embedder.start("late")
    threading.Event().wait(0.3)
    model.release.set()
    threading.Event().wait(0.3)  # the freed workers pick `late` up meanwhile
    assert model.calls == QUERY_EMBED_WORKERS
    assert late.result() is None and late.failure == "timeout"
    embedder.close()


def test_the_budget_is_positive() -> None:
    with pytest.raises(ValueError):
        QueryEmbedder(EdgeModel(), timeout=0)
