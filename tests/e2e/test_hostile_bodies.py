"""Hostile request bodies against a real `memory serve`: they are refused with a 422 naming
the field, change nothing, and never hold up `/healthz` or another tenant's search while
they are read (docs/adr/0096). Timings are measured by bench/bodies.py; here the
deadline only tells "answers while hostile bodies arrive" from "waits for them"."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import httpx
import pytest
from tests.conftest import AUTH_HEADERS

from memory.domain.history.chat_event import MAX_EVENTS_PER_REQUEST
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.entrypoints.http.body_scan import MAX_BODY_VALUES
from memory.entrypoints.http.openapi import OPERATIONS

# Before bodies were read off the event loop, one 8 MiB array held every request of the
# process for ~18 s; an answer within this is one that did not wait for it.
ANSWER_SECONDS = 5.0
# How long the hostile clients keep sending.
HOSTILE_SECONDS = 6.0
# The default body limit (MEMORY_MAX_BODY_BYTES): every hostile body stays under it.
MAX_BODY_BYTES = 8 * 1024 * 1024


def zeros(count: int) -> bytes:
    return b",".join([b"0"] * count)


def array_of_events() -> bytes:
    """~8 MiB: an events array of 4 million small items."""
    return b'{"events": [' + zeros(4_000_000) + b"]}"


HOSTILE: dict[str, tuple[str, str, Callable[[], bytes]]] = {
    "8 MiB events array": ("POST", "/v1/orgs/acme/chat-events", array_of_events),
    "4 million values under an unknown field": (
        "POST",
        "/v1/orgs/acme/chat-events",
        lambda: b'{"events": [], "x": [' + zeros(4_000_000) + b"]}",
    ),
    "erasure of 2 million ids": (
        "DELETE",
        "/v1/orgs/acme/chat-events",
        lambda: b'{"event_ids": [' + b",".join([b'"e"'] * 2_000_000) + b"]}",
    ),
    "8 MiB policy text with an escape": (
        "POST",
        "/v1/policies",
        lambda: b'{"policy_id": "p", "content": "\\u0041' + b"a" * 8_000_000 + b'"}',
    ),
    "4 million levels of nesting": ("POST", "/v1/policies", lambda: b"[" * 4_000_000),
}


def send(client: httpx.Client, name: str) -> httpx.Response:
    method, path, body = HOSTILE[name]
    content = body()
    assert len(content) <= MAX_BODY_BYTES
    headers = {**AUTH_HEADERS, "Content-Type": "application/json"}
    return client.request(method, path, content=content, headers=headers)


def chat(text: str) -> dict[str, str]:
    at = datetime.now(UTC) - timedelta(hours=1)
    return {
        "provider": "slack",
        "channel_id": "C1",
        "sender": "ali",
        "text": text,
        "occurred_at": at.isoformat(),
    }


def test_an_8_mib_array_is_refused_naming_the_field_and_changes_nothing(served: str) -> None:
    with httpx.Client(base_url=served, timeout=60) as client:
        refused = send(client, "8 MiB events array")
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["code"] == "validation_error"
        assert error["details"]["fields"] == [
            {
                "field": "events",
                "reason": f"List should have at most {MAX_EVENTS_PER_REQUEST} items",
            }
        ]
        directory = client.get("/v1/orgs", headers=AUTH_HEADERS).json()
        assert "acme" not in [org["org_id"] for org in directory["orgs"]]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_body_is_a_4xx_naming_a_field(served: str, name: str) -> None:
    with httpx.Client(base_url=served, timeout=60) as client:
        refused = send(client, name)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["details"]["fields"][0]["field"]


def test_health_and_another_tenants_search_answer_while_hostile_bodies_arrive(
    served: str,
) -> None:
    with httpx.Client(base_url=served, timeout=ANSWER_SECONDS, headers=AUTH_HEADERS) as client:
        ingested = client.post(
            "/v1/orgs/globex/chat-events", json={"events": [chat("the invoice is late again")]}
        )
        assert ingested.status_code == 201

    stop = threading.Event()
    hostile_answers: list[int] = []
    failures: list[BaseException] = []

    def hostile_client(names: list[str]) -> None:
        try:
            with httpx.Client(base_url=served, timeout=120) as client:
                while not stop.is_set():
                    for name in names:
                        hostile_answers.append(send(client, name).status_code)
        except BaseException as exc:
            failures.append(exc)

    names = sorted(HOSTILE)
    clients = [
        threading.Thread(target=hostile_client, args=(names,)),
        threading.Thread(target=hostile_client, args=(names[::-1],)),
    ]
    for thread in clients:
        thread.start()
    answered: list[tuple[str, int]] = []
    try:
        with httpx.Client(base_url=served, timeout=ANSWER_SECONDS) as client:
            deadline = time.monotonic() + HOSTILE_SECONDS
            while time.monotonic() < deadline:
                health = client.get("/healthz")
                answered.append(("healthz", health.status_code))
                search = client.get(
                    "/v1/orgs/globex/history/search",
                    params={"q": "invoice"},
                    headers=AUTH_HEADERS,
                )
                answered.append(("search", search.status_code))
                assert [hit["text"] for hit in search.json()["results"]] == [
                    "the invoice is late again"
                ]
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=120)
    assert not failures, failures
    assert hostile_answers and set(hostile_answers) == {422}
    assert answered and {status for _, status in answered} == {200}


def test_every_route_that_takes_a_body_checks_its_size_before_decoding(served: str) -> None:
    """Through the one place bodies are read: a route added later is covered as well."""
    body_routes = [op for op in OPERATIONS if op.body is not None]
    assert len(body_routes) >= 10
    values = {"org_id": "acme", "flag": SEMANTIC_SEARCH_FLAG, "policy_id": "p"}
    hostile = b'{"x": [' + zeros(4_000_000) + b"]}"
    with httpx.Client(base_url=served, timeout=60, headers=AUTH_HEADERS) as client:
        for op in body_routes:
            path = re.sub(r"\{(\w+)\}", lambda m: values[m[1]], op.path)
            refused = client.request(op.method, path, content=hostile)
            assert refused.status_code == 422, (op.operation_id, refused.text)
            assert refused.json()["error"]["details"]["fields"] == [
                {"field": "x", "reason": f"the body holds more than {MAX_BODY_VALUES} JSON values"}
            ], op.operation_id


def _connect(base: str) -> socket.socket:
    parts = urlsplit(base)
    assert parts.hostname is not None and parts.port is not None
    sock = socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_SECONDS)
    sock.settimeout(ANSWER_SECONDS)
    return sock


def _head(method: str, path: str, length: int) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: memory.test",
        f"Authorization: {AUTH_HEADERS['Authorization']}",
        "Content-Type: application/json",
        f"Content-Length: {length}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout if it never
    does). Closed with bytes of ours unread, its socket ends with a reset, not a FIN: what
    it sent before arrives first."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while more := sock.recv(65536):
            data += more
    return data


def test_a_refused_8_mib_body_is_answered_and_its_connection_closed_without_the_rest(
    served: str,
) -> None:
    """Only the first 256 KiB of the 8 MiB array go out: the 422 comes with `Connection:
    close` and the server closes the connection, rather than keeping it open to receive and
    discard the other 7.7 MiB (docs/adr/0146)."""
    body = array_of_events()
    with _connect(served) as sock:
        sock.sendall(_head("POST", "/v1/orgs/acme/chat-events", len(body)) + body[: 256 * 1024])
        answer = _until_closed(sock)
    head, _, error = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 422 ")
    assert b"\r\nconnection: close" in head.lower()
    assert b"List should have at most" in error
