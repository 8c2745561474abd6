"""Every model call is measured per model and operation, and an outage is logged once when
it starts and once, with its numbers, when the model answers again."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY
from tests.fakes import FakeModel

from memory.application.embedding import InputRejected, ModelUnavailable
from memory.infrastructure.embedding.measured import MeasuredModel


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_latency_and_errors_are_counted_per_model_and_operation() -> None:
    edge = FakeModel("fake:measured-a", 8)
    model = MeasuredModel(edge)
    model.embed_documents(["a", "b"])
    model.embed_query("c")
    edge.failure = InputRejected("fake:measured-a", "input rejected")
    with pytest.raises(InputRejected):
        model.embed_documents(["d"])
    labels = {"model": "fake:measured-a"}
    assert sample("memory_model_call_seconds_count", **labels, operation="embed_documents") == 2
    assert sample("memory_model_call_seconds_count", **labels, operation="embed_query") == 1
    assert (
        sample(
            "memory_model_call_errors_total",
            **labels,
            operation="embed_documents",
            error="input_rejected",
        )
        == 1
    )
    assert sample("memory_model_texts_total", **labels, operation="embed_documents") == 2


def test_an_outage_logs_one_line_when_it_starts_and_one_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    edge = FakeModel("fake:measured-b", 8)
    now = [100.0]
    model = MeasuredModel(edge, clock=lambda: now[0])
    caplog.set_level(logging.INFO, "memory.infrastructure.embedding.measured")
    edge.down = True
    for _ in range(3):
        with pytest.raises(ModelUnavailable):
            model.embed_query("x")
    now[0] = 107.5
    edge.down = False
    model.embed_query("x")
    model.embed_query("x")
    lines = [(r.getMessage(), r.__dict__) for r in caplog.records]
    assert [m for m, _ in lines] == ["model unavailable", "model recovered"]
    assert lines[0][1]["model"] == "fake:measured-b"
    assert lines[1][1]["failed_calls"] == 3
    assert lines[1][1]["outage_seconds"] == 7.5
    assert (
        sample(
            "memory_model_call_errors_total",
            model="fake:measured-b",
            operation="embed_query",
            error="unavailable",
        )
        == 3
    )
