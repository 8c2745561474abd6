"""The Starlette application: both contexts' routes, /healthz, /metrics, error mapping, and
a lifespan that runs the background workers."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.entrypoints.bootstrap import Services
from memory.entrypoints.http.errors import EXCEPTION_HANDLERS
from memory.entrypoints.runtime import ContextRuntime
from memory.entrypoints.workers.database_probe import bounded_in_thread, database_problem
from memory.entrypoints.workers.supervisor import start_workers

log = logging.getLogger(__name__)

# /healthz answers within this whatever the database does (an orchestrator's probe has a
# short timeout of its own): the database check and each context's report are cut off here.
HEALTH_TIMEOUT_SECONDS = 1.0

HTTP_REQUESTS = Counter(
    "memory_http_requests_total", "HTTP requests by route and status", ["method", "route", "status"]
)
HTTP_LATENCY = Histogram(
    "memory_http_request_seconds",
    "HTTP request latency by route",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
)


class RequestMetrics:
    """Pure ASGI middleware (no body buffering) that counts requests by route template."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", "unmatched")
            HTTP_REQUESTS.labels(scope["method"], template, str(status)).inc()
            HTTP_LATENCY.labels(scope["method"], template).observe(time.perf_counter() - start)


def create_app(build: Callable[[], Services], *, run_workers: bool = True) -> Starlette:
    """`build` constructs the services (opens the pool, migrates); it runs in a worker thread
    at start-up so that the event loop is never blocked."""
    state: dict[str, Any] = {}

    async def healthz(request: Request) -> Response:
        services: Services = state["services"]
        body: dict[str, Any] = {"status": "ok", "database": "ok", "contexts": {}}
        status = 200

        async def check_database() -> None:
            nonlocal status
            problem = await database_problem(services.database, HEALTH_TIMEOUT_SECONDS)
            if problem is not None:
                body["status"], body["database"] = "unavailable", problem
                status = 503

        async def report(ctx: ContextRuntime) -> None:
            body["contexts"][ctx.name] = await _context_health(ctx)

        async with anyio.create_task_group() as tg:
            tg.start_soon(check_database)
            for ctx in services.contexts:
                tg.start_soon(report, ctx)
        body["contexts"] = {ctx.name: body["contexts"][ctx.name] for ctx in services.contexts}
        return JSONResponse(body, status)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        services = await anyio.to_thread.run_sync(build)
        state["services"] = services
        app.state.services = services
        for ctx in services.contexts:
            for route in ctx.routes():
                app.router.routes.append(route)
        try:
            async with anyio.create_task_group() as tg:
                if run_workers:
                    start_workers(tg, services.contexts, services.database)
                yield
                tg.cancel_scope.cancel()
        finally:
            await anyio.to_thread.run_sync(services.close)

    app = Starlette(
        routes=[Route("/healthz", healthz), Route("/metrics", metrics)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.add_middleware(RequestMetrics)
    return app


def request_shutdown(app: Starlette) -> None:
    """Shutdown has begun: tell every context before the server drains requests, so that
    long background work (a sweep pass) stops meanwhile rather than after the drain."""
    services: Services | None = getattr(app.state, "services", None)
    if services is not None:
        for ctx in services.contexts:
            ctx.request_stop()


async def _context_health(ctx: ContextRuntime) -> dict[str, Any]:
    try:
        report: dict[str, Any] = await bounded_in_thread(HEALTH_TIMEOUT_SECONDS, ctx.health)
    except TimeoutError:
        return {"error": f"no report within {HEALTH_TIMEOUT_SECONDS:g}s"}
    except Exception as exc:
        return {"error": str(exc)}
    return report
