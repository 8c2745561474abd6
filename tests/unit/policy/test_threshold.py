from __future__ import annotations

import math

import pytest

from memory.domain.embedding import ModelIdentity
from memory.domain.errors import InvalidInput
from memory.domain.policy.threshold import SimilarityThreshold


def model(model_id: str, dimensions: int = 384) -> ModelIdentity:
    return ModelIdentity(model_id, dimensions)


@pytest.mark.parametrize(
    "model_id",
    [
        "local:multilingual-e5-small",
        "openai:multilingual-e5-small",
        "openai:intfloat/multilingual-e5-small",
        "openai:Intfloat/Multilingual-E5-Small",
        "ollama:jeffh/intfloat-multilingual-e5-small:f16",
    ],
)
def test_e5_gets_its_stricter_default_whoever_serves_it(model_id: str) -> None:
    assert SimilarityThreshold.default_for(model(model_id)).value == 0.80


@pytest.mark.parametrize(
    "model_id",
    [
        "hash:384",
        "ollama:embeddinggemma@384",
        "openai:bge-m3",
        # Other models whose names merely contain e5's: their scores were never measured.
        "openai:multilingual-e5-small-instruct",
        "openai:multilingual-e5-large",
    ],
)
def test_other_models_get_the_generic_default(model_id: str) -> None:
    assert SimilarityThreshold.default_for(model(model_id)).value == 0.75


def test_operator_override_wins_over_the_model_default() -> None:
    assert SimilarityThreshold.default_for(model("local:multilingual-e5-small"), 0.6).value == 0.6


@pytest.mark.parametrize("value", [0.0, 0.5, 1.0, 1])
def test_bounds_are_inclusive(value: float) -> None:
    assert SimilarityThreshold.parse(value).value == float(value)


@pytest.mark.parametrize("value", [-0.01, 1.0001, math.nan, math.inf, True])
def test_out_of_range_is_refused_not_clamped(value: float) -> None:
    with pytest.raises(InvalidInput) as err:
        SimilarityThreshold.parse(value)
    assert err.value.field == "similarity_threshold"


def test_threshold_is_a_maximum_cosine_distance() -> None:
    assert SimilarityThreshold(0.75).max_distance == pytest.approx(0.25)
