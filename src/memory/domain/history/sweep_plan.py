"""What one read of a partition lets the sweep consume, and where its watermark moves.

The watermark (docs/adr/0030-sweep-watermark-and-late-messages.md) is:

- `position` P: a `(occurred_at, event_id)` keyset. Messages after P are the *main stream*;
  its windows are consumed in time order.
- `seen_seq` S: an ingest-sequence horizon. Ingest numbers events in commit order per org,
  so every embeddable message with `ingest_seq <= S` and position `<= P` is consumed
  (embedded, skipped as non-substantive, or skipped as poison).
- `late`: a catch-up in progress. A message at or before P but ingested after S is *late*.
  When a read finds late messages, the sweep fixes the horizon H of that snapshot and
  consumes the late stream (`S < ingest_seq <= H`, position `<= P`) in time order, with its
  own cursor, before the main stream moves on; when the late stream is exhausted S becomes H.

Late messages are sessionised among themselves: a late message never re-opens a window that
was already embedded, it is embedded in a window of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.domain.history.conversation import (
    SESSION_GAP,
    ChatMessage,
    ConversationWindow,
    TokenBudget,
    sessionize,
)
from memory.domain.history.position import SweepPosition

# PostgreSQL's timestamp resolution: "more than SESSION_GAP" is reached one tick after it.
_RESOLUTION = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class LateCatchUp:
    """Late messages being consumed: those ingested up to `horizon_seq`, after `cursor`."""

    horizon_seq: int
    cursor: SweepPosition | None = None


@dataclass(frozen=True, slots=True)
class WatermarkMark:
    """A watermark value. `position` is `None` before anything was consumed."""

    position: SweepPosition | None
    seen_seq: int
    late: LateCatchUp | None = None

    def __post_init__(self) -> None:
        if self.seen_seq < 0:
            raise ValueError("seen_seq is never negative")
        if self.late is not None:
            if self.position is None:
                raise ValueError("nothing can be late before anything was consumed")
            if self.late.horizon_seq < self.seen_seq:
                raise ValueError("a late horizon is never behind seen_seq")

    def begin_late(self, horizon_seq: int) -> WatermarkMark:
        if self.late is not None:
            return self
        return WatermarkMark(self.position, self.seen_seq, LateCatchUp(horizon_seq))

    def after_main(self, end: SweepPosition, horizon_seq: int) -> WatermarkMark:
        """Main-stream windows up to `end` consumed, read from a snapshot with no late
        messages whose highest ingest number was `horizon_seq`."""
        if self.late is not None:
            raise ValueError("the main stream waits until late messages are caught up")
        if self.position is not None and end <= self.position:
            raise ValueError("the main stream only moves forward")
        return WatermarkMark(end, max(self.seen_seq, horizon_seq))

    def after_late(self, end: SweepPosition | None, *, caught_up: bool) -> WatermarkMark:
        """Late windows up to `end` consumed; `caught_up` once the late stream is empty."""
        if self.late is None:
            raise ValueError("no late catch-up in progress")
        if caught_up:
            return WatermarkMark(self.position, self.late.horizon_seq)
        if end is None:
            raise ValueError("a late catch-up that is not done moves its cursor")
        return WatermarkMark(self.position, self.seen_seq, LateCatchUp(self.late.horizon_seq, end))


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """One read of a stream of a partition, in time order. `complete` is false when the
    read stopped at its limit, so more messages follow the last one."""

    messages: tuple[ChatMessage, ...]
    complete: bool


@dataclass(frozen=True, slots=True)
class MainRead:
    """A main-stream read and what its snapshot said: the partition's highest ingest
    number, whether late messages are waiting (then `read` is empty), and whether the
    partition holds rows outside the accepted time range (never part of any read)."""

    read: PartitionRead
    horizon_seq: int
    late_pending: bool
    out_of_range: bool = False


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """The windows one read yields. `closed` is the run of closed windows from the start;
    everything from the first open window on waits for a later pass."""

    read: PartitionRead
    closed: tuple[ConversationWindow, ...]
    open_windows: int
    # The last message of the first open window (None: no open window).
    open_since: datetime | None = None
    # Messages in the open windows (what waits after the closed ones are consumed).
    open_messages: int = 0

    def closes_at(self) -> datetime | None:
        """The first instant at which the first open window is closed by its gap alone (a
        window closes once more than SESSION_GAP passed since its last message): when the
        sweep has work again in this partition without any new message."""
        if self.open_since is None:
            return None
        return self.open_since + SESSION_GAP + _RESOLUTION

    def end_after(self, count: int) -> SweepPosition:
        if not 0 < count <= len(self.closed):
            raise ValueError(f"count must be in 1..{len(self.closed)}")
        return self.closed[count - 1].last.position

    def exhausts_after(self, count: int) -> bool:
        """Whether consuming the first `count` closed windows consumes the whole stream."""
        return self.read.complete and self.open_windows == 0 and count == len(self.closed)


def plan(read: PartitionRead, *, now: datetime, budget: TokenBudget) -> SweepPlan:
    windows = sessionize(read.messages, now=now, budget=budget, complete=read.complete)
    closed: list[ConversationWindow] = []
    for window in windows:
        if not window.is_closed:
            break
        closed.append(window)
    waiting = windows[len(closed) :]
    open_since = waiting[0].last.occurred_at if waiting else None
    open_messages = sum(len(w.messages) for w in waiting)
    return SweepPlan(read, tuple(closed), len(waiting), open_since, open_messages)
