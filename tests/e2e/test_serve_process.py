"""`memory serve` as an operator runs it: a real process on the embedded defaults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port

STARTUP_DEADLINE_SECONDS = 60
# Fast, deterministic models: these tests are about processes and the cluster, not meaning.
HASH_MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}


def _wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> httpx.Response:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "memory serve exited during start-up"
        try:
            return httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("memory serve did not answer /healthz in time")


def _serve(home: Path, port: int, **env_overrides: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env["MEMORY_HOME"] = str(home)
    env.update(env_overrides)
    return subprocess.Popen(
        [sys.executable, "-m", "memory.entrypoints.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _terminate(proc: subprocess.Popen[bytes]) -> str:
    """SIGTERM, wait for a clean exit, return the process's log."""
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    log = output.decode()
    assert proc.returncode == 0, log
    return log


def _postgres_processes(data_dir: Path) -> list[int]:
    """Pids of server processes whose command line names `data_dir`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"postgres") and str(data_dir).encode() in argv:
            pids.append(int(entry.name))
    return pids


def _assert_cluster_stopped(home: Path) -> None:
    cluster = EmbeddedPostgres(home)
    assert not cluster.running(), "pg_ctl status: the embedded cluster is still running"
    assert _postgres_processes(cluster.paths.data) == []


def test_serve_starts_embedded_database_answers_health_and_stops_cleanly(
    cluster_home: Path,
) -> None:
    port = free_port()
    proc = _serve(cluster_home / "home", port)
    try:
        response = _wait_healthy(f"http://127.0.0.1:{port}/healthz", proc)
        assert response.status_code == 200
        body = response.json()
        assert body["database"] == "ok"
        assert set(body["contexts"]) == {"policy", "history"}
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0)
        assert "memory_http_requests_total" in metrics.text
    finally:
        log = _terminate(proc)
    assert "stopping embedded PostgreSQL" in log
    pidfiles = list((cluster_home / "home").rglob("postmaster.pid"))
    assert pidfiles == [], "the embedded cluster must be stopped on exit"


def test_server_restarted_after_kill_9_adopts_the_orphaned_cluster_and_stops_it(
    cluster_home: Path,
) -> None:
    home = cluster_home / "home"
    killed_port = free_port()
    killed = _serve(home, killed_port, **HASH_MODELS)
    try:
        _wait_healthy(f"http://127.0.0.1:{killed_port}/healthz", killed)
    finally:
        killed.kill()
        killed.communicate(timeout=30)
    assert EmbeddedPostgres(home).running(), "kill -9 leaves the cluster running"

    port = free_port()
    restarted = _serve(home, port, **HASH_MODELS)
    try:
        response = _wait_healthy(f"http://127.0.0.1:{port}/healthz", restarted)
        assert response.status_code == 200
    finally:
        log = _terminate(restarted)
    assert "adopting running embedded PostgreSQL" in log
    _assert_cluster_stopped(home)


def test_second_server_on_a_home_attaches_and_only_the_owner_stops_the_cluster(
    cluster_home: Path,
) -> None:
    home = cluster_home / "home"
    owner_port, attached_port = free_port(), free_port()
    owner = _serve(home, owner_port, **HASH_MODELS)
    attached: subprocess.Popen[bytes] | None = None
    try:
        _wait_healthy(f"http://127.0.0.1:{owner_port}/healthz", owner)
        attached = _serve(home, attached_port, **HASH_MODELS)
        assert _wait_healthy(f"http://127.0.0.1:{attached_port}/healthz", attached).is_success
        stored = httpx.post(
            f"http://127.0.0.1:{attached_port}/v1/policies",
            json={"policy_id": "shared", "content": "Both servers use one cluster."},
            timeout=30.0,
        )
        assert stored.status_code == 201, stored.text

        log = _terminate(attached)
        attached = None
        assert "attaching to running embedded PostgreSQL" in log
        assert "stopping embedded PostgreSQL" not in log
        assert EmbeddedPostgres(home).running(), "an attached server leaves the cluster running"
        versions = httpx.get(
            f"http://127.0.0.1:{owner_port}/v1/policies/shared/versions", timeout=10.0
        )
        assert versions.status_code == 200, versions.text
    finally:
        if attached is not None:
            _terminate(attached)
        log = _terminate(owner)
    assert "stopping embedded PostgreSQL" in log
    _assert_cluster_stopped(home)
