"""`memory serve` as an operator runs it: a real process on the embedded defaults."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import AUTH_HEADERS
from tests.e2e.drills import http, seeded_home
from tests.e2e.processes import HASH_MODELS, admin_headers, serve, terminate, wait_healthy

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port


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
    proc = serve(cluster_home / "home", port, admin_token=False)
    try:
        response = wait_healthy(f"http://127.0.0.1:{port}/healthz", proc)
        assert response.status_code == 200
        body = response.json()
        assert body["database"] == "ok"
        assert set(body["contexts"]) == {"policy", "history"}
        token_file = cluster_home / "home" / "admin-token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        anonymous = http.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0)
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"] == "Bearer"
        metrics = http.get(
            f"http://127.0.0.1:{port}/metrics",
            headers=admin_headers(cluster_home / "home"),
            timeout=2.0,
        )
        assert "memory_http_requests_total" in metrics.text
    finally:
        log = terminate(proc)
    secret = token_file.read_text().strip()
    assert str(token_file.resolve()) in log, "the log says where the admin key is"
    assert secret not in log, "the log never holds the secret"
    assert "stopping embedded PostgreSQL" in log
    pidfiles = list((cluster_home / "home").rglob("postmaster.pid"))
    assert pidfiles == [], "the embedded cluster must be stopped on exit"


def test_a_restart_after_kill_9_adopts_the_cluster_an_attached_server_leaves_it_the_owner_stops_it(
    cluster_home: Path,
) -> None:
    """One home through a server's kill -9, its restart (which adopts the orphaned cluster),
    and a second server on the same home (which attaches): the attached server leaves the
    cluster running, the adopting owner stops it. (Two tests until docs/adr/0157: the owner
    that started its cluster stopping it is the first test's.)"""
    home = seeded_home(cluster_home / "home")
    killed_port = free_port()
    killed = serve(home, killed_port, **HASH_MODELS)
    try:
        wait_healthy(f"http://127.0.0.1:{killed_port}/healthz", killed)
    finally:
        killed.kill()
        killed.communicate(timeout=30)
    assert EmbeddedPostgres(home).running(), "kill -9 leaves the cluster running"

    owner_port, attached_port = free_port(), free_port()
    owner = serve(home, owner_port, **HASH_MODELS)
    attached: subprocess.Popen[bytes] | None = None
    try:
        response = wait_healthy(f"http://127.0.0.1:{owner_port}/healthz", owner)
        assert response.status_code == 200
        attached = serve(home, attached_port, **HASH_MODELS)
        assert wait_healthy(f"http://127.0.0.1:{attached_port}/healthz", attached).is_success
        stored = http.post(
            f"http://127.0.0.1:{attached_port}/v1/policies",
            json={"policy_id": "shared", "content": "Both servers use one cluster."},
            headers=AUTH_HEADERS,
            timeout=30.0,
        )
        assert stored.status_code == 201, stored.text

        log = terminate(attached)
        attached = None
        assert "attaching to running embedded PostgreSQL" in log
        assert "stopping embedded PostgreSQL" not in log
        assert EmbeddedPostgres(home).running(), "an attached server leaves the cluster running"
        versions = http.get(
            f"http://127.0.0.1:{owner_port}/v1/policies/shared/versions",
            headers=AUTH_HEADERS,
            timeout=10.0,
        )
        assert versions.status_code == 200, versions.text
    finally:
        if attached is not None:
            terminate(attached)
        log = terminate(owner)
    assert "adopting running embedded PostgreSQL" in log
    assert "stopping embedded PostgreSQL" in log
    _assert_cluster_stopped(home)
