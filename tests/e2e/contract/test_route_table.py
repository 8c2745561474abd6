"""A route cannot exist without its contract: the app's routes (both contexts, as `memory
serve` wires them) and `openapi.OPERATIONS` are the same set."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.routing import Route
from tests.conftest import running_app

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.entrypoints.http.openapi import OPERATIONS, UNDOCUMENTED
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio


async def test_every_route_has_an_operation_and_every_operation_a_route(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(projection_wait_timeout=0)
    app = create_app(lambda: build_services(settings, database_url), run_workers=False)
    async with running_app(app):
        served = {
            (method, route.path)
            for route in app.routes
            if isinstance(route, Route)
            for method in (route.methods or ())
            if method != "HEAD"
        }
    documented = {(op.method, op.path) for op in OPERATIONS}
    assert served - UNDOCUMENTED == documented
    assert len(documented) == len(OPERATIONS)  # no operation twice
