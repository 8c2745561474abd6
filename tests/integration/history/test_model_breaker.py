"""History search against a real model server that refuses connections, then comes back:
the circuit breaker (ADR 0045) makes searches degrade at once while it is known down."""

from __future__ import annotations

import time

from tests.integration.embedding.conftest import FakeOllama, free_port

from memory.domain.history.search import HistoryQuery, SemanticState
from memory.infrastructure.embedding.factory import ModelRegistry

QUERY = HistoryQuery("reset my password", limit=10)
# MEMORY_HISTORY_QUERY_EMBED_TIMEOUT's default: a degraded search used to take all of it.
BUDGET = 1.0


def test_searches_degrade_at_once_while_the_server_refuses_and_recover_after(
    make_runtime, make_settings, kit
) -> None:
    port = free_port()  # bound and closed: nothing listens, connections are refused
    overrides = {
        "history_model": "ollama:bge-m3",
        "ollama_url": f"http://127.0.0.1:{port}",
        "model_breaker_cooldown": 1.0,
    }
    models = ModelRegistry(make_settings(**overrides))
    runtime = make_runtime(models.get("ollama:bge-m3"), **overrides)
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message("pw1", 0, "how can I reset my password")])

    def timed_search() -> tuple[SemanticState, float]:
        started = time.perf_counter()
        result = runtime.service.search("acme", QUERY)
        return result.semantic, time.perf_counter() - started

    try:
        # Closed: retries with backoff outlast the budget, so each search waits all of it,
        # until enough refused attempts have opened the circuit.
        first, took = timed_search()
        assert first is SemanticState.DEGRADED and took >= 0.9 * BUDGET
        for _ in range(10):
            if runtime.health()["model"]["breaker"]["state"] == "open":
                break
            timed_search()
        assert runtime.health()["model"]["breaker"]["state"] == "open"

        # Open: degraded without waiting for the model.
        for _ in range(5):
            state, took = timed_search()
            assert state is SemanticState.DEGRADED
            assert took < BUDGET / 2

        # The server comes back: after the cool-down one probe goes through and closes it.
        server = FakeOllama(port)
        server.native_dims = 1024
        server.start()
        try:
            time.sleep(1.0)
            deadline = time.monotonic() + 10
            state = SemanticState.DEGRADED
            while state is not SemanticState.ON and time.monotonic() < deadline:
                state, _ = timed_search()
                time.sleep(0.1)
            assert state is SemanticState.ON
            assert runtime.health()["model"]["breaker"]["state"] == "closed"
        finally:
            server.stop()
    finally:
        models.close()
