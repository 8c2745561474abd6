"""The conservative token estimate for remote models (checked against a real tokenizer in
tests/model)."""

from __future__ import annotations

from memory.infrastructure.embedding.token_estimate import (
    SPECIAL_TOKENS,
    estimate_tokens,
)


def test_empty_text_costs_the_special_tokens() -> None:
    assert estimate_tokens("") == SPECIAL_TOKENS
    assert estimate_tokens("   \n\t") == SPECIAL_TOKENS


def test_letters_cost_a_token_per_three_rounded_up() -> None:
    assert estimate_tokens("abc") == SPECIAL_TOKENS + 1
    assert estimate_tokens("abcd") == SPECIAL_TOKENS + 2
    assert estimate_tokens("reset my password") == SPECIAL_TOKENS + 2 + 1 + 3


def test_unspaced_scripts_cost_a_token_per_character() -> None:
    assert estimate_tokens("密码") == SPECIAL_TOKENS + 2
    assert estimate_tokens("パスワード") == SPECIAL_TOKENS + 5
    assert estimate_tokens("비밀번호") == SPECIAL_TOKENS + 4
    assert estimate_tokens("รหัส") == SPECIAL_TOKENS + 4


def test_digits_and_symbols_are_counted_one_by_one() -> None:
    assert estimate_tokens("2024") == SPECIAL_TOKENS + 4
    assert estimate_tokens("?!") == SPECIAL_TOKENS + 2
    # Byte-fallback tokenizers may spell an emoji byte by byte.
    assert estimate_tokens("🎉") == SPECIAL_TOKENS + 4


def test_combining_marks_stay_with_their_letters() -> None:
    # "मैं" is a consonant with two combining signs: one run of three code points.
    assert estimate_tokens("मैं") == SPECIAL_TOKENS + 1


def test_the_estimate_grows_with_the_text() -> None:
    text = "Employees may carry over five days. "
    assert estimate_tokens(text * 10) > estimate_tokens(text * 5) > estimate_tokens(text)
