"""Ingest: store chat events synchronously. Never touches embeddings, so it works with the
feature off and the model down."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from memory.application.history.ports import ChatEventLog, Clock
from memory.domain.errors import FieldChecks, InvalidInput
from memory.domain.history.chat_event import MAX_EVENTS_PER_REQUEST, ChatEvent
from memory.domain.time_range import DEFAULT_MAX_FUTURE_SKEW, AcceptedTimeRange


@dataclass(frozen=True, slots=True)
class IngestResult:
    event_ids: list[str]
    inserted: int
    duplicates: int


class IngestChatEvents:
    def __init__(
        self,
        log: ChatEventLog,
        *,
        clock: Clock,
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
    ) -> None:
        self._log = log
        self._clock = clock
        self._max_future_skew = max_future_skew

    def __call__(self, org_id: str, events: Sequence[ChatEvent]) -> IngestResult:
        """All or nothing: 1..MAX_EVENTS_PER_REQUEST events, stored in one transaction.
        Events whose id the org already has are duplicates and change nothing."""
        if not 1 <= len(events) <= MAX_EVENTS_PER_REQUEST:
            raise InvalidInput("events", f"must hold 1 to {MAX_EVENTS_PER_REQUEST} events")
        # First, before an id is derived from the instant (UTC conversion overflows outside
        # the range) and before anything is stored.
        self.check(dict(enumerate(events)))
        identified = [event.with_id(org_id) for event in events]
        stored = self._log.append(org_id, identified)
        return IngestResult(stored.event_ids, stored.inserted, len(identified) - stored.inserted)

    def check(self, events: Mapping[int, ChatEvent]) -> None:
        """Each event's instant is in the accepted range (events by their index in the
        request): `InvalidInput` naming every one that is not. No I/O."""
        accepted = AcceptedTimeRange(self._clock(), self._max_future_skew)
        checks = FieldChecks()
        for index, event in events.items():
            checks.run(partial(accepted.check, event.occurred_at, f"events.{index}.occurred_at"))
        checks.raise_any()
