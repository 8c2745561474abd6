"""Where the sweep stands in a partition's conversation: a keyset position in time order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True, order=True)
class SweepPosition:
    """A message's place in its partition's total order: `(occurred_at, event_id)`.

    Event ids break ties between messages of the same instant. They compare by code point,
    which is how the database compares them too (`dw_chat_events.event_id` is `COLLATE "C"`,
    and UTF-8 byte order is code point order)."""

    occurred_at: datetime
    event_id: str

    def __post_init__(self) -> None:
        if self.occurred_at.tzinfo is None:
            raise ValueError("a sweep position needs a timezone-aware instant")
