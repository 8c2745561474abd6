"""A database that accepts connections and then hangs: every process of the cluster is
stopped (SIGSTOP) underneath a running `memory serve`, so connections stay open and nothing
answers (docs/adr/0082). /healthz and searches answer within their budgets; a write or a
read waiting on the database answers 504 once it has waited the configured stall limit
(`MEMORY_DATABASE_STALL_TIMEOUT`, small here so the test is quick), instead of never.
When the cluster continues, the abandoned writes complete: nothing is lost and retrying
duplicates nothing."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
from tests.conftest import AUTH_HEADERS
from tests.e2e.drills import http
from tests.e2e.processes import HASH_MODELS, serve, terminate, wait_healthy

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database, free_port

# The server's MEMORY_DATABASE_STALL_TIMEOUT: below the 10 s default, so the test is quick.
STALL_SECONDS = 3.0
# Every pool holds this many open connections (min = max), all to backends about to be
# stopped: every request then finds a hung connection, none waits for a new one (503).
POOL_SIZE = 12
# Generous bounds for a noisy 2-core machine. Before: writes, and reads such as feature
# flags or the policy listing, did not answer at all while the database was stopped with
# a pooled connection (measured: no answer in 40 s, the client's timeout).
HEALTH_ANSWER_SECONDS = 4.0
SEARCH_ANSWER_SECONDS = 6.0
WRITE_ANSWER_SECONDS = STALL_SECONDS + 6.0
RECOVERY_SECONDS = 15.0
POOL_FILLED_SECONDS = 15.0


def _cluster_processes(cluster: EmbeddedPostgres) -> list[int]:
    """The postmaster of this test's own cluster and its children (every backend)."""
    postmaster = int((cluster.paths.data / "postmaster.pid").read_text().splitlines()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
            children.append(int(entry.name))
    return [postmaster, *children]


def _signal(pid: int, signum: int) -> None:
    # A backend may end between being listed and being signalled (the one that counted
    # the connections below exits as it closes): nothing is left to stop or continue.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _wait_for_connections(cluster_url: str, database: str, count: int) -> None:
    """Until the server holds at least `count` connections to `database` (its pools open
    their connections in the background)."""
    deadline = time.monotonic() + POOL_FILLED_SECONDS
    with psycopg.connect(cluster_url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchone()
            if row is not None and row[0] >= count:
                return
            assert time.monotonic() < deadline, f"{row} connections to {database}"
            time.sleep(0.1)


def _event(event_id: str, text: str) -> dict[str, Any]:
    return {
        "events": [
            {
                "event_id": event_id,
                "provider": "slack",
                "channel_id": "C1",
                "sender": "ali",
                "text": text,
                "occurred_at": "2026-01-01T10:00:00Z",
            }
        ]
    }


def test_a_hung_database_gets_answers_within_bounds_and_loses_nothing(
    cluster: EmbeddedPostgres, cluster_home: Path
) -> None:
    url = create_database(cluster.url, "hang")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = serve(
        cluster_home / "home",
        port,
        MEMORY_DATABASE_URL=url,
        MEMORY_DATABASE_STALL_TIMEOUT=str(STALL_SECONDS),
        MEMORY_POOL_MIN_SIZE=str(POOL_SIZE),
        MEMORY_POOL_MAX_SIZE=str(POOL_SIZE),
        **HASH_MODELS,
    )
    timings: dict[str, float] = {}

    def call(label: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        started = time.monotonic()
        response = http.request(method, base + path, headers=AUTH_HEADERS, timeout=60, **kwargs)
        timings[label] = time.monotonic() - started
        return response

    stopped: list[int] = []
    try:
        assert wait_healthy(f"{base}/healthz", proc).status_code == 200
        first = call("store", "POST", "/v1/policies", json={"policy_id": "p0", "content": "x"})
        assert first.status_code == 201
        ingested = call("ingest", "POST", "/v1/orgs/acme/chat-events", json=_event("e0", "hi"))
        assert ingested.status_code == 201
        _wait_for_connections(cluster.url, "hang", POOL_SIZE)
        # Every pooled connection is now open to a backend that will be stopped.
        stopped = _cluster_processes(cluster)
        for pid in stopped:
            _signal(pid, signal.SIGSTOP)
        calls: list[tuple[str, str, str, dict[str, Any]]] = [
            ("healthz", "GET", "/healthz", {}),
            ("policy search", "POST", "/v1/policies/search", {"json": {"query": "x"}}),
            ("history search", "GET", "/v1/orgs/acme/history/search", {"params": {"q": "hi"}}),
            ("policy store", "POST", "/v1/policies", {"json": {"policy_id": "p1", "content": "y"}}),
            ("ingest hung", "POST", "/v1/orgs/acme/chat-events", {"json": _event("e1", "hello")}),
            ("flags", "GET", "/v1/feature-flags", {}),
            ("policy listing", "GET", "/v1/policies", {}),
        ]
        with ThreadPoolExecutor(len(calls)) as pool:
            answers = dict(
                zip(
                    [c[0] for c in calls],
                    pool.map(lambda c: call(c[0], c[1], c[2], **c[3]), calls),
                    strict=True,
                )
            )
        assert answers["healthz"].status_code == 503
        assert timings["healthz"] < HEALTH_ANSWER_SECONDS
        for label in ("policy search", "history search"):
            assert answers[label].status_code in (503, 504), answers[label].text
        assert timings["policy search"] < SEARCH_ANSWER_SECONDS
        # A history search that got a pooled connection waits like a write.
        assert timings["history search"] < WRITE_ANSWER_SECONDS
        for label in ("policy store", "ingest hung"):
            answer = answers[label]
            assert answer.status_code in (503, 504), answer.text
            if answer.status_code == 504:
                assert answer.json()["error"]["details"]["stage"] == "database"
            assert timings[label] < WRITE_ANSWER_SECONDS
        # Reads on a hung pooled connection are bounded the same way.
        for label in ("flags", "policy listing"):
            answer = answers[label]
            assert answer.status_code == 504, answer.text
            error = answer.json()["error"]
            assert error["code"] == "timeout"
            assert error["details"] == {"timeout_seconds": STALL_SECONDS, "stage": "database"}
            assert timings[label] < WRITE_ANSWER_SECONDS
    finally:
        for pid in stopped:
            _signal(pid, signal.SIGCONT)
        try:
            deadline = time.monotonic() + RECOVERY_SECONDS
            while http.get(f"{base}/healthz", timeout=10).status_code != 200:
                assert time.monotonic() < deadline, "not healthy again after SIGCONT"
                time.sleep(0.2)
            # The abandoned write went through once the database continued, or not at all:
            # storing again is either the first store or a conflict, never a second copy.
            again = call(
                "store again", "POST", "/v1/policies", json={"policy_id": "p1", "content": "y"}
            )
            assert again.status_code in (201, 409), again.text
            versions = call("versions", "GET", "/v1/policies/p1/versions").json()["versions"]
            assert len(versions) == 1
            ingest = call(
                "ingest again", "POST", "/v1/orgs/acme/chat-events", json=_event("e1", "hello")
            )
            assert ingest.json()["inserted"] + ingest.json()["duplicates"] == 1
        finally:
            log = terminate(proc)
            print(log)
            print("\n".join(f"{k:>16}: {v:6.2f} s" for k, v in timings.items()))
