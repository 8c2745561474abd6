"""`memory db start|stop|status|url`: the embedded cluster run on its own, shared by servers
through MEMORY_DATABASE_URL, stopped by no server (docs/adr/0060)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psycopg
import pytest
from tests.conftest import AUTH_HEADERS
from tests.e2e.drills import http, memory_here, seeded_home
from tests.e2e.processes import HASH_MODELS, memory_cli, serve, terminate, wait_healthy

from memory.entrypoints.db_cli import EXIT_NOT_RUNNING
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port

# Minutes of real servers and clusters: its file starts first under xdist (docs/adr/0143).
pytestmark = pytest.mark.long(seconds=55)


def _status(home: Path) -> dict[str, object]:
    result = memory_here(home, "db", "status", "--json")
    body: dict[str, object] = json.loads(result.stdout)
    assert result.returncode == (0 if body["running"] else EXIT_NOT_RUNNING), result.stderr
    return body


def test_db_start_outlives_the_command_serves_several_servers_and_only_db_stop_stops_it(
    cluster_home: Path,
) -> None:
    home = seeded_home(cluster_home / "home")
    assert _status(home)["running"] is False
    assert memory_here(home, "db", "url").returncode == EXIT_NOT_RUNNING

    started = memory_cli(home, "db", "start")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    try:
        status = _status(home)
        assert status["running"] is True and status["owner"] == "detached"
        assert memory_here(home, "db", "url").stdout.strip() == url
        tcp_url = memory_here(home, "db", "url", "--tcp").stdout.strip()
        with psycopg.connect(tcp_url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # Starting again is harmless: same cluster, same URL.
        assert memory_here(home, "db", "start").stdout.strip() == url

        # A server through the URL, and one on the same home without it (it attaches).
        ports = [free_port(), free_port()]
        servers = [
            serve(cluster_home / "a", ports[0], MEMORY_DATABASE_URL=url, **HASH_MODELS),
            serve(home, ports[1], **HASH_MODELS),
        ]
        logs = []
        try:
            for port, proc in zip(ports, servers, strict=True):
                assert wait_healthy(f"http://127.0.0.1:{port}/healthz", proc).status_code == 200
            stored = http.post(
                f"http://127.0.0.1:{ports[0]}/v1/policies",
                json={"policy_id": "shared", "content": "Stored through the first server."},
                headers=AUTH_HEADERS,
                timeout=30.0,
            )
            assert stored.status_code == 201, stored.text
            for port in ports[1:]:
                seen = http.get(
                    f"http://127.0.0.1:{port}/v1/policies/shared/versions",
                    headers=AUTH_HEADERS,
                    timeout=10.0,
                )
                assert seen.status_code == 200, seen.text
        finally:
            logs = [terminate(proc) for proc in servers]
        assert all("stopping embedded PostgreSQL" not in log for log in logs)
        assert "attaching to running embedded PostgreSQL" in logs[1]
        assert _status(home)["running"] is True, "no server exiting stops a detached cluster"
    finally:
        stopped = memory_cli(home, "db", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert _status(home)["running"] is False
    assert not EmbeddedPostgres(home).paths.owner_file.exists()
    assert memory_here(home, "db", "stop").returncode == 0, "stopping a stopped cluster is fine"


def test_db_start_detaches_a_cluster_a_server_owns_and_db_stop_refuses_a_server_s_cluster(
    cluster_home: Path,
) -> None:
    home = seeded_home(cluster_home / "home")
    port = free_port()
    owner: subprocess.Popen[bytes] | None = serve(home, port, **HASH_MODELS)
    assert owner is not None
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", owner)
        assert str(_status(home)["owner"]) == f"pid {owner.pid}"
        refused = memory_here(home, "db", "stop")
        assert refused.returncode == 1
        assert "--force" in refused.stderr
        assert _status(home)["running"] is True

        assert memory_cli(home, "db", "start").returncode == 0
        assert _status(home)["owner"] == "detached"
        log = terminate(owner)
        owner = None
        assert "leaving embedded PostgreSQL running" in log
        assert _status(home)["running"] is True
    finally:
        if owner is not None:
            terminate(owner)
        memory_here(home, "db", "stop", "--force")
    assert _status(home)["running"] is False
