"""PostgreSQL stopped and started again underneath a running `memory serve` (issue 6, item 5).

While it is down, /healthz answers 503 at once and every request fails fast with 503
`database_unavailable` and `Retry-After`, changing nothing. When it is back, the service
recovers by itself within seconds: the pool reconnects, the policy projector and the history
sweeper restart, and everything acknowledged before the outage is still searchable.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.drills import http
from tests.e2e.processes import HASH_MODELS, serve, stack_traces, terminate, wait_healthy

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database, free_port

# Generous bounds for a noisy 2-core machine; before the fix /healthz hung for over 30 s and
# requests for 30 s (then 500), and writes stayed unsearchable for up to a minute afterwards.
HEALTH_ANSWER_SECONDS = 2.0
# Every request's own budget is at most 2 s (MEMORY_DATABASE_TIMEOUT, MEMORY_SEARCH_TIMEOUT).
REQUEST_ANSWER_SECONDS = 4.0
RECOVERY_SECONDS = 10.0
SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


def _ago(minutes: float) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).isoformat()


def _events(channel: str, *texts: str) -> dict[str, Any]:
    return {
        "events": [
            {
                "event_id": f"{channel}-{i}",
                "provider": "slack",
                "channel_id": channel,
                "sender": "ali",
                "text": text,
                "occurred_at": _ago(90 - i),
            }
            for i, text in enumerate(texts)
        ]
    }


class Server:
    def __init__(self, base: str) -> None:
        self.base = base
        self.timings: dict[str, float] = {}

    def call(self, label: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        started = time.monotonic()
        response = http.request(
            method, self.base + path, timeout=60.0, headers=AUTH_HEADERS, **kwargs
        )
        self.timings[label] = time.monotonic() - started
        return response

    def semantic_event_ids(self) -> set[str]:
        # A query no message contains: every hit is semantic (the hash model has no floor).
        body = http.get(
            self.base + "/v1/orgs/acme/history/search",
            params={"q": "xylophone"},
            headers=AUTH_HEADERS,
            timeout=10.0,
        ).json()
        return {r["event_id"] for r in body["results"] if r["matched_by"] == "semantic"}

    def until(self, condition: Callable[[], bool], seconds: float) -> float:
        """Seconds until `condition()` held; fails after `seconds`."""
        started = time.monotonic()
        while not condition():
            assert time.monotonic() - started < seconds, "condition not reached in time"
            time.sleep(0.1)
        return time.monotonic() - started


def _assert_unavailable(response: httpx.Response, seconds: float) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "database_unavailable"
    assert int(response.headers["retry-after"]) > 0
    assert seconds < REQUEST_ANSWER_SECONDS


def test_serve_answers_503_while_postgres_is_down_and_recovers_when_it_returns(
    cluster: EmbeddedPostgres, cluster_home: Path
) -> None:
    url = create_database(cluster.url, "outage")
    port = free_port()
    proc: subprocess.Popen[bytes] | None = serve(
        cluster_home / "home",
        port,
        MEMORY_DATABASE_URL=url,
        MEMORY_ADMIN_TOKEN=TEST_ADMIN_TOKEN,
        MEMORY_SWEEP_INTERVAL="3600",  # only a NOTIFY or a reconnect can wake the sweep
        MEMORY_SWEEP_DEBOUNCE="0.1",
        **HASH_MODELS,
    )
    assert proc is not None
    server = Server(f"http://127.0.0.1:{port}")
    try:
        assert wait_healthy(server.base + "/healthz", proc).status_code == 200
        assert server.call("flag", "PUT", SEMANTIC, json={"enabled": True}).status_code == 200
        before = server.call(
            "store", "POST", "/v1/policies", json={"policy_id": "before", "content": "kept"}
        )
        assert before.status_code == 201 and before.json()["searchable"] is True
        ingested = server.call(
            "ingest",
            "POST",
            "/v1/orgs/acme/chat-events",
            json=_events("C1", "how do I reset my password on the portal"),
        )
        assert ingested.status_code == 201
        server.until(lambda: "C1-0" in server.semantic_event_ids(), RECOVERY_SECONDS)

        cluster.stop()

        health = server.call("healthz down", "GET", "/healthz")
        assert health.status_code == 503
        assert health.json()["database"].startswith("unavailable")
        assert server.timings["healthz down"] < HEALTH_ANSWER_SECONDS
        store = server.call(
            "store down", "POST", "/v1/policies", json={"policy_id": "during", "content": "x"}
        )
        _assert_unavailable(store, server.timings["store down"])
        ingest = server.call(
            "ingest down",
            "POST",
            "/v1/orgs/acme/chat-events",
            json=_events("C9", "the password reset link has expired again"),
        )
        _assert_unavailable(ingest, server.timings["ingest down"])
        history = server.call(
            "history search down", "GET", "/v1/orgs/acme/history/search", params={"q": "x"}
        )
        _assert_unavailable(history, server.timings["history search down"])
        policy_search = server.call(
            "policy search down", "POST", "/v1/policies/search", json={"query": "kept"}
        )
        _assert_unavailable(policy_search, server.timings["policy search down"])
        sweep = server.call("sweep down", "POST", "/v1/sweep")
        _assert_unavailable(sweep, server.timings["sweep down"])
        ref = before.json()["embedding_ref"]
        others: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
            ("PUT", "/v1/policies/before", {"content": "changed"}),
            ("GET", "/v1/policies/before/versions", None),
            ("GET", f"/v1/embeddings/{ref}", None),
            ("GET", "/v1/orgs/acme/sweep", None),
            ("GET", "/v1/feature-flags", None),
            ("PUT", SEMANTIC, {"enabled": False}),
            ("GET", "/v1/orgs/acme/feature-flags", None),
            ("DELETE", "/v1/orgs/acme/feature-flags/digital_worker_semantic_search", None),
            ("GET", "/v1/orgs/acme/retention", None),
            ("PUT", "/v1/orgs/acme/retention", {"days": 1}),
            ("POST", "/v1/purge", None),
        )
        # Every other endpoint too (side by side: each waits its 2 s).
        with ThreadPoolExecutor(max_workers=len(others)) as pool:
            answers = pool.map(
                lambda call: server.call(f"{call[0]} {call[1]} down", *call[:2], json=call[2]),
                others,
            )
            for (method, path, _), answer in zip(others, list(answers), strict=True):
                _assert_unavailable(answer, server.timings[f"{method} {path} down"])

        cluster.start()

        server.timings["healthy again"] = server.until(
            lambda: http.get(server.base + "/healthz", timeout=5.0).status_code == 200,
            RECOVERY_SECONDS,
        )
        after = server.call(
            "store after", "POST", "/v1/policies", json={"policy_id": "after", "content": "new"}
        )
        assert after.status_code == 201, after.text
        assert after.json()["searchable"] is True, "the projector has not resumed"
        for content, policy_id in (("kept", "before"), ("new", "after")):
            found = http.post(
                server.base + "/v1/policies/search",
                json={"query": content},
                headers=AUTH_HEADERS,
                timeout=10.0,
            ).json()["results"]
            assert [r["policy_id"] for r in found] == [policy_id]
        # The ingest refused during the outage left nothing behind.
        again = server.call(
            "ingest after",
            "POST",
            "/v1/orgs/acme/chat-events",
            json=_events("C9", "the password reset link has expired again"),
        )
        assert again.json()["inserted"] == 1 and again.json()["duplicates"] == 0
        # The background sweeper (interval: an hour) is back: new events get embedded.
        server.timings["swept again"] = server.until(
            lambda: "C9-0" in server.semantic_event_ids(), RECOVERY_SECONDS
        )
        assert "C1-0" in server.semantic_event_ids()
        # The refused changes changed nothing.
        assert (
            http.get(server.base + "/v1/orgs/acme/retention", headers=AUTH_HEADERS).json()["days"]
            != 1
        )
        versions = http.get(
            server.base + "/v1/policies/before/versions", headers=AUTH_HEADERS
        ).json()
        assert len(versions["versions"]) == 1
    finally:
        log = terminate(proc)
        print(log)  # shown by pytest when the test fails
    print("\n".join(f"{label:>22}: {seconds:6.2f} s" for label, seconds in server.timings.items()))
    assert not stack_traces(log), stack_traces(log)
