"""SIGTERM in the middle of a long sweep (ADR 0044): a real `memory serve` process sweeping
through a slow model server on loopback stops between batches and exits within the drain
time; after a restart the sweep finishes, each window sent to the model exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import httpx
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.integration.embedding.conftest import FakeOllama

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


def _serve(home: Path, port: int, model_url: str, log: IO[bytes]) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env.update(
        {
            "MEMORY_HOME": str(home),
            "MEMORY_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
            "MEMORY_POLICY_MODEL": "hash:384",
            "MEMORY_HISTORY_MODEL": "ollama:bge-m3",
            "MEMORY_OLLAMA_URL": model_url,
            "MEMORY_SWEEP_DEBOUNCE": "0",
            # Passes every second, woken by ingest or not.
            "MEMORY_SWEEP_INTERVAL": "1",
        }
    )
    return subprocess.Popen(
        [sys.executable, "-m", "memory.entrypoints.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _wait_healthy(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "memory serve exited during start-up"
        try:
            if httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("memory serve did not answer /healthz in time")


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
    return [text for post in server.posts() for text in post.body["input"]]


def test_sigterm_mid_sweep_exits_within_the_drain_time_and_loses_nothing(
    cluster_home: Path,
) -> None:
    server = FakeOllama()
    server.native_dims = 1024
    server.embed_seconds_per_char = SECONDS_PER_CHAR
    server.start()
    home, port = cluster_home / "home", free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = cluster_home / "serve.log"
    try:
        with log_path.open("wb") as log:
            first = _serve(home, port, server.url, log)
            try:
                _wait_healthy(base, first)
                assert (
                    httpx.put(
                        f"{base}{SEMANTIC}", json={"enabled": True}, headers=AUTH_HEADERS
                    ).status_code
                    == 200
                )
                ingested = httpx.post(
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
                first.send_signal(signal.SIGTERM)
                first.wait(timeout=120)
                took = time.monotonic() - signalled
            finally:
                if first.poll() is None:
                    first.kill()
                    first.wait()
            assert first.returncode == 0, log_path.read_text()
            assert took < DRAIN_SECONDS, f"shutdown took {took:.1f}s"
            sent_before_restart = len(_embedded_inputs(server))
            assert 0 < sent_before_restart < WINDOWS

            second = _serve(home, port, server.url, log)
            try:
                _wait_healthy(base, second)
                deadline = time.monotonic() + 120
                while True:
                    status = httpx.get(
                        f"{base}/v1/orgs/acme/sweep", headers=AUTH_HEADERS, timeout=30
                    ).json()
                    if status["partitions"][0]["lag"]["events"] == 0:
                        break
                    assert time.monotonic() < deadline, status
                    time.sleep(0.5)
            finally:
                second.send_signal(signal.SIGTERM)
                second.wait(timeout=120)
    finally:
        server.stop()

    # What was embedded before SIGTERM stayed; the rest was embedded after the restart.
    sent = Counter(_embedded_inputs(server))
    assert len(sent) == WINDOWS and set(sent.values()) == {1}
    (partition,) = status["partitions"]
    assert partition["lag"]["events"] == 0
    assert partition["windows_embedded"] == WINDOWS
