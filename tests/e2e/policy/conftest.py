"""The policy API through the real app (`create_app`, its lifespan and workers) on a real
database, with the embedding model replaced by a controllable fake model server."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
from tests.conftest import running_app

from memory.application.embedding import EmbeddingModel, ModelStatus, ModelUnavailable
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.entrypoints import policy_runtime
from memory.entrypoints.bootstrap import Services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings


class FakeModelServer:
    """hash:384 vectors behind switches an edge can flip: down (ModelUnavailable) or slow."""

    def __init__(self, dimensions: int = 384) -> None:
        self._inner = HashEmbeddingModel(dimensions)
        self._identity = ModelIdentity(f"hash:{dimensions}", dimensions)
        self.down = False
        self.query_delay = 0.0
        self.embedded = 0

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return 512

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        if self.down:
            raise ModelUnavailable(self._identity.id, "connection refused")
        self.embedded += len(texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> EmbeddingVector:
        if self.down:
            raise ModelUnavailable(self._identity.id, "connection refused")
        time.sleep(self.query_delay)
        return self._inner.embed_query(text)

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, not self.down)


class FixedModels(ModelRegistry):
    """The registry, except that the policy model is the given fake."""

    def __init__(self, settings: Settings, model: EmbeddingModel) -> None:
        super().__init__(settings)
        self._fake = model

    def get(self, spec_text: str) -> EmbeddingModel:
        return self._fake


PolicyApp = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def fake_model() -> FakeModelServer:
    return FakeModelServer()


@pytest.fixture
def policy_app(
    database_url: str, make_settings: Callable[..., Settings], fake_model: FakeModelServer
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
