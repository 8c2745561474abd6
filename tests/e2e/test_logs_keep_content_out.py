"""A real `memory serve`, logging JSON at DEBUG, handles chat, a policy, searches and a
failing model, each carrying a recognisable marker: the captured log holds its access
lines, the sweep's numbers and the model's outage and recovery, and none of the markers,
nor any secret it was configured with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from psycopg.conninfo import conninfo_to_dict
from tests.conftest import AUTH_HEADERS
from tests.e2e.processes import serve, terminate, wait_healthy
from tests.integration.embedding.conftest import FakeOllama

from memory.infrastructure.postgres.embedded import free_port

CHAT_MARKER = "zqxchatmarker"
POLICY_MARKER = "zqxpolicymarker"
TITLE_MARKER = "zqxtitlemarker"
QUERY_MARKER = "zqxquerymarker"
SECRET_MARKER = "zqxsecretmarker"
MARKERS = (CHAT_MARKER, POLICY_MARKER, TITLE_MARKER, QUERY_MARKER, SECRET_MARKER)


def lines_of(log: str) -> list[dict[str, Any]]:
    entries = []
    for line in log.splitlines():
        if line.strip():
            entries.append(json.loads(line))  # every line is one JSON object
    return entries


def test_logs_hold_numbers_and_ids_but_never_content(tmp_path: Path, database_url: str) -> None:
    fake = FakeOllama()
    fake.native_dims = 1024  # bge-m3's
    fake.start()
    port = free_port()
    password = conninfo_to_dict(database_url).get("password")
    proc = serve(
        tmp_path / "home",
        port,
        MEMORY_DATABASE_URL=database_url,
        MEMORY_POLICY_MODEL="hash:384",
        MEMORY_HISTORY_MODEL="ollama:bge-m3",
        MEMORY_OLLAMA_URL=fake.url,
        MEMORY_MODEL_RETRIES="1",
        MEMORY_SWEEP_INTERVAL="3600",
        MEMORY_SWEEP_DEBOUNCE="3600",
        MEMORY_LOG_FORMAT="json",
        MEMORY_LOG_LEVEL="DEBUG",
        MEMORY_OPENAI_API_KEY=SECRET_MARKER,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{base}/healthz", proc)
        with httpx.Client(base_url=base, timeout=30, headers=AUTH_HEADERS) as client:
            stored = client.post(
                "/v1/policies",
                json={
                    "policy_id": "pw-reset",
                    "content": f"Staff must reset their password {POLICY_MARKER} every 90 days.",
                    "metadata": {"title": TITLE_MARKER},
                },
                headers={"X-Request-ID": "policy-store-1"},
            )
            assert stored.status_code == 201, stored.text
            found = client.post("/v1/policies/search", json={"query": f"password {QUERY_MARKER}"})
            assert found.status_code == 200
            client.put("/v1/feature-flags/digital_worker_semantic_search", json={"enabled": True})
            event = {
                "provider": "slack",
                "channel_id": "C1",
                "sender": "ali",
                "text": f"boleh tolong check invoice {CHAT_MARKER} tak?",
                "occurred_at": "2026-11-30T00:00:00Z",
            }
            assert (
                client.post("/v1/orgs/acme/chat-events", json={"events": [event]}).status_code
                == 201
            )
            # The model fails, quoting what it was sent, as real servers do.
            fake.fail(500, {"error": f"failed on: {CHAT_MARKER}"}, times=2)
            stalled = client.post("/v1/sweep", json={})
            assert stalled.json()["partitions_stalled"] == 1
            fake.fail(500, {"error": f"failed on: {QUERY_MARKER}"}, times=2)
            degraded = client.get("/v1/orgs/acme/history/search", params={"q": QUERY_MARKER})
            assert degraded.json()["semantic"] == "degraded"
            swept = client.post("/v1/sweep", json={})
            assert swept.json()["windows_embedded"] == 1, swept.text
            semantic = client.get("/v1/orgs/acme/history/search", params={"q": QUERY_MARKER})
            assert semantic.json()["semantic"] == "on"
    finally:
        log = terminate(proc)
        fake.stop()

    for marker in (*MARKERS, password):
        if marker:
            assert marker not in log, f"{marker!r} leaked into the log"
    entries = lines_of(log)
    access = [e for e in entries if e["logger"] == "memory.access"]
    assert len(access) >= 8
    store = next(e for e in access if e["request_id"] == "policy-store-1")
    assert (store["method"], store["route"], store["status"]) == ("POST", "/v1/policies", 201)
    assert store["duration_ms"] > 0
    search = [e for e in access if e["route"] == "/v1/orgs/{org_id}/history/search"]
    assert len(search) == 2 and all(len(e["request_id"]) == 32 for e in search)
    sweeps = [e for e in entries if e["message"] == "history.sweep done"]
    assert [e["windows_embedded"] for e in sweeps] == [0, 1]
    assert sweeps[0]["partitions_stalled"] == 1
    messages = [e["message"] for e in entries if e.get("model") == "ollama:bge-m3"]
    assert "model unavailable" in messages
    assert "model recovered" in messages
