"""`memory serve` as an operator runs it: a real process on the embedded defaults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from memory.infrastructure.postgres.embedded import free_port

STARTUP_DEADLINE_SECONDS = 60


def _wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> httpx.Response:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "memory serve exited during start-up"
        try:
            return httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("memory serve did not answer /healthz in time")


def test_serve_starts_embedded_database_answers_health_and_stops_cleanly(
    cluster_home: Path,
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env["MEMORY_HOME"] = str(cluster_home / "home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory.entrypoints.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        response = _wait_healthy(f"http://127.0.0.1:{port}/healthz", proc)
        assert response.status_code == 200
        body = response.json()
        assert body["database"] == "ok"
        assert set(body["contexts"]) == {"policy", "history"}
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0)
        assert "memory_http_requests_total" in metrics.text
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    log = output.decode()
    assert proc.returncode == 0, log
    assert "stopping embedded PostgreSQL" in log
    pidfiles = list((cluster_home / "home").rglob("postmaster.pid"))
    assert pidfiles == [], "the embedded cluster must be stopped on exit"
