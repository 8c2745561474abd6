"""The restore drill (issue 19, docs/operations.md): real servers, real PostgreSQL, real
pgBackRest. Ingest, store, create a key -> `memory db backup` (online) -> more writes ->
note T -> erase an org, a sender, delete a policy, more writes -> stop -> `memory db restore
--until T` -> serve: what was acknowledged before T is there and nothing after it, but the
erasures recorded after T are applied again; search and new writes work; nothing is
embedded twice."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import AUTH_HEADERS
from tests.e2e.processes import HASH_MODELS, memory_cli, serve, terminate, wait_healthy

from memory.entrypoints.serve_process import ServeProcess
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"
QUIET = {**HASH_MODELS, "MEMORY_SWEEP_INTERVAL": "3600", "MEMORY_SWEEP_DEBOUNCE": "0.2"}
WAIT_SECONDS = 60.0


class Api:
    def __init__(self, proc: ServeProcess) -> None:
        self.proc = proc

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", AUTH_HEADERS)
        return httpx.request(
            method, self.proc.base_url + path, headers=headers, timeout=60.0, **kwargs
        )

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.call(method, path, **kwargs)
        assert response.status_code in (200, 201, 204), f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    def texts_embedded(self) -> int:
        metrics = self.call("GET", "/metrics").text
        pattern = r'^memory_model_texts_total\{[^}]*operation="embed_documents"[^}]*\} (\S+)$'
        return int(sum(float(m) for m in re.findall(pattern, metrics, re.MULTILINE)))

    def windows_embedded(self) -> int:
        health = self.ok("GET", "/healthz")
        return int(health["contexts"]["history"]["sweeper"]["windows_embedded_total"])


def _events(org: str, batch: int, sender: str = "ali") -> dict[str, Any]:
    """One closed conversation (hours ago) of three messages."""
    start = datetime.now(UTC) - timedelta(hours=20 - batch)
    return {
        "events": [
            {
                "event_id": f"{org}-{batch}-{i}",
                "provider": "slack",
                "channel_id": "general",
                "sender": sender,
                "text": f"batch {batch} message {i}: the xylophone budget review is ready",
                "occurred_at": (start + timedelta(minutes=i)).isoformat(),
            }
            for i in range(3)
        ]
    }


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _history_ids(api: Api, org: str) -> set[str]:
    found = api.ok("GET", f"/v1/orgs/{org}/history/search", params={"q": "xylophone"})
    return {hit["event_id"] for hit in found["results"]}


def _serve(home: Path) -> Api:
    port = free_port()
    proc = serve(home, port, **QUIET)
    assert wait_healthy(f"http://127.0.0.1:{port}/healthz", proc).status_code in (200, 503)
    proc.wait_healthy(WAIT_SECONDS)
    return Api(proc)


def _cli_json(home: Path, *args: str) -> dict[str, Any]:
    result = memory_cli(home, *args, "--json")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _write(api: Api, policy: str, org: str, batch: int, sender: str = "ali") -> None:
    api.ok("POST", "/v1/policies", json={"policy_id": policy, "content": f"Policy {policy}."})
    api.ok("POST", f"/v1/orgs/{org}/chat-events", json=_events(org, batch, sender))


def test_restore_drill_until_a_moment_reapplies_later_erasures_and_embeds_nothing_twice(
    cluster_home: Path,
) -> None:
    home = cluster_home / "home"
    api = _serve(home)
    try:
        api.ok("PUT", SEMANTIC, json={"enabled": True})
        _write(api, "keep", "acme", 1)
        _write(api, "erased-later", "globex", 1)
        api.ok("POST", "/v1/orgs/acme/chat-events", json=_events("acme", 2, sender="bob"))
        key = api.ok("POST", "/v1/api-keys", json={"name": "drill", "scopes": ["policies:read"]})
        api.ok("POST", "/v1/sweep")
        _until(lambda: api.windows_embedded() == 3, "three windows embedded")

        backup = _cli_json(home, "db", "backup")  # online: the server keeps serving
        assert backup["backup"]["type"] == "full"
        listed = _cli_json(home, "db", "backups")
        assert [b["label"] for b in listed["backups"]] == [backup["backup"]["label"]]

        _write(api, "before-t", "acme", 3)
        api.ok("POST", "/v1/sweep")
        _until(lambda: api.windows_embedded() == 4, "four windows embedded")
        time.sleep(1.0)
        target = datetime.now(UTC)
        time.sleep(1.0)

        api.ok("DELETE", "/v1/orgs/globex")
        api.ok("DELETE", "/v1/orgs/acme/chat-events", json={"sender": "bob"})
        api.ok("DELETE", "/v1/policies/erased-later")
        _write(api, "after-t", "acme", 4)
        assert "acme-4-0" in _history_ids(api, "acme")
    finally:
        terminate(api.proc)

    restored = _cli_json(home, "db", "restore", "--until", target.isoformat())
    assert restored["erasures_reapplied"] == 3, restored
    assert restored["from_backup"] == backup["backup"]["label"]

    api = _serve(home)
    try:
        # Acknowledged before T: there. After T: not there. Erased after T: erased again.
        for policy, status in (("keep", 200), ("before-t", 200), ("after-t", 404)):
            assert api.call("GET", f"/v1/policies/{policy}").status_code == status, policy
        assert api.call("GET", "/v1/policies/erased-later").status_code == 404
        acme = _history_ids(api, "acme")
        assert {"acme-1-0", "acme-3-0"} <= acme
        assert not any(e.startswith(("acme-2-", "acme-4-")) for e in acme), acme
        assert _history_ids(api, "globex") == set()
        # The key created before the backup still works.
        own = api.call(
            "GET", "/v1/api-keys/self", headers={"Authorization": f"Bearer {key['secret']}"}
        )
        assert own.status_code == 200, own.text
        actions = [e["action"] for e in api.ok("GET", "/v1/audit", params={"limit": 50})["entries"]]
        assert actions.count("org.erased") == 1 and actions.count("policy.deleted") == 1
        # Search works, semantic hits included; new writes work.
        found = api.ok("POST", "/v1/policies/search", json={"query": "Policy keep."})
        assert "keep" in {hit["policy_id"] for hit in found["results"]}
        _write(api, "new", "acme", 5)
        api.ok("POST", "/v1/sweep")
        _until(lambda: "acme-5-0" in _history_ids(api, "acme"), "the new window searchable")
        # Nothing embedded twice: this server embedded the new policy and the new window,
        # and no restored policy or window again.
        _until(lambda: api.windows_embedded() >= 1, "the new window embedded")
        time.sleep(1.0)
        assert api.windows_embedded() == 1
        assert api.texts_embedded() == 2
    finally:
        terminate(api.proc)
    assert not EmbeddedPostgres(home).running()
