"""Which windows are worth embedding: judged once per window, never per message.

A one-word "ok" or "BetterAuth" is often the answer to the previous message, so every
message of a qualifying window is kept; only windows with almost nothing to say are skipped.
"""

from __future__ import annotations

import re

from memory.domain.history.conversation import ConversationWindow

MIN_MEANINGFUL_CHARS = 20

_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)


def meaningful_chars(text: str) -> int:
    """Letters and digits (of any script) left after removing URLs; whitespace, punctuation
    and symbols do not count."""
    return sum(1 for ch in _URL.sub(" ", text) if ch.isalnum())


def is_substantive(window: ConversationWindow) -> bool:
    """At least `MIN_MEANINGFUL_CHARS` meaningful characters over all the window's message
    texts (sender names do not count)."""
    total = 0
    for message in window.messages:
        total += meaningful_chars(message.text)
        if total >= MIN_MEANINGFUL_CHARS:
            return True
    return False
