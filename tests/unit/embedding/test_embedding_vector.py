"""`EmbeddingVector` and `ModelIdentity`: what a model returned, checked."""

from __future__ import annotations

import math

import pytest

from memory.domain.embedding import EmbeddingVector, ModelIdentity


def test_a_vector_must_be_non_empty_and_finite() -> None:
    with pytest.raises(ValueError, match="empty"):
        EmbeddingVector(())
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="non-finite"):
            EmbeddingVector.of([1.0, bad])


def test_normalised_has_unit_length_and_keeps_the_direction() -> None:
    vector = EmbeddingVector.of([3, 4])

    unit = vector.normalised()

    assert unit.values == (0.6, 0.8)
    assert math.isclose(unit.norm(), 1.0)
    with pytest.raises(ValueError, match="zero vector"):
        EmbeddingVector.of([0, 0]).normalised()


def test_truncated_keeps_the_leading_components_and_renormalises() -> None:
    vector = EmbeddingVector.of([0.6, 0.0, 0.8, 0.0]).normalised()

    short = vector.truncated(2)

    assert short.values == (1.0, 0.0)
    assert vector.truncated(4) == vector
    for dims in (0, 5):
        with pytest.raises(ValueError, match="cannot truncate"):
            vector.truncated(dims)


def test_an_identity_checks_the_dimension_of_every_vector() -> None:
    identity = ModelIdentity("ollama:embeddinggemma@384", 384)
    right = EmbeddingVector.of([1.0] * 384)

    assert identity.check(right) is right
    with pytest.raises(ValueError, match="returned 768 dims, expected 384"):
        identity.check(EmbeddingVector.of([1.0] * 768))


def test_an_identity_needs_an_id_and_a_positive_dimension() -> None:
    with pytest.raises(ValueError, match="empty"):
        ModelIdentity("", 384)
    with pytest.raises(ValueError, match="positive"):
        ModelIdentity("hash:0", 0)
