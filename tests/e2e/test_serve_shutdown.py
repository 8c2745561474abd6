"""SIGTERM in the middle of a long sweep (ADR 0044): a real `memory serve` process sweeping
through a slow model server on loopback stops between batches and exits within the drain
time; after a restart the sweep finishes, each window sent to the model exactly once."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.drills import http, seeded_home
from tests.integration.embedding.conftest import FakeOllama

from memory.entrypoints.serve_process import ServeProcess
from memory.entrypoints.warm_up import WARM_QUERIES
from memory.infrastructure.postgres.embedded import free_port

STARTUP_DEADLINE_SECONDS = 90
# `memory serve` drains requests for this long on SIGTERM (uvicorn's graceful timeout, as
# documented in the README); a sweep must not make shutdown take longer.
DRAIN_SECONDS = 10
WINDOWS = 12
# Each window is one message of this many characters: ~2,400 estimated tokens, more than a
# batch's token budget, so the fixed sweep sends one window per call; before, all twelve
# went in one call.
MESSAGE_CHARS = 7_000
# The fake server takes this long per character it embeds: ~1 s per window.
SECONDS_PER_CHAR = 1.0 / MESSAGE_CHARS
SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


def _serve(home: Path, port: int, model_url: str, log_path: Path) -> ServeProcess:
    settings = {
        "MEMORY_HOME": str(home),
        "MEMORY_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
        "MEMORY_POLICY_MODEL": "hash:384",
        "MEMORY_HISTORY_MODEL": "ollama:bge-m3",
        "MEMORY_OLLAMA_URL": model_url,
        "MEMORY_SWEEP_DEBOUNCE": "0",
        # Passes every second, woken by ingest or not.
        "MEMORY_SWEEP_INTERVAL": "1",
    }
    return ServeProcess(settings, port=port, log_path=log_path)


def _events() -> list[dict[str, Any]]:
    start = datetime.now(UTC) - timedelta(days=1)
    events = []
    for i in range(WINDOWS):
        words = " ".join(f"window{i}word{j}" for j in range(MESSAGE_CHARS // 16))
        events.append(
            {
                "event_id": f"e{i}",
                "provider": "slack",
                "channel_id": "C1",
                "sender": "ali",
                "text": words[:MESSAGE_CHARS],
                # An hour apart: each message is a window of its own, closed long ago.
                "occurred_at": (start + timedelta(hours=i)).isoformat(),
            }
        )
    return events


def _embedded_inputs(server: FakeOllama) -> list[str]:
    """The window texts the model server was sent (not the start-up warm-up's queries)."""
    texts = (text for post in server.posts() for text in post.body["input"])
    return [text for text in texts if text not in WARM_QUERIES]


def test_sigterm_mid_sweep_exits_within_the_drain_time_and_loses_nothing(
    cluster_home: Path,
) -> None:
    server = FakeOllama()
    server.native_dims = 1024
    server.embed_seconds_per_char = SECONDS_PER_CHAR
    server.start()
    home, port = seeded_home(cluster_home / "home"), free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = cluster_home / "serve.log"
    try:
        first = _serve(home, port, server.url, log_path)
        try:
            first.wait_healthy(STARTUP_DEADLINE_SECONDS)
            assert (
                http.put(
                    f"{base}{SEMANTIC}", json={"enabled": True}, headers=AUTH_HEADERS
                ).status_code
                == 200
            )
            ingested = http.post(
                f"{base}/v1/orgs/acme/chat-events",
                json={"events": _events()},
                headers=AUTH_HEADERS,
                timeout=30,
            )
            assert ingested.json()["inserted"] == WINDOWS
            # Wait until a pass is inside a model call.
            deadline = time.monotonic() + 30
            while not server.posts():
                assert time.monotonic() < deadline, "the sweep never called the model"
                time.sleep(0.05)
            time.sleep(0.2)
            signalled = time.monotonic()
            first.stop(timeout_seconds=120)  # exit status 0, or it raises with the log
            took = time.monotonic() - signalled
        finally:
            first.discard()
        assert took < DRAIN_SECONDS, f"shutdown took {took:.1f}s"
        sent_before_restart = len(_embedded_inputs(server))
        assert 0 < sent_before_restart < WINDOWS

        second = _serve(home, port, server.url, log_path)
        try:
            second.wait_healthy(STARTUP_DEADLINE_SECONDS)
            deadline = time.monotonic() + 120
            while True:
                status = http.get(
                    f"{base}/v1/orgs/acme/sweep", headers=AUTH_HEADERS, timeout=30
                ).json()
                if status["partitions"][0]["lag"]["events"] == 0:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.5)
        finally:
            second.stop(timeout_seconds=120)
    finally:
        server.stop()

    # What was embedded before SIGTERM stayed; the rest was embedded after the restart.
    sent = Counter(_embedded_inputs(server))
    assert len(sent) == WINDOWS and set(sent.values()) == {1}
    (partition,) = status["partitions"]
    assert partition["lag"]["events"] == 0
    assert partition["windows_embedded"] == WINDOWS
