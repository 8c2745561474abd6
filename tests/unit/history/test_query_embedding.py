from __future__ import annotations

import threading

import pytest
from tests.fakes import FakeModel

from memory.application.history.query_embedding import QUERY_EMBED_WORKERS, QueryEmbedder
from memory.domain.embedding import EmbeddingVector


def edge_model() -> FakeModel:
    """A model server at the edge answering queries with a fixed vector."""
    model = FakeModel("fake:q", dimensions=2)
    model.query_vector = EmbeddingVector((1.0, 0.0))
    return model


def test_a_query_vector_within_the_budget() -> None:
    model = edge_model()
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() == EmbeddingVector((1.0, 0.0))
    assert pending.failure is None
    embedder.close()


def test_a_failing_model_gives_no_vector() -> None:
    model = edge_model()
    model.down = True
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() is None
    assert pending.failure == "ModelUnavailable"
    embedder.close()


def test_a_wrong_dimension_gives_no_vector() -> None:
    model = edge_model()
    model.query_vector = EmbeddingVector((1.0, 0.0, 0.0))
    embedder = QueryEmbedder(model, timeout=5)
    pending = embedder.start("hello")
    assert pending.result() is None and pending.failure == "bad_vector"
    embedder.close()


def test_a_hung_model_times_out_and_takes_at_most_its_threads() -> None:
    model = edge_model()
    model.query_gate = threading.Event()
    embedder = QueryEmbedder(model, timeout=0.05)
    pendings = [embedder.start("q") for _ in range(QUERY_EMBED_WORKERS + 2)]
    assert all(p.result() is None for p in pendings)
    assert {p.failure for p in pendings} == {"timeout"}
    model.query_gate.set()
    embedder.close()


def test_queries_abandoned_while_the_model_hangs_never_reach_it_after_it_recovers() -> None:
    """Searches that already answered `degraded` must not queue work for the model: only
    the calls that were running when the model hung are still delivered."""
    model = edge_model()
    model.query_gate = threading.Event()
    embedder = QueryEmbedder(model, timeout=0.05)
    searches = 40
    pendings = [embedder.start("q") for _ in range(searches)]
    assert all(p.result() is None for p in pendings)
    model.query_gate.set()
    # Long enough for a backlog of instant calls to drain into the recovered model.
    threading.Event().wait(0.5)
    assert model.query_calls <= QUERY_EMBED_WORKERS
    embedder.close()


def test_a_query_picked_up_after_its_deadline_is_dropped_without_calling_the_model() -> None:
    model = edge_model()
    model.query_gate = threading.Event()
    embedder = QueryEmbedder(model, timeout=0.2)
    for _ in range(QUERY_EMBED_WORKERS):
        embedder.start("q")
    # The workers are stuck; `late` is still queued when its budget runs out, and nobody has
    # collected its result yet (as when the searching thread itself was slow).
    late = embedder.start("late")
    threading.Event().wait(0.3)
    model.query_gate.set()
    threading.Event().wait(0.3)  # the freed workers pick `late` up meanwhile
    assert model.query_calls == QUERY_EMBED_WORKERS
    assert late.result() is None and late.failure == "timeout"
    embedder.close()


def test_the_budget_is_positive() -> None:
    with pytest.raises(ValueError):
        QueryEmbedder(edge_model(), timeout=0)
