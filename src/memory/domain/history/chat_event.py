"""Chat events as ingested: the source of truth for history search.

An event id is the client's idempotency key. When a client sends none, the id is derived
from the event's content, so retrying the same request stores nothing new (see
docs/adr/0031-derived-chat-event-ids.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from memory.domain.history.partition import Partition

EVENT_TYPE_MESSAGE = "message"
DEFAULT_DECISION = "received"
# Only these decisions are conversation; denied and verification traffic is never embedded.
EMBEDDABLE_DECISIONS = ("received", "processed")

MAX_EVENTS_PER_REQUEST = 1000
MAX_EVENT_ID_CHARS = 200
MAX_NAME_CHARS = 256
MAX_MESSAGE_CHARS = 32_000

# Fixed forever: changing it would change every derived event id and break idempotency.
DERIVED_EVENT_ID_NAMESPACE = uuid.UUID("5f0d3b6e-8a4c-4f53-9a34-0c1de7a1e3b1")
_FIELD_SEPARATOR = "\x1f"


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One event of a chat channel. `event_id` is `None` until `with_id()` gives it one."""

    event_id: str | None
    provider: str
    channel_id: str
    sender: str
    text: str
    occurred_at: datetime
    thread_id: str | None = None
    event_type: str = EVENT_TYPE_MESSAGE
    decision: str = DEFAULT_DECISION

    def __post_init__(self) -> None:
        if self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at must be timezone-aware")

    def partition(self, org_id: str) -> Partition:
        return Partition(org_id, self.provider, self.channel_id)

    def with_id(self, org_id: str) -> ChatEvent:
        """This event with its client id, or with an id derived from everything it says."""
        if self.event_id is not None:
            return self
        return replace(self, event_id=derive_event_id(org_id, self))


def derive_event_id(org_id: str, event: ChatEvent) -> str:
    """A UUID5 over the org and every field of the event (the instant normalised to UTC), so
    a retried request derives the same ids. Two events identical in every field, including
    the microsecond, are one event; clients that can send such twins must send ids."""
    parts = [
        org_id,
        event.provider,
        event.channel_id,
        event.thread_id or "",
        event.sender,
        event.event_type,
        event.decision,
        event.occurred_at.astimezone(UTC).isoformat(),
        event.text,
    ]
    return str(uuid.uuid5(DERIVED_EVENT_ID_NAMESPACE, _FIELD_SEPARATOR.join(parts)))
