"""Embedding vectors as a value object: what a model returned, checked before anything
stores it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EmbeddingVector:
    """A finite, non-empty float vector. Its meaning is defined by the model that made it,
    so it always travels with that model's identity (see `ModelIdentity`)."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("embedding vector is empty")
        if not all(math.isfinite(v) for v in self.values):
            raise ValueError("embedding vector has non-finite values")

    @classmethod
    def of(cls, values: Iterable[float]) -> EmbeddingVector:
        return cls(tuple(float(v) for v in values))

    @property
    def dimensions(self) -> int:
        return len(self.values)

    def norm(self) -> float:
        return math.sqrt(sum(v * v for v in self.values))

    def normalised(self) -> EmbeddingVector:
        n = self.norm()
        if n == 0.0:
            raise ValueError("cannot normalise a zero vector")
        return EmbeddingVector(tuple(v / n for v in self.values))

    def truncated(self, dimensions: int) -> EmbeddingVector:
        """First `dimensions` components, re-normalised: only meaningful for models trained
        with Matryoshka representation learning (e.g. EmbeddingGemma)."""
        if not 0 < dimensions <= self.dimensions:
            raise ValueError(f"cannot truncate {self.dimensions} dims to {dimensions}")
        return EmbeddingVector(self.values[:dimensions]).normalised()


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """Which model made a vector, as stored beside it (`"ollama:bge-m3"`) and its size.
    Two identities are one vector space only if the ids are equal, whatever the dims."""

    id: str
    dimensions: int

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("model id is empty")
        if self.dimensions <= 0:
            raise ValueError("model dimensions must be positive")

    @property
    def base_name(self) -> str:
        """The model itself, whoever serves it: `openai:intfloat/multilingual-e5-small` and
        `local:multilingual-e5-small` are both `multilingual-e5-small` (the provider, the
        owner, an Ollama tag and `@dims` say how it is served and cut, not what it is)."""
        served_as = self.id.split(":", 1)[-1].rsplit("@", 1)[0]
        return base_model_name(served_as)

    def check(self, vector: EmbeddingVector) -> EmbeddingVector:
        if vector.dimensions != self.dimensions:
            raise ValueError(
                f"model {self.id} returned {vector.dimensions} dims, expected {self.dimensions}"
            )
        return vector


def base_model_name(model_name: str) -> str:
    """A model name as servers spell it, without owner and tag, in lower case:
    `intfloat/multilingual-e5-small` -> `multilingual-e5-small`;
    `embeddinggemma:300m` -> `embeddinggemma`."""
    name = model_name.strip().lower().rsplit("/", 1)[-1]
    return name.split(":", 1)[0]
