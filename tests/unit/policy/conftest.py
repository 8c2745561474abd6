"""Test doubles for policy unit tests: an in-memory event store (the library's POPO
persistence, no I/O), a model that counts and can fail, a waiter that says what it is told."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memory.application.embedding import ModelStatus, ModelUnavailable
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog, PolicyApplication


class CountingModel:
    """hash:384 vectors under any identity, counting texts embedded; can be made to fail."""

    def __init__(self, model_id: str = "hash:384", dimensions: int = 384) -> None:
        self._inner = HashEmbeddingModel(dimensions)
        self._identity = ModelIdentity(model_id, dimensions)
        self.documents: list[str] = []
        self.queries: list[str] = []
        self.unavailable = False

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return 512

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        if self.unavailable:
            raise ModelUnavailable(self._identity.id, "server down")
        self.documents.extend(texts)
        return self._inner.embed_documents([f"{self._identity.id} {t}" for t in texts])

    def embed_query(self, text: str) -> EmbeddingVector:
        if self.unavailable:
            raise ModelUnavailable(self._identity.id, "server down")
        self.queries.append(text)
        return self._inner.embed_query(f"{self._identity.id} {text}")

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, not self.unavailable)


class ToldWaiter:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.waited_for: list[int] = []

    def wait(self, notification_id: int, timeout: float) -> bool:
        self.waited_for.append(notification_id)
        return self.answer


@pytest.fixture
def counting_model() -> Callable[..., CountingModel]:
    return CountingModel


@pytest.fixture
def told_waiter() -> ToldWaiter:
    return ToldWaiter()


@pytest.fixture
def memory_log() -> EventSourcedPolicyLog:
    """The real event-store adapter over the library's in-memory persistence."""
    return EventSourcedPolicyLog(
        PolicyApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    )


@pytest.fixture
def recorded(memory_log: EventSourcedPolicyLog) -> Callable[[], list[Any]]:
    """Every event notification recorded so far."""
    return lambda: list(memory_log.app.recorder.select_notifications(start=1, limit=10_000))
