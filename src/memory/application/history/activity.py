"""The console's last-hour trends (docs/adr/0122): each replica tallies what its history
searches and sweep passes did, a minute at a time, and adds the tallies to the shared store
every few seconds (one statement for all of them, off the request path); a trend is read
from that store, so it is the same on every replica.

`ActivityTally` is an observer of `HistoryService` (docs/adr/0053's convention): it needs no
call of its own on the search path, and the sweep's figures come from the report a pass
returns. Nothing here visits a partition or an org the pass did not name.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from memory.application.history.ports import Clock
from memory.application.history.sweep import SweepReport
from memory.application.observer import ServiceCall
from memory.domain.history.activity import (
    MINUTE,
    SERVICE_WIDE,
    ActivityCount,
    ActivityTrend,
    last_hour,
    minute_of,
    trend_start,
)
from memory.domain.history.search import HistorySearchResult, SemanticState

CONTEXT = "history"


class ActivityLog(Protocol):
    """Per (org, minute) activity, shared by the replicas."""

    def add(self, counts: Sequence[ActivityCount], *, forget_before: datetime) -> None:
        """Add each tally to its stored minute (counts add up, the lag age keeps the
        larger) and forget the minutes before `forget_before`: one transaction."""
        ...

    def minutes(self, org_id: str, since: datetime) -> list[ActivityCount]:
        """The stored minutes of `org_id` (`SERVICE_WIDE`: the service) from `since` on."""
        ...


class ActivityTally:
    """`ServiceObserver` counting this replica's searches and sweep passes per org and
    minute until `take` hands them over. Thread-safe: searches end on worker threads."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # (org, minute) -> [searches, semantic, degraded, windows embedded, lag age]: plain
        # lists, so a search costs a few increments (bench/activity.py).
        self._counts: dict[tuple[str, datetime], list[Any]] = {}

    def observe(self, call: ServiceCall) -> None:
        if call.context != CONTEXT or not call.ok:
            return
        if isinstance(call.result, HistorySearchResult):
            self._search(call.result, call.labels.get("org_id"))
        elif isinstance(call.result, SweepReport):
            self._sweep(call.result, call.labels.get("org_id"))

    def take(self) -> list[ActivityCount]:
        """What was counted since the last `take`, forgotten here."""
        with self._lock:
            counts, self._counts = self._counts, {}
        return [_count(key, tally) for key, tally in counts.items()]

    def peek(self, org_id: str) -> list[ActivityCount]:
        """What is counted for `org_id` and not handed over yet."""
        with self._lock:
            found = [(k, list(t)) for k, t in self._counts.items() if k[0] == org_id]
        return [_count(key, tally) for key, tally in found]

    def give_back(self, counts: Sequence[ActivityCount], *, since: datetime) -> None:
        """Tallies `take` handed out that could not be stored: counted again, except those
        of minutes before `since` (no trend shows them any more)."""
        for count in counts:
            if count.minute >= since:
                self._add(count)

    def _search(self, result: HistorySearchResult, org_id: str | None) -> None:
        semantic = int(result.semantic is not SemanticState.OFF)
        degraded = int(result.semantic is SemanticState.DEGRADED)
        minute = minute_of(self._clock())
        with self._lock:
            for scope in (SERVICE_WIDE, org_id):
                if scope is None:
                    continue
                tally = self._counts.get((scope, minute))
                if tally is None:
                    self._counts[(scope, minute)] = [1, semantic, degraded, 0, None]
                else:
                    tally[0] += 1
                    tally[1] += semantic
                    tally[2] += degraded

    def _sweep(self, report: SweepReport, org_id: str | None) -> None:
        minute = minute_of(self._clock())
        for org, windows in report.org_windows_embedded.items():
            self._add(ActivityCount(org, minute, windows_embedded=windows))
        lag = _org_lags(report, org_id)
        for org, age in lag.items():
            self._add(ActivityCount(org, minute, lag_age_seconds=age))
        if org_id is None:
            self._add(
                ActivityCount(
                    SERVICE_WIDE,
                    minute,
                    windows_embedded=report.windows_embedded,
                    lag_age_seconds=_oldest(report),
                )
            )
        elif report.windows_embedded:
            self._add(ActivityCount(SERVICE_WIDE, minute, windows_embedded=report.windows_embedded))

    def _add(self, count: ActivityCount) -> None:
        key = (count.org_id, count.minute)
        with self._lock:
            found = self._counts.get(key)
            merged = count if found is None else _count(key, found).merged(count)
            self._counts[key] = [
                merged.searches,
                merged.semantic,
                merged.degraded,
                merged.windows_embedded,
                merged.lag_age_seconds,
            ]


def _count(key: tuple[str, datetime], tally: list[Any]) -> ActivityCount:
    return ActivityCount(key[0], key[1], *tally)


def _oldest(report: SweepReport) -> float | None:
    if report.backlog is None:
        return None
    return report.backlog.oldest_age_seconds or 0.0


def _org_lags(report: SweepReport, org_id: str | None) -> dict[str, float]:
    """The lag ages the pass' backlog tells per org: a one-org pass, that org's; a pass
    over all orgs, the longest-waiting orgs it names, and 0 for the orgs it visited when
    it names every org still waiting. An org it neither names nor can clear stays unknown
    for the minute (a gap in its trend), never guessed."""
    backlog = report.backlog
    if backlog is None:
        return {}
    if org_id is not None:
        return {org_id: backlog.oldest_age_seconds or 0.0}
    ages = {o.org_id: backlog.age_seconds(o.waiting_since) for o in backlog.longest}
    if len(backlog.longest) >= backlog.orgs:
        visited = set(report.org_windows_embedded) | set(report.org_lag_events)
        ages.update({org: 0.0 for org in visited if org not in ages})
    return ages


class HistoryActivity:
    """The last hour of searches and sweeping: this replica's `tally` (an observer of the
    history service) stored by `flush`, trends read by `last_hour`."""

    def __init__(self, log: ActivityLog, clock: Clock) -> None:
        self._log = log
        self._clock = clock
        self.tally = ActivityTally(clock)

    def flush(self) -> int:
        """Store what was tallied since the last flush; how many (org, minute) tallies. On
        failure they stay to be stored by the next flush, and the error is raised."""
        counts = self.tally.take()
        if not counts:
            return 0
        start = trend_start(self._clock())
        try:
            self._log.add(counts, forget_before=start - MINUTE)
        except Exception:
            self.tally.give_back(counts, since=start)
            raise
        return len(counts)

    def last_hour(self, org_id: str | None = None) -> ActivityTrend:
        """The trend of one org (None: the whole service) over the last hour. This
        replica's tallies not yet flushed are in it too."""
        now = self._clock()
        scope = SERVICE_WIDE if org_id is None else org_id
        stored = self._log.minutes(scope, trend_start(now))
        return last_hour(org_id, now, _merge([*stored, *self.tally.peek(scope)]))


def _merge(counts: Sequence[ActivityCount]) -> list[ActivityCount]:
    merged: dict[datetime, ActivityCount] = {}
    for count in counts:
        minute = minute_of(count.minute)
        found = merged.get(minute)
        merged[minute] = count if found is None else found.merged(count)
    return list(merged.values())
