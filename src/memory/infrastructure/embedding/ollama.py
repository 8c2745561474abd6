"""`ollama:<model>[@<dims>]`: an Ollama server's `/api/embed`.

Ollama runs one request per model at a time by default (`OLLAMA_NUM_PARALLEL=1`), so inputs
go in batches of up to `max_batch` per request rather than one request each. `truncate` is
always on: the estimate in `count_tokens` keeps callers under the limit, and a text that
still overruns loses its tail rather than failing. `dimensions` is sent only to shorten a
Matryoshka model; servers older than 0.11.11 ignore it and the vector is shortened here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.application.embedding import ModelMisconfigured, ModelStatus
from memory.domain.embedding import EmbeddingVector
from memory.infrastructure.embedding.batching import in_batches
from memory.infrastructure.embedding.model_server import ModelServer
from memory.infrastructure.embedding.remote_adapter import RemoteEmbeddingAdapter
from memory.infrastructure.embedding.remote_model import OLLAMA_DEFAULT_TAG, RemoteModel

EMBED_PATH = "/api/embed"
# Lists the pulled models: cheap, and tells "server down" from "model not pulled".
PROBE_PATH = "/api/tags"


class OllamaEmbeddingModel(RemoteEmbeddingAdapter):
    """An embedding model served by Ollama. `keep_alive` (e.g. `"30m"`, `"-1"`) is passed
    through so the server keeps the model loaded between sparse queries."""

    def __init__(
        self,
        model: RemoteModel,
        server: ModelServer,
        *,
        max_batch: int,
        keep_alive: str | None = None,
    ) -> None:
        super().__init__(model, server, max_batch=max_batch)
        self._keep_alive = keep_alive

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        prompt = self._model.document_prompt
        vectors: list[EmbeddingVector] = []
        for batch in in_batches(texts, self._max_batch):
            vectors.extend(self._embed([prompt + text for text in batch]))
        return vectors

    def embed_query(self, text: str) -> EmbeddingVector:
        return self._embed([self._model.query_prompt + text])[0]

    def status(self) -> ModelStatus:
        try:
            body = self._server.get(PROBE_PATH)
            pulled = {
                str(entry.get("name", "")).removesuffix(OLLAMA_DEFAULT_TAG)
                for entry in body.get("models", [])
                if isinstance(entry, dict)
            }
        except Exception as exc:  # a probe reports, it never raises
            return self._status(False, str(exc))
        if self._model.name not in pulled:
            return self._status(
                False, f"{self._server.base_url} is up but has not pulled {self._model.name}"
            )
        return self._status(True, self._server.base_url)

    def _embed(self, inputs: list[str]) -> list[EmbeddingVector]:
        payload: dict[str, Any] = {"model": self._model.name, "input": inputs, "truncate": True}
        if self._model.requested_dimensions is not None:
            payload["dimensions"] = self._model.requested_dimensions
        if self._keep_alive is not None:
            payload["keep_alive"] = self._keep_alive
        body = self._server.post(EMBED_PATH, payload)
        embeddings = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(embeddings, list) or len(embeddings) != len(inputs):
            got = len(embeddings) if isinstance(embeddings, list) else "no"
            raise ModelMisconfigured(
                self._model.identity.id,
                f"{self._server.base_url} answered {EMBED_PATH} with {got} embeddings "
                f"for {len(inputs)} inputs",
            )
        return [self._model.fit(values) for values in embeddings]
