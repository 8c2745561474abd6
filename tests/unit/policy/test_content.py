from __future__ import annotations

import hashlib

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.content import PolicyContent


def test_content_is_kept_exactly_as_given() -> None:
    content = PolicyContent.parse("  Travel must be approved.\n", max_chars=100)
    assert content.text == "  Travel must be approved.\n"
    assert content.sha256 == hashlib.sha256(content.text.encode()).hexdigest()


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_content_is_refused(blank: str) -> None:
    with pytest.raises(InvalidInput) as err:
        PolicyContent.parse(blank, max_chars=100)
    assert err.value.field == "content"


def test_size_limit_applies_at_the_boundary() -> None:
    assert PolicyContent.parse("x" * 10, max_chars=10).text == "x" * 10
    with pytest.raises(InvalidInput) as err:
        PolicyContent.parse("x" * 11, max_chars=10)
    assert "at most 10 characters, got 11" in err.value.reason


def test_nul_characters_are_refused() -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        PolicyContent.parse("a\x00b", max_chars=100)
