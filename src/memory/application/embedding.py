"""The port both contexts embed text through, and the errors it may raise.

Callers never add model prompts or prefixes: e5's `query: `/`passage: `, EmbeddingGemma's
task prompts and the like belong to the adapter, which knows its model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memory.domain.embedding import EmbeddingVector, ModelIdentity


class EmbeddingError(Exception):
    """Base class for failures of an embedding model."""

    def __init__(self, model_id: str, message: str) -> None:
        super().__init__(f"{model_id}: {message}")
        self.model_id = model_id
        self.message = message


class ModelUnavailable(EmbeddingError):
    """Transient: the server is down, timed out, or answered 5xx after all retries.
    Retrying later may succeed; nothing about the input is wrong."""

    retry_after_seconds = 5


class InputRejected(EmbeddingError):
    """Permanent for this input: the model refused it (4xx about the payload). Retrying the
    same input will fail again; other inputs may succeed."""


class ModelMisconfigured(EmbeddingError):
    """Permanent for every input: unknown model, wrong dimension, bad credentials. An
    operator has to fix the configuration."""


@dataclass(frozen=True, slots=True)
class ModelStatus:
    model: str
    dimensions: int
    available: bool
    detail: str = ""
    # A remote model's circuit breaker (`state`, ...); None for in-process models.
    breaker: Mapping[str, Any] | None = None

    def as_health(self) -> dict[str, object]:
        """The model's entry in a context's /healthz body."""
        entry: dict[str, object] = {
            "id": self.model,
            "dimensions": self.dimensions,
            "available": self.available,
            "detail": self.detail,
        }
        if self.breaker is not None:
            entry["breaker"] = dict(self.breaker)
        return entry


class EmbeddingModel(Protocol):
    """An embedding model. Every vector it returns has `identity.dimensions` components
    (checked by the adapter), and is L2-normalised."""

    @property
    def identity(self) -> ModelIdentity: ...

    @property
    def max_input_tokens(self) -> int:
        """Longest input the model reads; longer input is truncated by the model."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes as a document (exact for local models, a safe upper
        estimate for remote ones)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]: ...

    def embed_query(self, text: str) -> EmbeddingVector: ...

    def status(self) -> ModelStatus:
        """Cheap liveness check for /healthz; never raises."""
        ...
