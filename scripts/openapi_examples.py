"""Records the OpenAPI document's examples (src/memory/contract/examples.json) from a real
`memory serve`, so that every example answer is one the service gave (docs/adr/0110).

    .venv/bin/python scripts/openapi_examples.py

Creates a private home in a temporary folder, starts `memory serve` with the hash models
and a fresh admin key, makes one request per operation in an order that gives each
something to act on, and writes each request and its answer. The new key's secret is
replaced by a placeholder of the same form.
"""

from __future__ import annotations

import json
import secrets
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.entrypoints.serve_process import ServeFailed, served  # noqa: E402

OUT = ROOT / "src" / "memory" / "contract" / "examples.json"
HASH_MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}
STARTUP_SECONDS = 120
PLACEHOLDER_SECRET = "mem_Xq3vN8sK2pL0aZ7bC4dE9fG1hJ6kM5nP8rS2tU0wY3z"
FLAG = "digital_worker_semantic_search"


class Recorder:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.examples: dict[str, dict[str, Any]] = {}

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        path_params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        answer = self.client.request(method, path, params=query, json=body)
        if answer.status_code >= 300:
            raise SystemExit(f"{operation}: {answer.status_code} {answer.text}")
        example: dict[str, Any] = {}
        if path_params:
            example["path"] = path_params
        if query:
            example["query"] = query
        if body is not None:
            example["body"] = body
        example["status"] = answer.status_code
        if answer.content:
            example["answer"] = answer.json()
        self.examples[operation] = example
        return example.get("answer")


def record(r: Recorder) -> None:
    flag = {"flag": FLAG}
    r.call(
        "setGlobalFlag",
        "PUT",
        f"/v1/feature-flags/{FLAG}",
        path_params=flag,
        body={"enabled": True},
    )
    r.call("listGlobalFlags", "GET", "/v1/feature-flags")
    r.call("getGlobalFlag", "GET", f"/v1/feature-flags/{FLAG}", path_params=flag)
    travel = {
        "title": "EU travel approval",
        "source": "finance",
        "tags": ["travel", "approval"],
    }
    stored = r.call(
        "storePolicy",
        "POST",
        "/v1/policies",
        body={
            "policy_id": "travel-eu",
            "content": "All business travel within the EU needs a manager's approval before "
            "booking.",
            "metadata": travel,
        },
    )
    r.client.post(
        "/v1/policies",
        json={
            "policy_id": "password-rotation",
            "content": "Passwords are rotated every 90 days; reuse of the last five is refused.",
            "metadata": {
                "title": "Password rotation",
                "source": "it-security",
                "tags": ["security"],
            },
        },
    )
    policy = {"policy_id": "travel-eu"}
    r.call(
        "updatePolicy",
        "PUT",
        "/v1/policies/travel-eu",
        path_params=policy,
        body={
            "content": "All business travel within the EU needs a manager's approval at least "
            "7 days before booking.",
            "metadata": travel,
        },
    )
    r.call("listPolicies", "GET", "/v1/policies", query={"limit": 1, "source": "finance"})
    r.call("getPolicy", "GET", "/v1/policies/travel-eu", path_params=policy)
    r.call("policyVersions", "GET", "/v1/policies/travel-eu/versions", path_params=policy)
    question = "who approves a trip to Berlin?"
    r.call(
        "searchPolicies",
        "POST",
        "/v1/policies/search",
        body={
            "query": question,
            "limit": 5,
            "similarity_threshold": 0.0,
            "filter": {"source": "finance"},
        },
    )
    ref = stored["embedding_ref"]
    r.call(
        "getPolicyByEmbedding",
        "GET",
        f"/v1/embeddings/{ref}",
        path_params={"embedding_ref": ref},
        query={"origin": "search", "query": question},
    )
    r.client.post(
        "/v1/policies", json={"policy_id": "old-vpn", "content": "Use the old VPN client."}
    )
    r.call("deletePolicy", "DELETE", "/v1/policies/old-vpn", path_params={"policy_id": "old-vpn"})
    record_history(r)
    record_access(r)
    r.call("health", "GET", "/healthz")


def record_history(r: Recorder) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(hours=2)
    org = {"org_id": "acme"}
    events = [
        {
            "event_id": "slack:C042:1",
            "provider": "slack",
            "channel_id": "C042",
            "sender": "aina",
            "text": "How do I reset my VPN password? The portal says my token expired.",
            "occurred_at": start.isoformat(),
        },
        {
            "event_id": "slack:C042:2",
            "provider": "slack",
            "channel_id": "C042",
            "sender": "helpdesk-bot",
            "text": "Open the self-service portal, choose 'Reset token' and follow the "
            "e-mail link.",
            "occurred_at": (start + timedelta(minutes=1)).isoformat(),
            "decision": "processed",
        },
    ]
    r.call(
        "ingestChatEvents",
        "POST",
        "/v1/orgs/acme/chat-events",
        path_params=org,
        body={"events": events},
    )
    latest = {**events[0], "event_id": "slack:C042:3", "text": "thanks, that worked"}
    r.client.post(
        "/v1/orgs/acme/chat-events", json={"events": [{**latest, "occurred_at": now.isoformat()}]}
    )
    r.call("runSweep", "POST", "/v1/sweep", body={"org_id": "acme"})
    r.call(
        "searchHistory",
        "GET",
        "/v1/orgs/acme/history/search",
        path_params=org,
        query={"q": "reset VPN password", "limit": 5},
    )
    r.call("sweepStatus", "GET", "/v1/orgs/acme/sweep", path_params=org)
    r.call("searchIndexes", "GET", "/v1/orgs/acme/search-indexes", path_params=org)
    r.call("orgActivity", "GET", "/v1/orgs/acme/activity", path_params=org)
    r.call("serviceActivity", "GET", "/v1/activity")
    r.call("listOrgFlags", "GET", "/v1/orgs/acme/feature-flags", path_params=org)
    org_flag = {"org_id": "acme", "flag": FLAG}
    flag_path = f"/v1/orgs/acme/feature-flags/{FLAG}"
    r.call("setOrgFlag", "PUT", flag_path, path_params=org_flag, body={"enabled": True})
    r.call("getOrgFlag", "GET", flag_path, path_params=org_flag)
    r.call("clearOrgFlag", "DELETE", flag_path, path_params=org_flag)
    r.call("setRetention", "PUT", "/v1/orgs/acme/retention", path_params=org, body={"days": 90})
    r.call("getRetention", "GET", "/v1/orgs/acme/retention", path_params=org)
    r.call("listOrgs", "GET", "/v1/orgs", query={"limit": 1})
    r.call(
        "eraseChatEvents",
        "DELETE",
        "/v1/orgs/acme/chat-events",
        path_params=org,
        body={"event_ids": ["slack:C042:3"]},
    )
    r.call("runPurge", "POST", "/v1/purge", body={"org_id": "acme"})
    closing = {**events[0], "event_id": None, "channel_id": "C7", "text": "closing this workspace"}
    r.client.post("/v1/orgs/globex/chat-events", json={"events": [closing]})
    r.call("eraseOrg", "DELETE", "/v1/orgs/globex", path_params={"org_id": "globex"})


def record_access(r: Recorder) -> None:
    created = r.call(
        "createApiKey",
        "POST",
        "/v1/api-keys",
        body={
            "name": "acme ingest bot",
            "org_id": "acme",
            "scopes": ["history:write"],
            "expires_in_days": 90,
        },
    )
    r.call("listApiKeys", "GET", "/v1/api-keys")
    r.call("getOwnApiKey", "GET", "/v1/api-keys/self")
    key = created["key_id"]
    r.call("revokeApiKey", "DELETE", f"/v1/api-keys/{key}", path_params={"key_id": key})
    r.call("auditLog", "GET", "/v1/audit", query={"org_id": "acme", "limit": 2})
    r.examples["createApiKey"]["answer"]["secret"] = PLACEHOLDER_SECRET


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="memory-openapi-examples-") as tmp:
        token = "mem_" + secrets.token_urlsafe(32)
        settings = {
            "MEMORY_HOME": str(Path(tmp) / "home"),
            "MEMORY_ADMIN_TOKEN": token,
            **HASH_MODELS,
        }
        try:
            with served(
                settings, deadline_seconds=STARTUP_SECONDS, log_path=Path(tmp) / "serve.log"
            ) as server:
                headers = {"Authorization": f"Bearer {token}"}
                with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as client:
                    recorder = Recorder(client)
                    record(recorder)
        except ServeFailed as exc:
            print(exc, file=sys.stderr)
            return 1
    OUT.write_text(json.dumps(recorder.examples, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {len(recorder.examples)} examples to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
