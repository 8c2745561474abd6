"""FixedDimensionality: every policy embedding has exactly 384 dimensions."""

from __future__ import annotations

from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.errors import DomainError

POLICY_DIMENSIONS = 384


class DimensionalityMismatch(DomainError):
    """A model or a vector does not have the policy context's fixed dimension."""

    code = "dimension_mismatch"


class FixedDimensionality:
    """The rule, applied twice: to a model at start-up (a 768-dim model is refused before it
    embeds anything) and to every vector before it is recorded."""

    dimensions = POLICY_DIMENSIONS

    @classmethod
    def check_model(cls, identity: ModelIdentity) -> None:
        if identity.dimensions != cls.dimensions:
            raise DimensionalityMismatch(
                f"model {identity.id} produces {identity.dimensions}-dimensional vectors, but "
                f"policy memory requires exactly {cls.dimensions} (FixedDimensionality); "
                f"configure a {cls.dimensions}-dim model, e.g. `local:multilingual-e5-small` "
                f"or a Matryoshka model truncated with `@{cls.dimensions}`",
                details={"model": identity.id, "dimensions": identity.dimensions},
            )

    @classmethod
    def check_vector(cls, identity: ModelIdentity, vector: EmbeddingVector) -> EmbeddingVector:
        cls.check_model(identity)
        if vector.dimensions != cls.dimensions:
            raise DimensionalityMismatch(
                f"model {identity.id} returned a {vector.dimensions}-dimensional vector, "
                f"policy memory requires exactly {cls.dimensions}",
                details={"model": identity.id, "dimensions": vector.dimensions},
            )
        return vector
