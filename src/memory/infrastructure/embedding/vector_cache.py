"""Evaluation embeddings kept on disk: `memory check` and bench/relevance.py embed the same
few hundred fixed texts on every run, which takes minutes of CPU with the bundled model on a
shared machine. Vectors are keyed by the model's identity, the kind of input (query or
document) and the text, so a cache can never hand one model's vector to another."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from memory.application.embedding import EmbeddingModel, ModelStatus
from memory.domain.embedding import EmbeddingVector, ModelIdentity


class CachedEmbeddingModel:
    """An `EmbeddingModel` that answers from `directory` what it embedded before and saves
    what it embeds (call `save`). Only for fixed evaluation texts: nothing of a user's is
    ever cached."""

    def __init__(self, model: EmbeddingModel, directory: Path) -> None:
        self._model = model
        key = hashlib.sha256(model.identity.id.encode("utf-8")).hexdigest()[:24]
        self._path = directory / f"{key}-{model.identity.dimensions}.json"
        self._vectors: dict[str, list[float]] = {}
        self._dirty = False
        if self._path.exists():
            raw = json.loads(self._path.read_text("utf-8"))
            if raw.get("model") == model.identity.id:
                self._vectors = raw["vectors"]

    @property
    def identity(self) -> ModelIdentity:
        return self._model.identity

    @property
    def max_input_tokens(self) -> int:
        return self._model.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def status(self) -> ModelStatus:
        return self._model.status()

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        keys = [_key("passage", t) for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in self._vectors]
        if missing:
            for text, vector in zip(missing, self._model.embed_documents(missing), strict=True):
                self._put(_key("passage", text), vector)
        return [EmbeddingVector.of(self._vectors[k]) for k in keys]

    def embed_query(self, text: str) -> EmbeddingVector:
        key = _key("query", text)
        if key not in self._vectors:
            self._put(key, self._model.embed_query(text))
        return EmbeddingVector.of(self._vectors[key])

    def save(self) -> None:
        """Write the cache atomically (a crash leaves the old file or the new one)."""
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"model": self._model.identity.id, "vectors": self._vectors})
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
        Path(tmp).replace(self._path)
        self._dirty = False

    def _put(self, key: str, vector: EmbeddingVector) -> None:
        self._vectors[key] = list(vector.values)
        self._dirty = True


def _key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()
