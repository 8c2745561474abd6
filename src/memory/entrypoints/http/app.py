"""The Starlette application: both contexts' routes, /healthz, /metrics, error mapping, and
a lifespan that runs the background workers."""

from __future__ import annotations

import functools
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskGroup
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.application.errors import DatabaseUnavailable
from memory.domain.access.scopes import Scope as KeyScope
from memory.entrypoints.bootstrap import Services
from memory.entrypoints.http import (
    access_routes,
    activity_routes,
    console_routes,
    history_routes,
    policy_routes,
)
from memory.entrypoints.http.access import Access, AccessControl, AccessTable
from memory.entrypoints.http.body_limit import BodyLimit
from memory.entrypoints.http.database_stall import StallLimit
from memory.entrypoints.http.errors import EXCEPTION_HANDLERS, handle_domain_error
from memory.entrypoints.http.openapi import contract_routes
from memory.entrypoints.logging_setup import REQUEST_ID
from memory.entrypoints.runtime import ContextRuntime
from memory.entrypoints.warm_up import warm_up
from memory.entrypoints.workers.database_probe import bounded_in_thread, database_problem
from memory.entrypoints.workers.supervisor import start_workers
from memory.infrastructure import backup_metrics, build_info  # noqa: F401 (registers the backup age)
from memory.infrastructure.postgres.availability import is_unreachable

log = logging.getLogger(__name__)
access_log = logging.getLogger("memory.access")

REQUEST_ID_HEADER = b"x-request-id"
_REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# /healthz answers within this whatever the database does (an orchestrator's probe has a
# short timeout of its own): the database check and each context's report are cut off here.
HEALTH_TIMEOUT_SECONDS = 1.0
# While the database has not been reachable since start-up, building the service is tried
# again this often (each try fails at once while nothing listens, docs/adr/0081).
STARTUP_RETRY_SECONDS = 1.0

# Every counter and histogram would get a `*_created` twin holding its creation time: noise
# on every scrape, which no dashboard reads.
disable_created_metrics()  # type: ignore[no-untyped-call]

TRACER = trace.get_tracer("memory.http")

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
    """Pure ASGI middleware (no body buffering), outermost: gives each request its id
    (`X-Request-ID` if the client sent a usable one, else a new one, returned in the
    response header and attached to every log line logged meanwhile), counts it by route
    template and logs one access line. The raw path and query string are never logged: they
    may hold a search query."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        request_id = request_id_of(scope)
        token = REQUEST_ID.set(request_id)
        # The span is named by its route template once routing has found it; the caller's
        # `traceparent` (W3C) makes it a child of the caller's span.
        span = TRACER.start_span(
            scope["method"],
            context=propagate.extract(_header_carrier(scope)),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": scope["method"], "memory.request_id": request_id},
        )
        span_token = otel_context.attach(trace.set_span_in_context(span))

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (REQUEST_ID_HEADER, request_id.encode()),
                    ],
                }
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            seconds = time.perf_counter() - start
            template = route_template(scope)
            HTTP_REQUESTS.labels(scope["method"], template, str(status)).inc()
            HTTP_LATENCY.labels(scope["method"], template).observe(seconds)
            fields: dict[str, Any] = {
                "request_id": request_id,
                "method": scope["method"],
                "route": template,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
            }
            key_id = getattr(scope.get("state", {}).get("api_key"), "key_id", None)
            if key_id is not None:
                fields["key_id"] = key_id
            access_log.info("%s %s %d", scope["method"], template, status, extra=fields)
            span.update_name(f"{scope['method']} {template}")
            span.set_attributes({"http.route": template, "http.response.status_code": status})
            if status >= 500:
                span.set_status(StatusCode.ERROR)
            span.end()
            otel_context.detach(span_token)
            REQUEST_ID.reset(token)


def _header_carrier(scope: Scope) -> dict[str, str]:
    """The request's headers as the propagator reads them (only `traceparent` and
    `tracestate` are looked at)."""
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name in (b"traceparent", b"tracestate")
    }


def request_id_of(scope: Scope) -> str:
    """The client's `X-Request-ID` when it is a plain token of sane length (it ends up in
    logs and headers), else a fresh one."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            text = str(value.decode("latin-1"))
            if _REQUEST_ID_PATTERN.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


def route_template(scope: Scope) -> str:
    """The path template of the route the request matched (`/v1/orgs/{org_id}/sweep`), or
    `unmatched`. A request refused before routing (by a middleware) is matched here."""
    route = scope.get("route")
    if route is None:
        app = scope.get("app")
        for candidate in getattr(getattr(app, "router", None), "routes", []):
            match, _ = candidate.matches(scope)
            if match is Match.FULL:
                route = candidate
                break
    return str(getattr(route, "path", "unmatched"))


@functools.cache
def access_table(*, metrics_public: bool) -> AccessTable:
    """Every route's access rule: the service's own and each routes module's `ACCESS`."""
    return {
        ("GET", "/healthz"): Access.public(),
        # The contract and its reference: readable without a key (they hold no data).
        ("GET", "/openapi.json"): Access.public(),
        ("GET", "/docs"): Access.public(),
        ("GET", "/docs/{asset}"): Access.public(),
        ("GET", "/metrics"): (
            Access.public() if metrics_public else Access.every_org(KeyScope.METRICS_READ)
        ),
        # The console's static files (its data comes from /v1, with the operator's key).
        **console_routes.ACCESS,
        **policy_routes.ACCESS,
        **history_routes.ACCESS,
        **activity_routes.ACCESS,
        **access_routes.ACCESS,
    }


class UntilStarted:
    """While the service is not built yet (the database has not been reachable since
    start-up), /healthz answers 503 `unavailable` (saying it is starting) and every other
    request 503 `database_unavailable` with Retry-After: nothing behind the routes exists
    yet to ask (docs/adr/0081). `problem()`: why it is not built (for /healthz)."""

    def __init__(
        self, app: ASGIApp, *, started: Callable[[], bool], problem: Callable[[], str]
    ) -> None:
        self.app = app
        self._started = started
        self._problem = problem

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._started():
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/healthz":
            health = {
                "status": "unavailable",
                "database": self._problem(),
                "contexts": {},
                "starting": True,
            }
            await JSONResponse(health, 503)(scope, receive, send)
            return
        waiting = DatabaseUnavailable(
            "the database has not been reachable since the service started; retry later"
        )
        response = await handle_domain_error(Request(scope), waiting)
        await response(scope, receive, send)


async def _model_checks(services: Services) -> dict[str, Any]:
    """The last `memory check` of each active model (ADR 0114); a database that does not
    answer in time leaves it out rather than holding /healthz."""
    found = (getattr(ctx, "model", None) for ctx in services.contexts)
    models = sorted({m.identity.id for m in found if m is not None})
    with anyio.move_on_after(HEALTH_TIMEOUT_SECONDS):
        try:
            return await anyio.to_thread.run_sync(
                lambda: services.model_checks.report(models), abandon_on_cancel=True
            )
        except Exception as exc:  # the database's own problem is reported beside
            return {"error": type(exc).__name__}
    return {"error": "timeout"}


def create_app(
    build: Callable[[], Services],
    *,
    run_workers: bool = True,
    on_fatal: Callable[[BaseException], None] | None = None,
) -> Starlette:
    """`build` constructs the services (opens the pool, migrates); it runs in a worker thread
    at start-up so that the event loop is never blocked. The middlewares read their settings
    (body limit, rate limit, whether /metrics is public) from the services' settings.

    If the database cannot be reached at start-up, the app starts anyway: /healthz and
    every other route answer 503 until a retry of `build` succeeds, and then the service
    (routes, workers) starts without a restart. Any other failure of `build` stops start-up;
    one that only shows once the database answers (it refuses our credentials) is passed
    to `on_fatal`, which should stop the server."""
    state: dict[str, Any] = {}

    def built() -> Services:
        build_info.publish()  # may ask git once: in this thread, not on the event loop
        services = build()
        try:
            # Built now, in this thread: its audit trail creates its event table on first use.
            _ = services.access
            # Models and the segmenter warm before the first request (docs/adr/0113).
            warm_up(services)
        except BaseException:
            services.close()
            raise
        return services

    def install(app: Starlette, services: Services, tg: TaskGroup) -> None:
        """Routes first, then the services, so no request sees one without the other."""
        for ctx in services.contexts:
            for route in ctx.routes():
                app.router.routes.append(route)
        app.router.routes.extend(
            access_routes.access_routes(
                services.access,
                services.audit,
                lambda: access_table(metrics_public=services.settings.metrics_public),
            )
        )
        app.state.services = services
        state["services"] = services
        if run_workers:
            start_workers(tg, services.contexts, services.database)

    async def build_when_reachable(app: Starlette, tg: TaskGroup) -> None:
        while True:
            await anyio.sleep(STARTUP_RETRY_SECONDS)
            try:
                # Shielded: services built while shutdown begins are installed and then
                # closed by the lifespan, never left open.
                with anyio.CancelScope(shield=True):
                    services = await anyio.to_thread.run_sync(built)
            except Exception as exc:
                if is_unreachable(exc):
                    continue
                log.error("cannot start: %s", exc)
                state["fatal"] = exc
                if on_fatal is not None:
                    on_fatal(exc)
                return
            install(app, services, tg)
            log.info("the database answers: service started")
            return

    def problem() -> str:
        fatal = state.get("fatal")
        if fatal is not None:
            return f"unavailable: {fatal}"
        return "unavailable: not reached since start-up; starting as soon as it answers"

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
        if services.warm_up is not None:
            body["warm_up"] = services.warm_up.as_health()
        body["model_checks"] = await _model_checks(services)
        return JSONResponse(body, status)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        first: Services | None = None
        try:
            first = await anyio.to_thread.run_sync(built)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            log.warning("the database cannot be reached; answering 503 until it can, then starting")
        try:
            async with anyio.create_task_group() as tg:
                if first is not None:
                    install(app, first, tg)
                else:
                    tg.start_soon(build_when_reachable, app, tg)
                yield
                tg.cancel_scope.cancel()
        finally:
            services: Services | None = state.get("services")
            if services is not None:
                await anyio.to_thread.run_sync(services.close)

    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/metrics", metrics),
            *contract_routes(),
            *console_routes.console_routes(),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.add_middleware(
        AccessControl,
        routes=lambda: app.router.routes,
        table=lambda: access_table(metrics_public=state["services"].settings.metrics_public),
        keys=lambda: state["services"].access,
        rate_limits=lambda: state["services"].rate_limits,
        failed_authentications=lambda: state["services"].failed_authentications,
    )
    app.add_middleware(BodyLimit, max_bytes=lambda: state["services"].settings.max_body_bytes)
    app.add_middleware(
        StallLimit, seconds=lambda: state["services"].settings.database_stall_timeout
    )
    app.add_middleware(UntilStarted, started=lambda: "services" in state, problem=problem)
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
