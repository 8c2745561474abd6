"""The access line of a real `memory serve`, for requests made with an API key created over
HTTP: it names that key's id (never its secret), the route template, the status and the
request id the response echoes in `X-Request-ID`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.processes import served_on

# The reader key's allowance per minute: its third request in the burst below is refused.
RATE_LIMIT = 3


def access_lines(log: str) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.splitlines() if line.strip()]
    return [e for e in entries if e["logger"] == "memory.access"]


def test_the_access_line_names_the_key_that_made_the_request(
    tmp_path: Path, database_url: str
) -> None:
    home = tmp_path / "home"
    with (
        served_on(
            database_url,
            home,
            MEMORY_LOG_FORMAT="json",
            MEMORY_RATE_LIMIT_PER_MINUTE=str(RATE_LIMIT),
        ) as base,
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        created = client.post(
            "/v1/api-keys",
            json={"name": "reader", "org_id": "acme", "scopes": ["history:read"]},
            headers={**AUTH_HEADERS, "X-Request-ID": "create-key-1"},
        )
        assert created.status_code == 201, created.text
        key_id, secret = created.json()["key_id"], created.json()["secret"]
        reader = {"Authorization": f"Bearer {secret}"}

        searched = client.get(
            "/v1/orgs/acme/history/search",
            params={"q": "invoice"},
            headers={**reader, "X-Request-ID": "search-1"},
        )
        assert searched.status_code == 200, searched.text
        assert searched.headers["X-Request-ID"] == "search-1"
        refused = client.get(
            "/v1/orgs/other/history/search",
            params={"q": "invoice"},
            headers={**reader, "X-Request-ID": "search-other-org"},
        )
        assert refused.status_code == 403
        generated = client.get("/v1/orgs/acme/retention", headers=reader)
        assert generated.status_code == 200
        generated_id = generated.headers["X-Request-ID"]
        unknown = client.get(
            "/v1/orgs/acme/retention",
            headers={"Authorization": f"Bearer {secret}x", "X-Request-ID": "unknown-key"},
        )
        assert unknown.status_code == 401
        statuses = [
            client.get(
                "/v1/orgs/acme/retention",
                headers={**reader, "X-Request-ID": f"burst-{i}"},
            ).status_code
            for i in range(RATE_LIMIT)
        ]
        assert statuses[-1] == 429, statuses
    log = (home / "serve.log").read_text()

    assert secret not in log and TEST_ADMIN_TOKEN not in log
    lines = {e["request_id"]: e for e in access_lines(log)}
    creation = lines["create-key-1"]
    assert (creation["method"], creation["route"], creation["status"]) == (
        "POST",
        "/v1/api-keys",
        201,
    )
    assert creation["key_id"] != key_id  # made with the admin key
    search = lines["search-1"]
    assert (search["method"], search["route"], search["status"], search["key_id"]) == (
        "GET",
        "/v1/orgs/{org_id}/history/search",
        200,
        key_id,
    )
    other = lines["search-other-org"]
    assert (other["route"], other["status"], other["key_id"]) == (
        "/v1/orgs/{org_id}/history/search",
        403,
        key_id,
    )
    assert lines[generated_id]["route"] == "/v1/orgs/{org_id}/retention"
    assert lines[generated_id]["key_id"] == key_id
    assert len(generated_id) == 32
    assert lines["unknown-key"]["status"] == 401 and "key_id" not in lines["unknown-key"]
    limited = lines[f"burst-{RATE_LIMIT - 1}"]
    assert (limited["status"], limited["key_id"]) == (429, key_id)
    assert "invoice" not in log  # the query string is never logged
