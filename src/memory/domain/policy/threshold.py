"""The similarity threshold of a search: only results at least this similar are returned."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from memory.domain.embedding import ModelIdentity
from memory.domain.errors import InvalidInput

DEFAULT_SIMILARITY_THRESHOLD = 0.75
# Cosine scores mean different things per model. multilingual-e5 crowds every score into
# 0.7-1.0: unrelated text scores 0.69-0.73, a cross-lingual paraphrase 0.83-0.87 (measured,
# docs/adr/0025). At 0.75 almost anything would match, so its default is stricter.
# Keyed by the model itself (a pattern over `ModelIdentity.base_name`), never by who serves
# it: the bundled e5 and the same weights behind an OpenAI-compatible server or Ollama make
# the same scores (docs/adr/0078). Community builds prefix the owner (`intfloat-...`).
MODEL_DEFAULT_THRESHOLDS: tuple[tuple[str, float], ...] = (
    (r"(.*[-_])?multilingual-e5-small", 0.80),
)


@dataclass(frozen=True, slots=True)
class SimilarityThreshold:
    """Cosine similarity in [0, 1]; a result matches when `1 - cosine distance >= value`."""

    value: float

    @classmethod
    def parse(cls, value: float, *, field: str = "similarity_threshold") -> SimilarityThreshold:
        if isinstance(value, bool) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise InvalidInput(field, f"must be a number between 0 and 1, got {value!r}")
        return cls(float(value))

    @classmethod
    def default_for(
        cls, model: ModelIdentity, override: float | None = None
    ) -> SimilarityThreshold:
        """The operator's configured default if any, else the model's, else 0.75."""
        if override is not None:
            return cls.parse(override)
        name = model.base_name
        for pattern, value in MODEL_DEFAULT_THRESHOLDS:
            if re.fullmatch(pattern, name):
                return cls(value)
        return cls(DEFAULT_SIMILARITY_THRESHOLD)

    @property
    def max_distance(self) -> float:
        """The largest cosine distance (`<=>`) that still matches."""
        return 1.0 - self.value
