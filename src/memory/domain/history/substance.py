"""Which windows are worth embedding: judged once per window, never per message.

A one-word "ok" or "BetterAuth" is often the answer to the previous message, so every
message of a qualifying window is kept; only windows with almost nothing to say are skipped.
"""

from __future__ import annotations

import re
import unicodedata

from memory.domain.history.conversation import ConversationWindow

MIN_MEANINGFUL_CHARS = 20
# A wide (East Asian) letter is a syllable or a morpheme: Chinese averages ~1.5 characters per
# word where English averages ~5 letters, so one counts as three Latin letters. Without this a
# complete Chinese question ("我忘记密码了, 怎么重置?", 10 characters) would never be embedded,
# and Chinese recall is the reason this feature exists (docs/adr/0038).
WIDE_CHAR_WEIGHT = 3

_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)


def meaningful_chars(text: str) -> int:
    """Letters and digits (of any script) left after removing URLs, wide CJK letters counting
    `WIDE_CHAR_WEIGHT` each; whitespace, punctuation and symbols do not count."""
    total = 0
    for ch in _URL.sub(" ", text):
        if ch.isalnum():
            total += WIDE_CHAR_WEIGHT if unicodedata.east_asian_width(ch) == "W" else 1
    return total


def is_substantive(window: ConversationWindow) -> bool:
    """At least `MIN_MEANINGFUL_CHARS` meaningful characters over all the window's message
    texts (sender names do not count)."""
    total = 0
    for message in window.messages:
        total += meaningful_chars(message.text)
        if total >= MIN_MEANINGFUL_CHARS:
            return True
    return False
