"""No route is open by accident: every route the app registers answers 401 without a key,
except /healthz, the contract (/openapi.json, /docs), the console's static files and
/metrics when configured public; a route without an access rule is refused even to an admin
key."""

from __future__ import annotations

import re

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from tests.e2e.access.conftest import FullApp

pytestmark = pytest.mark.anyio

PARAMS = {
    "org_id": "acme",
    "flag": "digital_worker_semantic_search",
    "policy_id": "p",
    "embedding_ref": "e",
    "key_id": "key_0000000000000000",
    "asset": "swagger-ui.css",
    "file": "app.js",
}


def _fill(template: str) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: PARAMS[m.group(1)], template)


@pytest.mark.parametrize("metrics_public", [False, True])
async def test_every_registered_route_needs_a_key(full_app: FullApp, metrics_public: bool) -> None:
    # The contract and its reference hold no data (ADR 0065).
    contract = {("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/docs/{asset}")}
    # The console's static files: its data comes from /v1 with the operator's key.
    contract |= {("GET", "/console"), ("GET", "/console/{file}")}
    open_routes = (
        {("GET", "/healthz")} | contract | ({("GET", "/metrics")} if metrics_public else set())
    )
    async with full_app(metrics_public=metrics_public) as running:
        routes = [r for r in running.app.routes if isinstance(r, Route)]
        walked = set()
        async with running.client(None) as anonymous:
            for route in routes:
                for method in sorted(route.methods or ()):
                    walked.add((method, route.path))
                    response = await anonymous.request(method, _fill(route.path))
                    if (method if method != "HEAD" else "GET", route.path) in open_routes:
                        assert response.status_code == 200, (method, route.path)
                    else:
                        assert response.status_code == 401, (method, route.path, response.text)
    # Both contexts, key management and the audit log were all walked.
    assert {
        ("POST", "/v1/policies"),
        ("POST", "/v1/orgs/{org_id}/chat-events"),
        ("DELETE", "/v1/api-keys/{key_id}"),
        ("GET", "/v1/audit"),
    } <= walked


async def test_a_route_without_an_access_rule_is_refused_to_every_key(
    full_app: FullApp,
) -> None:
    async def undeclared(request: Request) -> Response:
        return JSONResponse({"leaked": True})

    async with full_app() as running:
        running.app.router.routes.append(Route("/v1/undeclared", undeclared, methods=["GET"]))
        refused = await running.admin.get("/v1/undeclared")
        async with running.client(None) as anonymous:
            anonymous_refused = await anonymous.get("/v1/undeclared")
    assert refused.status_code == 403 and "leaked" not in refused.text
    assert anonymous_refused.status_code == 401


async def test_an_unknown_path_needs_a_key_before_it_is_a_404(full_app: FullApp) -> None:
    async with full_app() as running:
        async with running.client(None) as anonymous:
            assert (await anonymous.get("/v1/nothing-here")).status_code == 401
        assert (await running.admin.get("/v1/nothing-here")).status_code == 404
