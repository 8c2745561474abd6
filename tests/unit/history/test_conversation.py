from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.domain.history.conversation import (
    WINDOW_MESSAGE_CAP,
    ChatMessage,
    TokenBudget,
    WindowClosure,
    render,
    sessionize,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WORDS = TokenBudget(max_tokens=10_000, count=lambda text: len(text.split()))


def msg(i: int, minutes: float, text: str = "hello there", sender: str = "ali") -> ChatMessage:
    return ChatMessage(f"e{i:04d}", sender, text, T0 + timedelta(minutes=minutes))


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_a_gap_of_more_than_thirty_minutes_starts_a_new_window() -> None:
    messages = [msg(1, 0), msg(2, 10), msg(3, 40.5), msg(4, 41)]
    windows = sessionize(messages, now=at(200), budget=WORDS)
    assert [w.event_ids for w in windows] == [("e0001", "e0002"), ("e0003", "e0004")]
    assert windows[0].closure is WindowClosure.GAP
    assert windows[1].closure is WindowClosure.IDLE


def test_a_gap_of_exactly_thirty_minutes_continues_the_window() -> None:
    windows = sessionize([msg(1, 0), msg(2, 30)], now=at(200), budget=WORDS)
    assert [w.event_ids for w in windows] == [("e0001", "e0002")]


def test_the_message_cap_closes_a_window_and_the_conversation_continues() -> None:
    messages = [msg(i, i) for i in range(WINDOW_MESSAGE_CAP + 4)]
    windows = sessionize(messages, now=at(20), budget=WORDS)
    assert [len(w.messages) for w in windows] == [WINDOW_MESSAGE_CAP, 4]
    assert windows[0].closure is WindowClosure.MESSAGE_CAP
    assert windows[1].closure is None  # still talking: open
    assert windows[1].first.event_id == f"e{WINDOW_MESSAGE_CAP:04d}"


def test_a_full_window_is_closed_even_when_more_messages_may_follow() -> None:
    messages = [msg(i, i) for i in range(WINDOW_MESSAGE_CAP)]
    (window,) = sessionize(messages, now=at(16), budget=WORDS, complete=False)
    assert window.closure is WindowClosure.MESSAGE_CAP


def test_the_model_input_cap_closes_a_window_before_it_overflows() -> None:
    # "ali: one two three" is 4 words; a budget of 9 fits two such lines, not three.
    budget = TokenBudget(max_tokens=9, count=lambda text: len(text.split()))
    messages = [msg(i, i, "one two three") for i in range(5)]
    windows = sessionize(messages, now=at(100), budget=budget)
    assert [len(w.messages) for w in windows] == [2, 2, 1]
    assert [w.closure for w in windows] == [
        WindowClosure.TOKEN_CAP,
        WindowClosure.TOKEN_CAP,
        WindowClosure.IDLE,
    ]
    assert all(budget.fits(w.messages) for w in windows)


def test_a_message_longer_than_the_model_input_forms_a_window_of_its_own() -> None:
    budget = TokenBudget(max_tokens=5, count=lambda text: len(text.split()))
    long = " ".join(["word"] * 50)
    windows = sessionize(
        [msg(1, 0, "hi"), msg(2, 1, long), msg(3, 2, "ok")], now=at(100), budget=budget
    )
    assert [w.event_ids for w in windows] == [("e0001",), ("e0002",), ("e0003",)]


def test_the_last_window_closes_only_when_idle_longer_than_the_gap() -> None:
    messages = [msg(1, 0), msg(2, 5)]
    (still_open,) = sessionize(messages, now=at(35), budget=WORDS)
    assert still_open.closure is None and not still_open.is_closed
    (closed,) = sessionize(messages, now=at(35.01), budget=WORDS)
    assert closed.closure is WindowClosure.IDLE


def test_an_idle_last_window_stays_open_when_the_read_was_cut_short() -> None:
    (window,) = sessionize([msg(1, 0)], now=at(500), budget=WORDS, complete=False)
    assert window.closure is None


def test_messages_must_be_in_time_order() -> None:
    with pytest.raises(ValueError, match="order"):
        sessionize([msg(2, 5), msg(1, 0)], now=at(100), budget=WORDS)


def test_equal_instants_are_ordered_by_event_id() -> None:
    a = ChatMessage("a", "x", "t", T0)
    b = ChatMessage("b", "x", "t", T0)
    assert a.position < b.position
    (window,) = sessionize([a, b], now=at(100), budget=WORDS)
    assert window.event_ids == ("a", "b")


def test_window_content_is_one_sender_line_per_message() -> None:
    window = sessionize(
        [msg(1, 0, "Clerk or BetterAuth?", "mei"), msg(2, 1, "BetterAuth", "ali")],
        now=at(100),
        budget=WORDS,
    )[0]
    assert window.content == "mei: Clerk or BetterAuth?\nali: BetterAuth"
    assert render(window.messages) == window.content


def test_no_messages_no_windows() -> None:
    assert sessionize([], now=at(0), budget=WORDS) == []


def test_a_message_from_the_future_is_no_evidence_of_a_pause() -> None:
    # 28 minutes idle at `now`; the next message is dated 32 minutes after the last one, by
    # a clock running ahead (or years ahead): the window is still live.
    live = [msg(1, 0), msg(2, 32)]
    (window,) = sessionize(live, now=at(28), budget=WORDS)
    assert window.closure is None
    far = [msg(1, 0), ChatMessage("e9999", "ali", "hi", datetime(9999, 1, 1, tzinfo=UTC))]
    assert sessionize(far, now=at(1), budget=WORDS)[0].closure is None
    # Once the pause is real at `now`, the window closes as before.
    windows = sessionize(live, now=at(30.5), budget=WORDS)
    assert windows[0].closure is WindowClosure.GAP and windows[1].closure is None


def test_clip_keeps_a_text_that_fits_and_cuts_a_longer_one_to_the_longest_prefix_that_fits() -> (
    None
):
    budget = TokenBudget(5, lambda text: len(text.split()))
    assert budget.clip("a b c") == ("a b c", 3)
    clipped, tokens = budget.clip("alpha beta gamma delta epsilon zeta eta")
    assert clipped == "alpha beta gamma delta epsilon "
    assert tokens == 5
