"""`memory serve` started while PostgreSQL is down (docs/adr/0081): it starts anyway,
answers /healthz and /v1 with 503 until the database answers, then migrates, starts its
workers and serves, without a restart. A database that answers and refuses the
configuration (credentials, URL, database name, a newer schema) stops start-up at once and
says why."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.conftest import AUTH_HEADERS
from tests.e2e.drills import http, memory_here
from tests.e2e.processes import (
    HASH_MODELS,
    serve,
    stack_traces,
    terminate,
    wait_healthy,
)

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database, free_port

# Generous bounds for a noisy 2-core machine.
ANSWER_SECONDS = 2.5
# After the database is back: one retry a second, then migrations and both contexts.
RECOVERY_SECONDS = 30.0
# A refused configuration: start-up stops at once (the pool alone would wait 30 s).
REFUSAL_SECONDS = 25.0


def _timed(method: str, url: str, **kwargs: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = http.request(method, url, timeout=30.0, **kwargs)
    return response, time.monotonic() - started


def _until(condition: Any, seconds: float) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, "condition not reached in time"
        time.sleep(0.2)
    return time.monotonic() - started


def test_serve_started_while_postgres_is_down_starts_once_it_answers(
    cluster: EmbeddedPostgres, cluster_home: Path
) -> None:
    url = create_database(cluster.url, "late")
    cluster.stop()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = serve(
        cluster_home / "home",
        port,
        MEMORY_DATABASE_URL=url,
        MEMORY_SWEEP_INTERVAL="3600",  # only a NOTIFY or a (re)connect wakes the sweep
        MEMORY_SWEEP_DEBOUNCE="0.1",
        **HASH_MODELS,
    )
    try:
        first = wait_healthy(f"{base}/healthz", proc)
        assert first.status_code == 503, first.text
        health, seconds = _timed("GET", f"{base}/healthz")
        assert health.status_code == 503 and seconds < ANSWER_SECONDS
        assert health.json()["status"] == "unavailable"
        assert health.json()["database"].startswith("unavailable")
        assert health.json()["starting"] is True
        for method, path, body in (
            ("POST", "/v1/policies/search", {"query": "passwords"}),
            ("POST", "/v1/orgs/acme/chat-events", {"events": []}),
            ("GET", "/v1/api-keys", None),
        ):
            refused, seconds = _timed(method, base + path, json=body, headers=AUTH_HEADERS)
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "database_unavailable"
            assert int(refused.headers["retry-after"]) > 0
            assert seconds < ANSWER_SECONDS
        assert proc.poll() is None

        cluster.start()
        _until(lambda: http.get(f"{base}/healthz", timeout=5).status_code == 200, RECOVERY_SECONDS)
        with psycopg.connect(url) as conn:
            applied = {r[0] for r in conn.execute("SELECT name FROM memory_schema_migrations")}
        assert "0000_extensions.sql" in applied and len(applied) > 5
        # The policy projector runs: a store is searchable at once.
        stored = http.post(
            f"{base}/v1/policies",
            json={"policy_id": "late", "content": "Passwords are reset every 90 days."},
            headers=AUTH_HEADERS,
            timeout=30,
        )
        assert stored.status_code == 201 and stored.json()["searchable"] is True, stored.text
        # The history workers run: an ingested (closed) window is embedded by the sweeper.
        http.put(
            f"{base}/v1/feature-flags/digital_worker_semantic_search",
            json={"enabled": True},
            headers=AUTH_HEADERS,
        ).raise_for_status()
        http.post(
            f"{base}/v1/orgs/acme/chat-events",
            json={
                "events": [
                    {
                        "event_id": "e1",
                        "provider": "slack",
                        "channel_id": "C1",
                        "sender": "ali",
                        "text": "how do I reset my password on the portal",
                        "occurred_at": "2026-01-01T10:00:00Z",
                    }
                ]
            },
            headers=AUTH_HEADERS,
        ).raise_for_status()

        def embedded() -> bool:
            found = http.get(
                f"{base}/v1/orgs/acme/history/search",
                params={"q": "xylophone"},  # in no message: every hit is semantic
                headers=AUTH_HEADERS,
                timeout=10,
            ).json()["results"]
            return any(r["event_id"] == "e1" and r["matched_by"] == "semantic" for r in found)

        _until(embedded, RECOVERY_SECONDS)
    finally:
        log = terminate(proc)
        print(log)
    assert "service started" in log
    assert not stack_traces(log), stack_traces(log)


def _refused_at_start(home: Path, url: str) -> tuple[int, str, float]:
    started = time.monotonic()
    proc = serve(home, free_port(), MEMORY_DATABASE_URL=url, **HASH_MODELS)
    try:
        output, _ = proc.communicate(timeout=REFUSAL_SECONDS * 2)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, output.decode(errors="replace"), time.monotonic() - started


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"user": "nobody", "password": "wrong"}, "password authentication failed"),
        ({"dbname": "no_such_database"}, 'database "no_such_database" does not exist'),
    ],
)
def test_a_configuration_the_database_refuses_stops_start_up_at_once(
    database_url: str, tmp_path: Path, change: dict[str, str], said: str
) -> None:
    code, output, seconds = _refused_at_start(tmp_path, make_conninfo(database_url, **change))
    assert code == 2, output
    assert said in output
    assert "Traceback" not in output
    assert seconds < REFUSAL_SECONDS


def test_a_url_that_is_not_one_stops_start_up(tmp_path: Path) -> None:
    code, output, _ = _refused_at_start(tmp_path, "postgresql://memory@[::1/memory")
    assert code == 2 and "not a valid URL" in output, output


def test_a_newer_schema_stops_start_up_also_when_found_after_waiting(
    cluster: EmbeddedPostgres, cluster_home: Path
) -> None:
    url = create_database(cluster.url, "newer")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE memory_schema_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute("INSERT INTO memory_schema_migrations VALUES ('9999_from_the_future.sql')")
    code, output, _ = _refused_at_start(cluster_home / "first", url)
    assert code == 2 and "newer" in output and "9999_from_the_future.sql" in output, output

    # Down at start: it waits; once the database answers, the schema is found and it stops.
    cluster.stop()
    port = free_port()
    proc = serve(cluster_home / "second", port, MEMORY_DATABASE_URL=url, **HASH_MODELS)
    try:
        assert wait_healthy(f"http://127.0.0.1:{port}/healthz", proc).status_code == 503
        cluster.start()
        output_bytes, _ = proc.communicate(timeout=RECOVERY_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
    output = output_bytes.decode(errors="replace")
    assert proc.returncode == 2, output
    assert "newer" in output and "9999_from_the_future.sql" in output
    assert isinstance(proc, subprocess.Popen)


def test_a_command_says_why_it_cannot_use_the_database(database_url: str, tmp_path: Path) -> None:
    # In this process (docs/adr/0157): the command's answer is the same; a traceback would
    # fail the test here instead of being printed.
    refused = memory_here(
        tmp_path,
        "keys",
        "list",
        MEMORY_DATABASE_URL=make_conninfo(database_url, user="nobody", password="wrong"),
    )
    assert refused.returncode == 2 and "password authentication failed" in refused.stderr
    assert "Traceback" not in refused.stderr
    down = memory_here(
        tmp_path,
        "keys",
        "list",
        MEMORY_DATABASE_URL=f"postgresql://memory@127.0.0.1:{free_port()}/m",
    )
    assert down.returncode == 2 and "unavailable" in down.stderr, down.stderr
    assert "Traceback" not in down.stderr
