"""The whole app (both contexts as `memory serve` wires them, hash models, no workers) with
clients that carry a chosen key, or none."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from tests.conftest import running_app

from memory.entrypoints.bootstrap import Services, build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.settings import Settings


@dataclass
class Running:
    app: Starlette
    admin: httpx.AsyncClient

    def client(self, secret: str | None, *, raise_app_exceptions: bool = True) -> httpx.AsyncClient:
        """A client of the running app that sends `secret` as its key (None: no key). With
        `raise_app_exceptions=False` an unhandled error is the 500 a client would see."""
        headers = {} if secret is None else {"Authorization": f"Bearer {secret}"}
        transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=raise_app_exceptions)
        return httpx.AsyncClient(
            transport=transport,
            base_url="http://memory.test",
            headers=headers,
        )

    async def new_key(self, name: str, org_id: str | None, *scopes: str) -> str:
        created = await self.admin.post(
            "/v1/api-keys", json={"name": name, "org_id": org_id, "scopes": list(scopes)}
        )
        assert created.status_code == 201, created.text
        secret = created.json()["secret"]
        assert isinstance(secret, str)
        return secret


FullApp = Callable[..., AbstractAsyncContextManager[Running]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def full_app(database_url: str, make_settings: Callable[..., Settings]) -> FullApp:
    @asynccontextmanager
    async def run(**overrides: Any) -> AsyncIterator[Running]:
        settings = make_settings(**{"projection_wait_timeout": 0, **overrides})

        def build() -> Services:
            return build_services(settings, database_url)

        app = create_app(build, run_workers=False)
        async with running_app(app) as admin:
            yield Running(app, admin)

    return run
