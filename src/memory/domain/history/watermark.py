"""`SweepWatermark`: how far the sweep got in one partition for one model.

An event-sourced aggregate, one per `(org, provider, channel, model)` with a deterministic
id. Its events record advances, late catch-ups, stalls, poison windows and resets, with
positions and ids only: no chat text, so nothing in it outlives the org's retention promise.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import LateCatchUp, WatermarkMark

# Fixed forever: changing it would make every watermark start over (a full rebuild).
WATERMARK_NAMESPACE = uuid.UUID("6c1f2f5e-2b0e-4f6e-9d8a-3a7b5c9e2d41")


class StallReason:
    """Why a pass stopped without advancing (stored as these codes, never as messages)."""

    MODEL_UNAVAILABLE = "model_unavailable"
    MODEL_MISCONFIGURED = "model_misconfigured"


@dataclass(frozen=True, slots=True)
class PoisonWindow:
    """A window the model refused permanently; skipped so it cannot stall the watermark."""

    window_id: uuid.UUID
    first: SweepPosition
    last: SweepPosition
    message_count: int
    reason: str
    recorded_at: datetime


class PoisonEventReason:
    """Why a stored row was skipped without being read (stored as these codes)."""

    OCCURRED_AT_OUT_OF_RANGE = "occurred_at_out_of_range"


@dataclass(frozen=True, slots=True)
class PoisonEvent:
    """A stored row the sweep cannot read or window (an older version accepted an instant
    outside the accepted range); skipped so it cannot stop the sweep. `occurred_at` is the
    instant as the database prints it: it may not fit a Python datetime."""

    event_id: str
    occurred_at: str
    reason: str
    recorded_at: datetime


def _position(at: datetime | None, event_id: str | None) -> SweepPosition | None:
    if at is None or event_id is None:
        return None
    return SweepPosition(at, event_id)


class SweepWatermark(Aggregate):
    """Progress of the sweep in one partition for one model. A new model has new (empty)
    watermarks, which is how a model swap rebuilds from scratch."""

    @staticmethod
    def create_id(org_id: str, provider: str, channel_id: str, model: str) -> uuid.UUID:
        return watermark_id(Partition(org_id, provider, channel_id), model)

    @event("Started")
    def __init__(self, org_id: str, provider: str, channel_id: str, model: str) -> None:
        self.org_id = org_id
        self.provider = provider
        self.channel_id = channel_id
        self.model = model
        self._position_at: datetime | None = None
        self._position_event_id: str | None = None
        self.seen_seq = 0
        self._late_horizon: int | None = None
        self._late_cursor_at: datetime | None = None
        self._late_cursor_event_id: str | None = None
        self.windows_embedded = 0
        self.windows_skipped = 0
        # Plain data only, so that the library can snapshot the aggregate.
        self._poison: list[dict[str, Any]] = []
        self._poison_events: list[dict[str, Any]] = []
        self.stalls = 0
        self.last_stall_reason: str | None = None
        self.last_stall_at: datetime | None = None
        self.last_advanced_at: datetime | None = None

    @property
    def partition(self) -> Partition:
        return Partition(self.org_id, self.provider, self.channel_id)

    @property
    def poison_windows(self) -> list[PoisonWindow]:
        return [
            PoisonWindow(
                p["window_id"],
                SweepPosition(p["first_at"], p["first_event_id"]),
                SweepPosition(p["last_at"], p["last_event_id"]),
                p["message_count"],
                p["reason"],
                p["recorded_at"],
            )
            for p in self._poison
        ]

    @property
    def poison_events(self) -> list[PoisonEvent]:
        # Absent from snapshots taken before poison events existed.
        recorded: list[dict[str, Any]] = self.__dict__.get("_poison_events", [])
        return [
            PoisonEvent(p["event_id"], p["occurred_at"], p["reason"], p["recorded_at"])
            for p in recorded
        ]

    @property
    def mark(self) -> WatermarkMark:
        late = None
        if self._late_horizon is not None:
            cursor = _position(self._late_cursor_at, self._late_cursor_event_id)
            late = LateCatchUp(self._late_horizon, cursor)
        return WatermarkMark(
            _position(self._position_at, self._position_event_id), self.seen_seq, late
        )

    # Commands -------------------------------------------------------------------------

    def advance(self, to: WatermarkMark, *, embedded: Sequence[uuid.UUID], skipped: int) -> None:
        """Record consumed windows: main-stream progress, late progress, or both."""
        current = self.mark
        if to == current and not embedded and not skipped:
            return
        if current.position is not None and (to.position is None or to.position < current.position):
            raise ValueError("a watermark never moves back")
        if to.seen_seq < current.seen_seq:
            raise ValueError("seen_seq never moves back")
        if skipped < 0:
            raise ValueError("skipped is never negative")
        assert to.position is not None
        late = to.late
        self._advanced(
            position_at=to.position.occurred_at,
            position_event_id=to.position.event_id,
            seen_seq=to.seen_seq,
            late_horizon=late.horizon_seq if late else None,
            late_cursor_at=late.cursor.occurred_at if late and late.cursor else None,
            late_cursor_event_id=late.cursor.event_id if late and late.cursor else None,
            embedded_window_ids=list(embedded),
            windows_skipped=skipped,
        )

    def consume_main(
        self,
        end: SweepPosition,
        horizon_seq: int,
        *,
        embedded: Sequence[uuid.UUID],
        skipped: int,
    ) -> None:
        """Main-stream windows up to `end` consumed, from a read whose snapshot had no late
        messages and `horizon_seq` as its highest ingest number."""
        self.advance(self.mark.after_main(end, horizon_seq), embedded=embedded, skipped=skipped)

    def consume_late(
        self,
        horizon_seq: int,
        end: SweepPosition | None,
        *,
        caught_up: bool,
        embedded: Sequence[uuid.UUID],
        skipped: int,
    ) -> None:
        """Late windows up to `end` consumed in the catch-up up to `horizon_seq` (begun now
        if none is in progress); `caught_up` once the late stream is exhausted."""
        to = self.mark.begin_late(horizon_seq).after_late(end, caught_up=caught_up)
        self.advance(to, embedded=embedded, skipped=skipped)

    def stall(self, reason: str) -> None:
        """The model failed for every input (transiently or by configuration): nothing is
        consumed, the next pass retries from the same place."""
        if reason not in (StallReason.MODEL_UNAVAILABLE, StallReason.MODEL_MISCONFIGURED):
            raise ValueError(f"unknown stall reason {reason!r}")
        if self.is_stalled and self.last_stall_reason == reason:
            return  # one event per outage, not one per pass
        self._stalled(reason=reason)

    @property
    def is_stalled(self) -> bool:
        """Stalled since the last advance (the last pass that reached the model failed)."""
        if self.last_stall_at is None:
            return False
        return self.last_advanced_at is None or self.last_stall_at > self.last_advanced_at

    def skip_poison_window(
        self,
        window_id: uuid.UUID,
        first: SweepPosition,
        last: SweepPosition,
        message_count: int,
        reason: str,
    ) -> None:
        self._poison_window_skipped(
            window_id=window_id,
            first_at=first.occurred_at,
            first_event_id=first.event_id,
            last_at=last.occurred_at,
            last_event_id=last.event_id,
            message_count=message_count,
            reason=reason,
        )

    def skip_poison_event(self, event_id: str, occurred_at: str, reason: str) -> None:
        """Record a stored row the sweep skips without reading; once per event."""
        if reason != PoisonEventReason.OCCURRED_AT_OUT_OF_RANGE:
            raise ValueError(f"unknown poison event reason {reason!r}")
        if any(p.event_id == event_id for p in self.poison_events):
            return
        self._poison_event_skipped(event_id=event_id, occurred_at=occurred_at, reason=reason)

    def reset(self) -> None:
        """Forget all progress (the model's rows were dropped): a later pass with this model
        starts from empty, i.e. rebuilds."""
        self._reset()

    @property
    def closed(self) -> bool:
        """True since the org's history was erased, until the sweep advances it again (the
        org ingested anew). Absent from snapshots taken before erasure existed."""
        return bool(self.__dict__.get("_closed", False))

    def close(self) -> bool:
        """The org's history was erased: forget all progress, as `reset` does, and say so in
        the log. False (no event) when it is closed already."""
        if self.closed:
            return False
        self._closed_event()
        return True

    # Events ---------------------------------------------------------------------------

    @event("Advanced")
    def _advanced(
        self,
        position_at: datetime,
        position_event_id: str,
        seen_seq: int,
        late_horizon: int | None,
        late_cursor_at: datetime | None,
        late_cursor_event_id: str | None,
        embedded_window_ids: list[uuid.UUID],
        windows_skipped: int,
    ) -> None:
        self._position_at = position_at
        self._position_event_id = position_event_id
        self.seen_seq = seen_seq
        self._late_horizon = late_horizon
        self._late_cursor_at = late_cursor_at
        self._late_cursor_event_id = late_cursor_event_id
        self.windows_embedded += len(embedded_window_ids)
        self.windows_skipped += windows_skipped
        self.last_advanced_at = self.modified_on
        self._closed = False

    @event("Stalled")
    def _stalled(self, reason: str) -> None:
        self.stalls += 1
        self.last_stall_reason = reason
        self.last_stall_at = self.modified_on

    @event("PoisonWindowSkipped")
    def _poison_window_skipped(
        self,
        window_id: uuid.UUID,
        first_at: datetime,
        first_event_id: str,
        last_at: datetime,
        last_event_id: str,
        message_count: int,
        reason: str,
    ) -> None:
        self._poison.append(
            {
                "window_id": window_id,
                "first_at": first_at,
                "first_event_id": first_event_id,
                "last_at": last_at,
                "last_event_id": last_event_id,
                "message_count": message_count,
                "reason": reason,
                "recorded_at": self.modified_on,
            }
        )

    @event("PoisonEventSkipped")
    def _poison_event_skipped(self, event_id: str, occurred_at: str, reason: str) -> None:
        recorded = self.__dict__.setdefault("_poison_events", [])
        recorded.append(
            {
                "event_id": event_id,
                "occurred_at": occurred_at,
                "reason": reason,
                "recorded_at": self.modified_on,
            }
        )

    @event("Closed")
    def _closed_event(self) -> None:
        self._forget_progress()
        self._closed = True

    @event("Reset")
    def _reset(self) -> None:
        self._forget_progress()

    def _forget_progress(self) -> None:
        self._position_at = None
        self._position_event_id = None
        self.seen_seq = 0
        self._late_horizon = None
        self._late_cursor_at = None
        self._late_cursor_event_id = None
        self._poison = []
        self._poison_events = []

    def __repr__(self) -> str:
        return f"SweepWatermark({self.partition}, {self.model}, {self.mark})"


def watermark_id(partition: Partition, model: str) -> uuid.UUID:
    parts = (partition.org_id, partition.provider, partition.channel_id, model)
    return uuid.uuid5(WATERMARK_NAMESPACE, "\x1f".join(parts))


def new_watermark(partition: Partition, model: str) -> SweepWatermark:
    return SweepWatermark(
        org_id=partition.org_id,
        provider=partition.provider,
        channel_id=partition.channel_id,
        model=model,
    )
