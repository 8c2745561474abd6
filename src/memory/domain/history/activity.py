"""The service's last hour, a minute at a time: what the console's trends show (docs/adr/0122).

Each replica counts what its own searches and sweep passes did into per-minute tallies and
adds them, now and then, to rows kept per (org, minute) in the database, so every replica
reads the same last hour. A minute's counts are sums over replicas; its lag age is the
largest any replica's sweep saw in it (every replica reads the same shared backlog).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

# The trends' span, in whole minutes (the current, partial minute is the last of them).
TREND_MINUTES = 60
MINUTE = timedelta(minutes=1)
# The org id the service-wide figures are kept under: no org id is empty (`check_org_id`).
SERVICE_WIDE = ""


def minute_of(instant: datetime) -> datetime:
    """The minute `instant` falls in, in UTC."""
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


@dataclass(frozen=True, slots=True)
class ActivityCount:
    """What happened in one minute for one org (or `SERVICE_WIDE`): searches, the semantic
    ones among them and the degraded ones among those, windows the sweep embedded, and the
    age of the oldest work waiting for the sweep when a pass ended (None: no pass ended)."""

    org_id: str
    minute: datetime
    searches: int = 0
    semantic: int = 0
    degraded: int = 0
    windows_embedded: int = 0
    lag_age_seconds: float | None = None

    def merged(self, other: ActivityCount) -> ActivityCount:
        """Both tallies of the same org and minute: counts add, the lag age is the larger."""
        return replace(
            self,
            searches=self.searches + other.searches,
            semantic=self.semantic + other.semantic,
            degraded=self.degraded + other.degraded,
            windows_embedded=self.windows_embedded + other.windows_embedded,
            lag_age_seconds=_larger(self.lag_age_seconds, other.lag_age_seconds),
        )


def _larger(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass(frozen=True, slots=True)
class ActivityMinute:
    """One minute of a trend."""

    minute: datetime
    searches: int
    semantic: int
    degraded: int
    windows_embedded: int
    lag_age_seconds: float | None

    @property
    def degraded_share(self) -> float | None:
        """Of the semantic searches, the share answered from full-text alone (None: none)."""
        return None if self.semantic == 0 else self.degraded / self.semantic


@dataclass(frozen=True, slots=True)
class ActivityTrend:
    """The last `TREND_MINUTES` minutes up to `now`, oldest first, one entry per minute
    (a minute nothing happened in has zero counts and no lag age). `org_id` None: the whole
    service."""

    org_id: str | None
    now: datetime
    minutes: tuple[ActivityMinute, ...]

    @property
    def searches(self) -> int:
        return sum(m.searches for m in self.minutes)

    @property
    def windows_embedded(self) -> int:
        return sum(m.windows_embedded for m in self.minutes)

    @property
    def degraded_share(self) -> float | None:
        semantic = sum(m.semantic for m in self.minutes)
        return None if semantic == 0 else sum(m.degraded for m in self.minutes) / semantic

    @property
    def lag_age_seconds(self) -> float | None:
        """The last lag age sampled in the hour (None: no sample)."""
        ages = [m.lag_age_seconds for m in self.minutes if m.lag_age_seconds is not None]
        return ages[-1] if ages else None


def trend_start(now: datetime) -> datetime:
    """The first minute of the trend ending at `now`."""
    return minute_of(now) - (TREND_MINUTES - 1) * MINUTE


def last_hour(org_id: str | None, now: datetime, rows: Iterable[ActivityCount]) -> ActivityTrend:
    """The trend ending at `now` from the stored minutes (any order; those outside the hour
    are left out), with the minutes nothing was stored for filled in."""
    start = trend_start(now)
    found = {minute_of(r.minute): r for r in rows}
    minutes = []
    for i in range(TREND_MINUTES):
        minute = start + i * MINUTE
        row = found.get(minute)
        minutes.append(
            ActivityMinute(minute, 0, 0, 0, 0, None)
            if row is None
            else ActivityMinute(
                minute,
                row.searches,
                row.semantic,
                row.degraded,
                row.windows_embedded,
                row.lag_age_seconds,
            )
        )
    return ActivityTrend(org_id, now, tuple(minutes))
