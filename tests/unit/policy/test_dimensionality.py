from __future__ import annotations

import pytest

from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.policy.dimensionality import (
    POLICY_DIMENSIONS,
    DimensionalityMismatch,
    FixedDimensionality,
)


def test_the_policy_context_is_fixed_at_384_dimensions() -> None:
    assert POLICY_DIMENSIONS == 384
    FixedDimensionality.check_model(ModelIdentity("local:multilingual-e5-small", 384))


def test_a_model_of_another_size_is_refused_with_a_clear_message() -> None:
    with pytest.raises(DimensionalityMismatch) as err:
        FixedDimensionality.check_model(ModelIdentity("ollama:bge-m3", 1024))
    assert "ollama:bge-m3" in err.value.message
    assert "1024" in err.value.message
    assert "exactly 384" in err.value.message
    assert err.value.details == {"model": "ollama:bge-m3", "dimensions": 1024}


def test_a_vector_of_another_size_is_refused_even_from_a_384_model() -> None:
    with pytest.raises(DimensionalityMismatch, match="383"):
        FixedDimensionality.check_vector(
            ModelIdentity("hash:384", 384), EmbeddingVector(tuple([0.1] * 383))
        )
