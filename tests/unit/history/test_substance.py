from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.domain.history.conversation import ChatMessage, ConversationWindow, WindowClosure
from memory.domain.history.substance import (
    MIN_MEANINGFUL_CHARS,
    WIDE_CHAR_WEIGHT,
    is_substantive,
    meaningful_chars,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def window(*texts: str) -> ConversationWindow:
    messages = tuple(
        ChatMessage(f"e{i}", "a-very-long-sender-name", t, T0 + timedelta(minutes=i))
        for i, t in enumerate(texts)
    )
    return ConversationWindow(messages, WindowClosure.IDLE)


def test_threshold_is_twenty_meaningful_characters() -> None:
    assert MIN_MEANINGFUL_CHARS == 20
    assert is_substantive(window("a" * 20))
    assert not is_substantive(window("a" * 19))


def test_whitespace_and_punctuation_do_not_count() -> None:
    assert meaningful_chars("ok!!! ... ??? :) \n\t ---") == 2
    assert not is_substantive(window("ok", "👍", "...", "ok lah!!!"))


def test_urls_do_not_count() -> None:
    assert meaningful_chars("see https://example.com/a/very/long/path?x=1 ok") == 5
    assert meaningful_chars("www.example.com/abcdefghijklmnopqrstuvwxyz") == 0
    assert not is_substantive(window("https://example.com/abcdefghijklmnopqrstuvwxyz0123456789"))


def test_letters_and_digits_of_any_script_count() -> None:
    assert meaningful_chars("boleh 123") == 8
    assert meaningful_chars("ΑΒΓ абв") == 6
    assert is_substantive(window("我忘记了密码怎么办", "请帮我重置一下密码谢谢"))


def test_a_wide_cjk_letter_counts_as_three() -> None:
    assert meaningful_chars("密码重置") == 4 * WIDE_CHAR_WEIGHT
    assert meaningful_chars("パスワード") == 5 * WIDE_CHAR_WEIGHT
    assert meaningful_chars("비밀번호") == 4 * WIDE_CHAR_WEIGHT
    # Fullwidth Latin letters and digits are still letters, not morphemes.
    assert meaningful_chars("\uff21\uff22\uff23\uff11\uff12") == 5
    # A complete one-message Chinese question qualifies; a bare acknowledgement does not.
    assert is_substantive(window("我忘记密码了\uff0c怎么重置\uff1f"))
    assert not is_substantive(window("好的", "谢谢"))
    assert not is_substantive(window("密码重置 ok lah"))  # 12 + 5
    assert is_substantive(window("密码重置 ok lah boleh"))  # 12 + 10


def test_substance_is_judged_over_the_whole_window_not_per_message() -> None:
    # No single message qualifies, together they do: every message is kept.
    short = window("migrate that one", "Clerk or BetterAuth?", "BetterAuth")
    assert all(meaningful_chars(m.text) < MIN_MEANINGFUL_CHARS for m in short.messages)
    assert is_substantive(short)


def test_sender_names_do_not_count() -> None:
    assert not is_substantive(window("ok"))
