"""`hash:<dims>`: deterministic, non-semantic vectors derived from the text.

For tests and for benchmarking everything except the model: equal texts give equal vectors,
texts sharing words give similar vectors (a hashed bag of words), and it costs microseconds.
Never a default.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from memory.application.embedding import ModelStatus
from memory.domain.embedding import EmbeddingVector, ModelIdentity

_TOKEN = re.compile(r"\w+", re.UNICODE)
HASH_MODEL_MAX_TOKENS = 512


class HashEmbeddingModel:
    def __init__(self, dimensions: int) -> None:
        self._identity = ModelIdentity(f"hash:{dimensions}", dimensions)

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return HASH_MODEL_MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> EmbeddingVector:
        return self._embed(text)

    def status(self) -> ModelStatus:
        return ModelStatus(self._identity.id, self._identity.dimensions, True)

    def _embed(self, text: str) -> EmbeddingVector:
        dims = self._identity.dimensions
        acc = [0.0] * dims
        tokens = _TOKEN.findall(text.lower()) or [text]
        for token in tokens:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=16).digest()
            for i in range(0, 16, 4):
                slot = int.from_bytes(digest[i : i + 3], "little") % dims
                acc[slot] += 1.0 if digest[i + 3] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in acc))
        if norm == 0.0:
            acc[0], norm = 1.0, 1.0
        return EmbeddingVector(tuple(v / norm for v in acc))
