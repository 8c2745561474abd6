"""Request limits over HTTP: the body limit (declared, chunked, and a Content-Length that
lies) and the per-key rate limit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.access.conftest import FullApp

pytestmark = pytest.mark.anyio

LIMIT = 4096
CHUNK = 1024
CHUNKS_OFFERED = 64


async def test_a_declared_body_over_the_limit_is_413(full_app: FullApp) -> None:
    async with full_app(max_body_bytes=LIMIT) as running:
        big = b'{"query": "' + b"x" * LIMIT + b'"}'
        response = await running.admin.post(
            "/v1/policies/search", content=big, headers={"content-type": "application/json"}
        )
        small = await running.admin.post("/v1/policies/search", json={"query": "password"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert response.json()["error"]["details"] == {"max_bytes": LIMIT}
    assert small.status_code == 200


async def test_a_chunked_body_is_stopped_at_the_limit_not_read_whole(
    full_app: FullApp,
) -> None:
    pulled = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(CHUNKS_OFFERED):
            pulled += 1
            yield b"x" * CHUNK

    async with full_app(max_body_bytes=LIMIT) as running:
        response = await running.admin.post(
            "/v1/orgs/acme/chat-events",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "payload_too_large"
    # The app stopped reading one chunk past the limit instead of buffering everything.
    assert pulled <= LIMIT // CHUNK + 2


async def test_a_body_longer_than_its_content_length_claims_is_413(full_app: FullApp) -> None:
    """Raw ASGI, as a server passes on what the client sent: the header says 10 bytes."""
    async with full_app(max_body_bytes=LIMIT) as running:
        messages = [
            {"type": "http.request", "body": b"x" * CHUNK, "more_body": True}
            for _ in range(CHUNKS_OFFERED)
        ]
        received = 0

        async def receive() -> dict[str, Any]:
            nonlocal received
            received += 1
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/policies/search",
            "raw_path": b"/v1/policies/search",
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"memory.test"),
                (b"content-type", b"application/json"),
                (b"content-length", b"10"),
                (b"authorization", f"Bearer {TEST_ADMIN_TOKEN}".encode()),
            ],
            "client": ("127.0.0.1", 1),
            "server": ("memory.test", 80),
        }
        await running.app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 413
    assert received <= LIMIT // CHUNK + 2


async def test_rate_limit_per_key_is_429_with_retry_after(full_app: FullApp) -> None:
    async with full_app(rate_limit_per_minute=3) as running:
        first = await running.new_key("first", "acme", "history:read")
        second = await running.new_key("second", "acme", "history:read")
        async with running.client(first) as client, running.client(second) as other:
            answers = [(await client.get("/v1/orgs/acme/sweep")).status_code for _ in range(3)]
            limited = await client.get("/v1/orgs/acme/sweep")
            unaffected = await other.get("/v1/orgs/acme/sweep")
    assert answers == [200, 200, 200]
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "rate_limited"
    # Three a minute: the next token comes 20 seconds after the last one was taken.
    assert limited.headers["retry-after"] == "20"
    assert unaffected.status_code == 200


async def test_no_rate_limit_by_default(full_app: FullApp) -> None:
    async with full_app() as running:
        statuses = {(await running.admin.get("/v1/orgs/acme/sweep")).status_code for _ in range(80)}
    assert statuses == {200}
