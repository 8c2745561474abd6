"""Ingest: store chat events synchronously. Never touches embeddings, so it works with the
feature off and the model down."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.application.history.ports import ChatEventLog
from memory.domain.errors import InvalidInput
from memory.domain.history.chat_event import MAX_EVENTS_PER_REQUEST, ChatEvent


@dataclass(frozen=True, slots=True)
class IngestResult:
    event_ids: list[str]
    inserted: int
    duplicates: int


class IngestChatEvents:
    def __init__(self, log: ChatEventLog) -> None:
        self._log = log

    def __call__(self, org_id: str, events: Sequence[ChatEvent]) -> IngestResult:
        """All or nothing: 1..MAX_EVENTS_PER_REQUEST events, stored in one transaction.
        Events whose id the org already has are duplicates and change nothing."""
        if not 1 <= len(events) <= MAX_EVENTS_PER_REQUEST:
            raise InvalidInput("events", f"must hold 1 to {MAX_EVENTS_PER_REQUEST} events")
        identified = [event.with_id(org_id) for event in events]
        stored = self._log.append(org_id, identified)
        return IngestResult(stored.event_ids, stored.inserted, len(identified) - stored.inserted)
