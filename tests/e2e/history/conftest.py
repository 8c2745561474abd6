"""The history API through the real app (`create_app`, its lifespan and workers) on a real
database, with the model replaced by a controllable fake model server at the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tests.conftest import running_app
from tests.fakes import FakeModel

from memory.entrypoints.bootstrap import Services
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.http.app import create_app
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

HistoryApp = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def edge_model() -> FakeModel:
    return FakeModel(dimensions=1024)


@pytest.fixture
def history_app(
    database_url: str, make_settings: Callable[..., Settings], edge_model: FakeModel
) -> HistoryApp:
    """`run(run_workers=False, **settings)`: the app with the history context on the fake
    model (the composition root's wiring, with the model picked here)."""

    @asynccontextmanager
    async def run(
        *, run_workers: bool = False, **overrides: Any
    ) -> AsyncIterator[httpx.AsyncClient]:
        settings = make_settings(**overrides)

        def build() -> Services:
            database = Database(database_url, min_size=1, max_size=8)
            database.open()
            services = Services(settings, database, ModelRegistry(settings))
            try:
                database.migrate()
                services.contexts.append(HistoryRuntime(settings, database, edge_model))
            except BaseException:
                services.close()
                raise
            return services

        async with running_app(create_app(build, run_workers=run_workers)) as client:
            yield client

    return run


def ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).isoformat()


@pytest.fixture
def event() -> Callable[..., dict[str, Any]]:
    def make(text: str, *, minutes_ago: float = 120, **fields: Any) -> dict[str, Any]:
        return {
            "provider": "slack",
            "channel_id": "C1",
            "sender": "ali",
            "text": text,
            "occurred_at": ago(minutes=minutes_ago),
            **fields,
        }

    return make
