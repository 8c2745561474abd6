"""One access line per HTTP request: its id (the client's X-Request-ID or a new one, echoed
in the response), method, route template, status, duration and the API key's id."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memory.entrypoints.http.app import RequestMetrics
from memory.entrypoints.logging_setup import RequestIdFilter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Key:
    key_id: str


class SetsKey:
    """Stands in for the API-key middleware: it leaves the key in the request's state."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/keyed"):
            scope.setdefault("state", {})["api_key"] = Key("k_123")
        await self.app(scope, receive, send)


async def org_search(request: Request) -> Response:
    logging.getLogger("memory.test").info("handling")
    return JSONResponse({"org": request.path_params["org_id"]})


def app() -> Starlette:
    application = Starlette(
        routes=[
            Route("/v1/orgs/{org_id}/history/search", org_search),
            Route("/keyed/{thing}", org_search_keyed, methods=["POST"]),
        ]
    )
    application.add_middleware(SetsKey)
    application.add_middleware(RequestMetrics)
    return application


async def org_search_keyed(request: Request) -> Response:
    return JSONResponse({}, 201)


def client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app()), base_url="http://t")


def access_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "memory.access"]


async def test_the_line_names_the_route_template_not_the_path_or_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with client() as c:
        response = await c.get("/v1/orgs/acme/history/search", params={"q": "secret words"})
    assert response.status_code == 200
    (line,) = access_lines(caplog)
    fields = line.__dict__
    assert fields["route"] == "/v1/orgs/{org_id}/history/search"
    assert fields["method"] == "GET"
    assert fields["status"] == 200
    assert fields["duration_ms"] >= 0
    assert "secret" not in line.getMessage()
    assert "acme" not in line.getMessage()
    assert "key_id" not in fields


async def test_a_sent_request_id_is_kept_echoed_and_on_every_line_of_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdFilter())  # as configure_logging's handler has
    async with client() as c:
        response = await c.get("/v1/orgs/acme/history/search", headers={"X-Request-ID": "abc-1"})
    assert response.headers["x-request-id"] == "abc-1"
    handling = next(r for r in caplog.records if r.getMessage() == "handling")
    assert handling.__dict__["request_id"] == "abc-1"
    (line,) = access_lines(caplog)
    assert line.__dict__["request_id"] == "abc-1"


async def test_without_a_usable_request_id_a_new_one_is_made(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with client() as c:
        first = await c.get("/v1/orgs/a/history/search")
        second = await c.get("/v1/orgs/a/history/search", headers={"X-Request-ID": "bad id\t!"})
    ids = {first.headers["x-request-id"], second.headers["x-request-id"]}
    assert len(ids) == 2
    assert "bad id\t!" not in ids
    assert [r.__dict__["request_id"] for r in access_lines(caplog)] == [
        first.headers["x-request-id"],
        second.headers["x-request-id"],
    ]


async def test_the_key_id_the_access_middleware_set_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with client() as c:
        await c.post("/keyed/x")
        await c.get("/nowhere/at/all")
    keyed, unmatched = access_lines(caplog)
    assert keyed.__dict__["key_id"] == "k_123"
    assert keyed.__dict__["status"] == 201
    assert unmatched.__dict__["route"] == "unmatched"
    assert unmatched.__dict__["status"] == 404
