from __future__ import annotations

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.policy_id import POLICY_ID_MAX_LENGTH, PolicyId


def test_accepts_letters_digits_and_url_safe_punctuation() -> None:
    assert PolicyId.parse("hr.leave-policy_v2:eu").value == "hr.leave-policy_v2:eu"


def test_max_length_is_128_and_enforced_at_the_boundary() -> None:
    assert POLICY_ID_MAX_LENGTH == 128
    assert PolicyId.parse("a" * 128).value == "a" * 128
    with pytest.raises(InvalidInput) as err:
        PolicyId.parse("a" * 129)
    assert err.value.field == "policy_id"
    assert "128" in err.value.reason


@pytest.mark.parametrize("bad", ["", "-leading-dash", "has space", "slash/inside", "ümlaut", "a?b"])
def test_refuses_ids_that_are_not_url_path_safe(bad: str) -> None:
    with pytest.raises(InvalidInput) as err:
        PolicyId.parse(bad)
    assert err.value.field == "policy_id"
