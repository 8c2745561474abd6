"""Conversation windows: the chunks the sweep embeds.

Chat meaning spreads over several short messages ("migrate that one" / "Clerk or
BetterAuth?" / "BetterAuth"), so the unit embedded is a small window of consecutive
messages, never a single message. A window ends where the conversation pauses for more than
`SESSION_GAP`, or where it reaches `WINDOW_MESSAGE_CAP` messages or the model's input limit;
the conversation then continues in the next window. Windows do not overlap.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.domain.history.position import SweepPosition

SESSION_GAP = timedelta(minutes=30)
WINDOW_MESSAGE_CAP = 15


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A message as the sweep reads it: an embeddable chat event of one partition."""

    event_id: str
    sender: str
    text: str
    occurred_at: datetime

    @property
    def position(self) -> SweepPosition:
        return SweepPosition(self.occurred_at, self.event_id)

    def line(self) -> str:
        return f"{self.sender}: {self.text}"


def render(messages: Sequence[ChatMessage]) -> str:
    """The exact text of a window as it is embedded and stored: one `sender: text` line per
    message, in time order."""
    return "\n".join(m.line() for m in messages)


class WindowClosure(enum.Enum):
    """Why a window is complete, and therefore safe to embed."""

    GAP = "gap"  # the next message came more than SESSION_GAP later
    IDLE = "idle"  # no message for more than SESSION_GAP up to now
    MESSAGE_CAP = "message_cap"  # WINDOW_MESSAGE_CAP messages
    TOKEN_CAP = "token_cap"  # the next message would not fit the model's input


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """The model's input limit and its token counter (which includes any prompt prefix and
    special tokens the model adds)."""

    max_tokens: int
    count: Callable[[str], int]

    def fits(self, messages: Sequence[ChatMessage]) -> bool:
        return self.count(render(messages)) <= self.max_tokens

    def clip(self, text: str) -> tuple[str, int]:
        """The longest prefix of `text` within the model's input, and its token count: what
        the model reads of a window that is one over-long message. Windows are built to fit,
        so this is `text` itself for every other window. (Some engines would read all of a
        longer text, at a cost that grows with its length: a 32,000-character message takes
        the local model ~15 s.)"""
        tokens = self.count(text)
        if tokens <= self.max_tokens:
            return text, tokens
        fits, over = 0, len(text)
        while over - fits > 1:
            middle = (fits + over) // 2
            if self.count(text[:middle]) <= self.max_tokens:
                fits = middle
            else:
                over = middle
        return text[:fits], self.count(text[:fits])


@dataclass(frozen=True, slots=True)
class ConversationWindow:
    """Consecutive messages of one partition. `closure` is `None` while the window is open
    (the conversation may still continue in it)."""

    messages: tuple[ChatMessage, ...]
    closure: WindowClosure | None

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("a conversation window has at least one message")

    @property
    def is_closed(self) -> bool:
        return self.closure is not None

    @property
    def content(self) -> str:
        return render(self.messages)

    @property
    def event_ids(self) -> tuple[str, ...]:
        return tuple(m.event_id for m in self.messages)

    @property
    def first(self) -> ChatMessage:
        return self.messages[0]

    @property
    def last(self) -> ChatMessage:
        return self.messages[-1]


def sessionize(
    messages: Sequence[ChatMessage],
    *,
    now: datetime,
    budget: TokenBudget,
    complete: bool = True,
) -> list[ConversationWindow]:
    """Split messages (in time order) into windows.

    A gap of more than `SESSION_GAP` (up to the next message or `now`, whichever is
    earlier) starts a new window; so does a window that holds
    `WINDOW_MESSAGE_CAP` messages, or one the next message would push past the model's input
    limit. A single message longer than the limit on its own still forms a window (the model
    reads its beginning; full-text search covers all of it).

    The last window is closed only if it is full, or if it is idle for more than
    `SESSION_GAP` at `now` and `complete` says no unread message could follow it.
    """
    ordered = list(messages)
    if any(a.position > b.position for a, b in itertools.pairwise(ordered)):
        raise ValueError("messages must be in (occurred_at, event_id) order")
    windows: list[ConversationWindow] = []
    current: list[ChatMessage] = []
    for message in ordered:
        if current:
            closure = _boundary(current, message, budget, now)
            if closure is not None:
                windows.append(ConversationWindow(tuple(current), closure))
                current = []
        current.append(message)
    if current:
        windows.append(ConversationWindow(tuple(current), _tail_closure(current, now, complete)))
    return windows


def _boundary(
    current: list[ChatMessage], following: ChatMessage, budget: TokenBudget, now: datetime
) -> WindowClosure | None:
    # A pause is measured up to the next message, but never past `now`: a message dated in
    # the future (a client's clock) is no evidence that the conversation paused until then.
    if min(following.occurred_at, now) - current[-1].occurred_at > SESSION_GAP:
        return WindowClosure.GAP
    if len(current) >= WINDOW_MESSAGE_CAP:
        return WindowClosure.MESSAGE_CAP
    if not budget.fits([*current, following]):
        return WindowClosure.TOKEN_CAP
    return None


def _tail_closure(
    current: list[ChatMessage], now: datetime, complete: bool
) -> WindowClosure | None:
    if len(current) >= WINDOW_MESSAGE_CAP:
        return WindowClosure.MESSAGE_CAP
    if complete and now - current[-1].occurred_at > SESSION_GAP:
        return WindowClosure.IDLE
    return None
