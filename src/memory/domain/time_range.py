"""The instants the service accepts: when a chat event occurred, and the time bounds of a
search (history `since`/`until`, policy `filter.timestamp`). Shared by both contexts.

Not before the Unix epoch, and not more than a small skew past the server's clock: a chat
message from the future is a broken client clock, and an instant outside this range is what
made one tenant's event stop the sweep for everyone (docs/adr/0041). Checking it first also
keeps every later step safe: an instant in range converts to UTC without overflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memory.domain.errors import InvalidInput

EARLIEST_INSTANT = datetime(1970, 1, 1, tzinfo=UTC)
# How far past the server's clock an instant may be (MEMORY_MAX_FUTURE_SKEW): client and
# server clocks disagree by seconds, rarely minutes.
DEFAULT_MAX_FUTURE_SKEW = timedelta(minutes=5)
# The most the skew setting may be, and so the tolerance for rows already stored: a stored
# instant later than now + this could not have been accepted under any setting.
MAX_FUTURE_SKEW_LIMIT = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class AcceptedTimeRange:
    """`[EARLIEST_INSTANT, now + max_future_skew]`, both ends included."""

    now: datetime
    max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        if not timedelta(0) <= self.max_future_skew <= MAX_FUTURE_SKEW_LIMIT:
            raise ValueError(f"max_future_skew must be between 0 and {MAX_FUTURE_SKEW_LIMIT}")

    @classmethod
    def for_stored_rows(cls, now: datetime) -> AcceptedTimeRange:
        """The widest range ingest could ever have accepted. A stored row outside it came
        from a version without this rule: the sweep skips it as poison, search does not
        return it, and the purge deletes it as expired."""
        return cls(now, MAX_FUTURE_SKEW_LIMIT)

    @property
    def earliest(self) -> datetime:
        return EARLIEST_INSTANT

    @property
    def latest(self) -> datetime:
        return self.now + self.max_future_skew

    def contains(self, value: datetime) -> bool:
        # Aware datetimes compare by instant without converting: no overflow at any offset.
        return self.earliest <= value <= self.latest

    def check(self, value: datetime, field: str) -> datetime:
        """`value`, or 422 naming `field` with the reason."""
        if value.tzinfo is None:
            raise InvalidInput(field, "must include a timezone offset (e.g. Z or +08:00)")
        if value < self.earliest:
            raise InvalidInput(
                field, f"must not be before {self.earliest.isoformat()} (got {value.isoformat()})"
            )
        if value > self.latest:
            seconds = int(self.max_future_skew.total_seconds())
            raise InvalidInput(
                field,
                f"must not be more than {seconds} s after the server's clock "
                f"(latest accepted now: {self.latest.isoformat()}; got {value.isoformat()})",
            )
        return value
