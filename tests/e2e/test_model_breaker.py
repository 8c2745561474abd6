"""A policy model server that refuses connections, through the real app (ADR 0045): once the
circuit is open, writes answer 503 `model_unavailable` at once with Retry-After, /healthz and
/metrics show it, and writes succeed again after the server is back."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest
from tests.conftest import running_app
from tests.integration.embedding.conftest import FakeOllama, free_port

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio

MODEL = "ollama:embeddinggemma@384"
COOLDOWN = 1.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def policy(n: int) -> dict[str, str]:
    return {"policy_id": f"p{n}", "content": "Staff must reset their password every 90 days."}


async def test_policy_writes_fail_fast_while_the_circuit_is_open_and_recover(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    port = free_port()  # nothing listens: connections are refused
    settings = make_settings(
        policy_model=MODEL,
        ollama_url=f"http://127.0.0.1:{port}",
        model_retries=1,
        model_breaker_threshold=2,
        model_breaker_cooldown=COOLDOWN,
        projection_wait_timeout=0,
    )
    app = create_app(
        lambda: build_services(settings, database_url, contexts=("policy",)), run_workers=False
    )
    async with running_app(app) as client:
        # Two refused attempts (one call and its retry) open the circuit.
        first = await client.post("/v1/policies", json=policy(1))
        assert first.status_code == 503

        started = time.perf_counter()
        second = await client.post("/v1/policies", json=policy(2))
        took = time.perf_counter() - started
        assert second.status_code == 503
        assert second.json()["error"]["code"] == "model_unavailable"
        assert "circuit open" in second.json()["error"]["message"]
        assert 1 <= int(second.headers["retry-after"]) <= COOLDOWN + 1
        assert took < 0.5  # no request, no retry backoff (a retry alone waits ~0.5 s)

        health = await client.get("/healthz")
        assert health.status_code == 200  # a model being down never fails /healthz
        model = health.json()["contexts"]["policy"]["model"]
        assert model["available"] is False
        assert model["breaker"]["state"] == "open"
        assert model["breaker"]["opened_total"] == 1
        metrics = (await client.get("/metrics")).text
        assert f'memory_model_circuit_state{{model="{MODEL}"}} 2.0' in metrics
        assert f'memory_model_circuit_opened_total{{model="{MODEL}"}}' in metrics

        server = FakeOllama(port)
        server.start()
        try:
            await anyio.sleep(COOLDOWN)
            stored = await client.post("/v1/policies", json=policy(3))
            assert stored.status_code == 201, stored.text
            health = await client.get("/healthz")
            assert health.json()["contexts"]["policy"]["model"]["breaker"]["state"] == "closed"
        finally:
            server.stop()
