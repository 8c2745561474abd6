"""What `BodyLimit` does with the rest of a body answered before it arrived: a large rest
closes the connection (`Connection: close`, which the server obeys by closing after the
answer instead of receiving and discarding the rest); a small one, or none, keeps it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from memory.entrypoints.http.body_limit import DRAIN_MAX_BYTES, BodyLimit

LIMIT = 8 * 1024 * 1024
CHUNK = 64 * 1024


def scope_with(*headers: tuple[bytes, bytes]) -> Scope:
    return {"type": "http", "method": "POST", "path": "/v1/x", "headers": list(headers)}


def declared(size: int) -> tuple[bytes, bytes]:
    return (b"content-length", str(size).encode())


CHUNKED = (b"transfer-encoding", b"chunked")


def app_reading(chunks: int) -> Any:
    """An app that takes `chunks` messages of the body, then answers 422."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        for _ in range(chunks):
            await receive()
        await send({"type": "http.response.start", "status": 422, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


def answer(scope: Scope, app: Any, body_size: int) -> Message:
    """The response start `BodyLimit` lets out, the body arriving in 64 KiB chunks."""
    sent: list[Message] = []
    offered = 0

    async def receive() -> Message:
        nonlocal offered
        part = min(CHUNK, body_size - offered)
        offered += part
        return {"type": "http.request", "body": b"x" * part, "more_body": offered < body_size}

    async def send(message: Message) -> None:
        sent.append(message)

    anyio.run(BodyLimit(app, max_bytes=lambda: LIMIT), scope, receive, send)
    return next(m for m in sent if m["type"] == "http.response.start")


def closes(start: Message) -> bool:
    return (b"connection", b"close") in start["headers"]


def test_an_answer_before_most_of_a_large_body_closes_the_connection() -> None:
    size = 8_000_000
    assert closes(answer(scope_with(declared(size)), app_reading(1), size))
    # Answered before reading any of it (a key refused, no such route): the same.
    assert closes(answer(scope_with(declared(size)), app_reading(0), size))


@pytest.mark.parametrize("size", [0, CHUNK, DRAIN_MAX_BYTES + CHUNK])
def test_a_small_rest_or_a_body_read_to_its_end_keeps_the_connection(size: int) -> None:
    chunks = max(1, -(-size // CHUNK))
    assert not closes(answer(scope_with(declared(size)), app_reading(chunks), size))
    # At most DRAIN_MAX_BYTES left: drained, not worth a new connection.
    assert not closes(answer(scope_with(declared(size)), app_reading(1), size))


def test_a_request_without_a_body_keeps_the_connection() -> None:
    assert not closes(answer(scope_with(), app_reading(0), 0))


def test_a_chunked_body_answered_before_its_last_chunk_closes_the_connection() -> None:
    """Its rest is unknown: it may be anything up to the limit."""
    assert closes(answer(scope_with(CHUNKED), app_reading(1), 4 * CHUNK))
    assert not closes(answer(scope_with(CHUNKED), app_reading(4), 4 * CHUNK))


def test_a_declared_body_over_the_limit_is_413_and_closes_the_connection() -> None:
    start = answer(scope_with(declared(LIMIT + 1)), app_reading(0), LIMIT + 1)
    assert start["status"] == 413 and closes(start)
