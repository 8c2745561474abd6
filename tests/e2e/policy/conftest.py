"""The policy API through the real app (`create_app`, its lifespan and workers) on a real
database, with the embedding model replaced by a controllable fake model server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
from tests.conftest import running_app
from tests.fakes import FakeModel

from memory.application.embedding import EmbeddingModel
from memory.entrypoints import policy_runtime
from memory.entrypoints.bootstrap import Services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings


class FixedModels(ModelRegistry):
    """The registry, except that the policy model is the given fake."""

    def __init__(self, settings: Settings, model: EmbeddingModel) -> None:
        super().__init__(settings)
        self._fake = model

    def get(self, spec_text: str) -> EmbeddingModel:
        return self._fake


PolicyApp = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def fake_model() -> FakeModel:
    return FakeModel()


@pytest.fixture
def policy_app(
    database_url: str, make_settings: Callable[..., Settings], fake_model: FakeModel
) -> PolicyApp:
    @asynccontextmanager
    async def run(**overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        settings = make_settings(**overrides)

        def build() -> Services:
            database = Database(database_url, min_size=1, max_size=8)
            database.open()
            registry = FixedModels(settings, fake_model)
            services = Services(settings, database, registry)
            try:
                database.migrate()
                services.contexts.append(policy_runtime.build(settings, database, registry))
            except BaseException:
                services.close()
                raise
            return services

        async with running_app(create_app(build)) as client:
            yield client

    return run


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
