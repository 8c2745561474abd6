"""What every adapter of a model server shares: the resolved model, the HTTP client, batching
of document inputs, and the parts of the port that only depend on the model."""

from __future__ import annotations

from memory.application.embedding import ModelStatus
from memory.domain.embedding import ModelIdentity
from memory.infrastructure.embedding.model_server import ModelServer
from memory.infrastructure.embedding.remote_model import RemoteModel


class RemoteEmbeddingAdapter:
    def __init__(self, model: RemoteModel, server: ModelServer, *, max_batch: int) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._model = model
        self._server = server
        self._max_batch = max_batch

    @property
    def identity(self) -> ModelIdentity:
        return self._model.identity

    @property
    def max_input_tokens(self) -> int:
        return self._model.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def _status(self, available: bool, detail: str) -> ModelStatus:
        """The model's status as a probe found it, with its circuit breaker's state."""
        identity = self._model.identity
        return ModelStatus(
            identity.id, identity.dimensions, available, detail, self._server.breaker.health()
        )

    def close(self) -> None:
        self._server.close()
