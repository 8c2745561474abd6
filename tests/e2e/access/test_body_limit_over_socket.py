"""The body limit over a real socket against `memory serve` (uvicorn's HTTP parser in front,
not an in-process transport): an oversize body declared by Content-Length and one sent
chunked without it both get 413 `payload_too_large` with the error body, before the body
has been sent in full, and the server stays healthy (docs/security.md, "Request limits")."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from tests.conftest import TEST_ADMIN_TOKEN, ClonedDatabases
from tests.e2e.processes import served_on

from memory.infrastructure.postgres.embedded import with_database

LIMIT = 64 * 1024
CHUNK = 16 * 1024
AUTH = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
TOO_LARGE = {
    "error": {
        "code": "payload_too_large",
        "message": f"request body larger than {LIMIT} bytes",
        "details": {"max_bytes": LIMIT},
    }
}
# Generous: an answer that needs the rest of a body never comes at all, so this only bounds
# how long a failing test waits.
ANSWER_SECONDS = 10.0


@dataclass(frozen=True)
class Served:
    base: str
    home: Path

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.base)
        assert parts.hostname is not None and parts.port is not None
        return parts.hostname, parts.port


@pytest.fixture(scope="module")
def served(
    pg_admin_url: str, cloned_databases: ClonedDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    name = cloned_databases.take()
    try:
        url = with_database(pg_admin_url, name)
        home = tmp_path_factory.mktemp("body-limit")
        with served_on(url, home, MEMORY_MAX_BODY_BYTES=str(LIMIT)) as base:
            yield Served(base, home)
        log = (home / "serve.log").read_text(errors="replace")
        assert "Traceback" not in log and "Exception in ASGI" not in log, log
    finally:
        cloned_databases.drop(name)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def _head(path: str, *headers: str) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: memory.test",
        f"Authorization: Bearer {TEST_ADMIN_TOKEN}",
        "Content-Type: application/json",
        *headers,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer(sock: socket.socket) -> Answer:
    """Read one response (with a Content-Length) from `sock`, skipping `100 Continue`."""
    data = b""
    while True:
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            assert more, f"connection closed before an answer: {data!r}"
            data += more
        head, _, data = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        if status != 100:
            break
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    length = int(headers["content-length"])
    while len(data) < length:
        more = sock.recv(65536)
        assert more, "connection closed in the middle of the answer"
        data += more
    return Answer(status, headers, data[:length])


def _connect(served: Served) -> socket.socket:
    sock = socket.create_connection(served.address, timeout=ANSWER_SECONDS)
    sock.settimeout(ANSWER_SECONDS)
    return sock


def test_a_declared_oversize_body_is_refused_before_it_is_sent(served: Served) -> None:
    """Only the head goes out, announcing 1 GiB: the 413 must come without waiting for it."""
    with _connect(served) as sock:
        sock.sendall(_head("/v1/policies/search", f"Content-Length: {1 << 30}"))
        answer = _answer(sock)
        # Closed after the answer: the server does not wait for (and discard) the GiB.
        assert sock.recv(65536) == b""
    assert answer.status == 413
    assert json.loads(answer.body) == TOO_LARGE
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["connection"] == "close"


def test_a_chunked_body_is_refused_once_past_the_limit_without_its_end(served: Served) -> None:
    """Chunks up to just past the limit, then nothing more (no last chunk): the server must
    answer from what it counted, not wait for the end of the body."""
    with _connect(served) as sock:
        sock.sendall(_head("/v1/orgs/acme/chat-events", "Transfer-Encoding: chunked"))
        for _ in range(LIMIT // CHUNK + 1):
            sock.sendall(f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n")
        answer = _answer(sock)
    assert answer.status == 413
    assert json.loads(answer.body) == TOO_LARGE


def test_a_body_refused_before_it_is_read_keeps_the_connection_when_its_rest_is_small(
    served: Served,
) -> None:
    """A key refused before the body is read: the server drains a rest this small (at most
    `DRAIN_MAX_BYTES`) and the same connection serves the next request."""
    body = b"x" * (LIMIT // 2)
    with _connect(served) as sock:
        refused = _head("/v1/policies/search", f"Content-Length: {len(body)}")
        sock.sendall(refused.replace(TEST_ADMIN_TOKEN.encode(), b"mem_not_a_key") + body)
        assert _answer(sock).status == 401
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: memory.test\r\n\r\n")
        health = _answer(sock)
    assert health.status == 200 and "connection" not in health.headers


def test_oversize_uploads_from_ordinary_clients_get_the_error_body(served: Served) -> None:
    """httpx sends the whole body (declared, and chunked from a generator) as most clients
    do; each gets the 413 with the error body, and the same connection serves the next
    request."""

    def chunks() -> Iterator[bytes]:
        for _ in range(4 * LIMIT // CHUNK):
            yield b"x" * CHUNK

    with httpx.Client(base_url=served.base, headers=AUTH, timeout=ANSWER_SECONDS) as client:
        declared = client.post(
            "/v1/policies/search",
            content=b"x" * (4 * LIMIT),
            headers={"content-type": "application/json"},
        )
        assert declared.status_code == 413 and declared.json() == TOO_LARGE
        chunked = client.post(
            "/v1/orgs/acme/chat-events",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        assert chunked.status_code == 413 and chunked.json() == TOO_LARGE
        after = client.post("/v1/policies/search", json={"query": "passwords"})
        assert after.status_code == 200, after.text


def test_the_server_stays_healthy_under_concurrent_oversize_uploads(served: Served) -> None:
    refused: list[int] = []

    def upload() -> None:
        with _connect(served) as sock:
            sock.sendall(_head("/v1/orgs/acme/chat-events", "Transfer-Encoding: chunked"))
            for _ in range(LIMIT // CHUNK + 1):
                sock.sendall(f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n")
            refused.append(_answer(sock).status)

    threads = [threading.Thread(target=upload) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert refused == [413] * len(threads)
    health = httpx.get(f"{served.base}/healthz", timeout=ANSWER_SECONDS)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    small = httpx.post(
        f"{served.base}/v1/policies/search", json={"query": "x"}, headers=AUTH, timeout=10
    )
    assert small.status_code == 200
