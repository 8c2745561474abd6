from __future__ import annotations

import math

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.threshold import (
    DEFAULT_SIMILARITY_THRESHOLD,
    MODEL_DEFAULT_THRESHOLDS,
    SimilarityThreshold,
)


def test_default_is_075_and_stricter_for_e5() -> None:
    assert DEFAULT_SIMILARITY_THRESHOLD == 0.75
    assert MODEL_DEFAULT_THRESHOLDS == {"local:multilingual-e5-small": 0.80}
    assert SimilarityThreshold.default_for("hash:384").value == 0.75
    assert SimilarityThreshold.default_for("local:multilingual-e5-small").value == 0.80


def test_operator_override_wins_over_the_model_default() -> None:
    assert SimilarityThreshold.default_for("local:multilingual-e5-small", 0.6).value == 0.6


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
