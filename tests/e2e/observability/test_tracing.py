"""Tracing through the real app on a real database (docs/adr/0111), with an in-memory
exporter: a caller's `traceparent` is honoured, a search's trace holds its statements and
its query embedding, the sweep and the projector leave a span per batch and step, and no
span carries chat text, a query, policy content or a secret."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.conftest import TEST_ADMIN_TOKEN, running_app

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure import tracing
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio

CHAT = "chatmarker" + secrets.token_hex(4)
QUERY = "querymarker" + secrets.token_hex(4)
POLICY = "policymarker" + secrets.token_hex(4)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
FLAG = "digital_worker_semantic_search"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _UntilTheModuleEnds(SimpleSpanProcessor):
    """Exports spans while this module runs, then drops them. The provider stays the
    process's (OpenTelemetry allows one), so it is never shut down: a shut-down processor
    logs a warning for every later span, and later tests that read the log saw them."""

    exporting = True

    def on_end(self, span: ReadableSpan) -> None:
        if self.exporting:
            super().on_end(span)


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider, once (OpenTelemetry allows one per process), with the
    statement instrumentation removed afterwards so other tests' connections are plain."""
    exporter = InMemorySpanExporter()
    settings = Settings(tracing=True)
    processor = _UntilTheModuleEnds(exporter)
    provider = tracing.configure(settings, processor)
    assert provider is not None
    try:
        yield exporter
    finally:
        PsycopgInstrumentor().uninstrument()
        processor.exporting = False
        exporter.clear()


def _chat(text: str, minutes_ago: float) -> dict[str, str]:
    at = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return {
        "provider": "slack",
        "channel_id": "C1",
        "sender": "aina",
        "text": text,
        "occurred_at": at.isoformat(),
    }


def _descendants(all_spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    found, frontier = [], [root.context.span_id]
    while frontier:
        parent = frontier.pop()
        for span in all_spans:
            if span.parent is not None and span.parent.span_id == parent:
                found.append(span)
                frontier.append(span.context.span_id)
    return found


def _text_of(span: ReadableSpan) -> str:
    values: list[Any] = [span.name, *dict(span.attributes or {}).values()]
    for event in span.events:
        values += [event.name, *dict(event.attributes or {}).values()]
    return " ".join(str(v) for v in values)


async def test_spans_follow_the_work_and_carry_no_content(
    spans: InMemorySpanExporter, database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(tracing=True)
    app = create_app(lambda: build_services(settings, database_url))
    async with running_app(app) as client:
        await client.put(f"/v1/feature-flags/{FLAG}", json={"enabled": True})
        stored = await client.post(
            "/v1/policies", json={"policy_id": "p1", "content": f"Rotate keys yearly {POLICY}"}
        )
        assert stored.status_code == 201, stored.text
        events = [_chat(f"how do I reset the {CHAT} password {i}", 90 - i) for i in range(3)]
        ingested = await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        assert ingested.status_code == 201, ingested.text
        assert (await client.post("/v1/sweep", json={})).status_code == 200
        spans.clear()
        searched = await client.get(
            "/v1/orgs/acme/history/search",
            params={"q": f"reset {QUERY}"},
            headers={"traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01"},
        )
        assert searched.status_code == 200 and searched.json()["semantic"] == "on"
        search_spans = list(spans.get_finished_spans())
        await client.post("/v1/policies/search", json={"query": f"keys {QUERY}"})
        await client.post("/v1/sweep", json={})
    finished = [*search_spans, *spans.get_finished_spans()]

    [request] = [s for s in search_spans if s.name == "GET /v1/orgs/{org_id}/history/search"]
    assert format(request.context.trace_id, "032x") == TRACE_ID
    assert request.parent is not None and format(request.parent.span_id, "016x") == PARENT_SPAN
    assert request.attributes is not None
    assert request.attributes["http.route"] == "/v1/orgs/{org_id}/history/search"
    assert request.attributes["http.response.status_code"] == 200
    inside = _descendants(search_spans, request)
    assert any(s.attributes and s.attributes.get("db.system") == "postgresql" for s in inside)
    assert any(s.name == "model embed_query" for s in inside)

    everything = [*search_spans, *finished]
    # The earlier calls, before `clear`: checked through the spans still exported since.
    assert any(s.name == "POST /v1/policies/search" for s in finished)
    text = " ".join(_text_of(s) for s in everything)
    for secret in (CHAT, QUERY, POLICY, TEST_ADMIN_TOKEN):
        assert secret not in text


async def test_the_sweep_and_the_projector_leave_a_span_per_batch_and_step(
    spans: InMemorySpanExporter, database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(tracing=True)
    app = create_app(lambda: build_services(settings, database_url))
    spans.clear()
    async with running_app(app) as client:
        await client.put(f"/v1/feature-flags/{FLAG}", json={"enabled": True})
        stored = await client.post(
            "/v1/policies", json={"policy_id": "p2", "content": f"Lock screens {POLICY}"}
        )
        assert stored.status_code == 201, stored.text
        events = [_chat(f"the {CHAT} printer is jammed again {i}", 90 - i) for i in range(3)]
        await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        assert (await client.post("/v1/sweep", json={})).status_code == 200
    finished = list(spans.get_finished_spans())
    names = [s.name for s in finished]
    assert "history sweep batch" in names
    assert "model embed_documents" in names
    steps = [s for s in finished if s.name == "policy projector step"]
    assert steps and all(s.attributes and s.attributes["memory.step"] for s in steps)
    text = " ".join(_text_of(s) for s in finished)
    for secret in (CHAT, POLICY, TEST_ADMIN_TOKEN):
        assert secret not in text
