"""The console's last-hour trends (docs/adr/0122): minutes filled in, tallies of searches
and sweep passes per org and minute, and what a pass' backlog may tell about an org's lag."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import FakeClock

from memory.application.history.activity import ActivityTally, HistoryActivity
from memory.application.history.ports import OrgWaiting, SweepBacklog
from memory.application.history.sweep import SweepReport
from memory.application.observer import ServiceCall
from memory.domain.history.activity import (
    SERVICE_WIDE,
    TREND_MINUTES,
    ActivityCount,
    last_hour,
    minute_of,
)
from memory.domain.history.search import HistorySearchResult, SemanticState

NOW = datetime(2026, 3, 2, 9, 30, 40, tzinfo=UTC)


def search(state: SemanticState, org: str = "acme", *, ok: bool = True) -> ServiceCall:
    return ServiceCall(
        "history",
        "search",
        0.01,
        HistorySearchResult([], state) if ok else None,
        None if ok else RuntimeError("x"),
        {"org_id": org},
    )


def sweep(report: SweepReport, **labels: str) -> ServiceCall:
    return ServiceCall("history", "sweep", 0.5, report, None, labels)


def backlog(orgs: int, *waiting: tuple[str, float]) -> SweepBacklog:
    longest = tuple(OrgWaiting(o, 1, NOW - timedelta(seconds=s)) for o, s in waiting)
    oldest = min((w.waiting_since for w in longest), default=None)
    return SweepBacklog(NOW, sum(1 for _ in waiting), orgs, oldest, longest)


def counts(tally: ActivityTally) -> dict[str, ActivityCount]:
    return {c.org_id: c for c in tally.take()}


def test_the_trend_is_sixty_minutes_ending_with_the_current_one_gaps_filled() -> None:
    stored = [
        ActivityCount("acme", minute_of(NOW), searches=3, semantic=2, degraded=1),
        ActivityCount("acme", minute_of(NOW) - timedelta(minutes=59), windows_embedded=4),
        ActivityCount("acme", minute_of(NOW) - timedelta(minutes=60), searches=99),
    ]
    trend = last_hour("acme", NOW, stored)
    assert len(trend.minutes) == TREND_MINUTES
    assert trend.minutes[-1].minute == datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    assert trend.minutes[0].minute == datetime(2026, 3, 2, 8, 31, tzinfo=UTC)
    assert (trend.minutes[0].windows_embedded, trend.minutes[-1].searches) == (4, 3)
    assert trend.searches == 3  # the minute before the hour is left out
    assert trend.minutes[-1].degraded_share == 0.5
    assert trend.minutes[1].degraded_share is None and trend.minutes[1].lag_age_seconds is None
    assert (trend.windows_embedded, trend.degraded_share, trend.lag_age_seconds) == (4, 0.5, None)


def test_searches_count_for_their_org_and_the_service_by_semantic_state() -> None:
    tally = ActivityTally(FakeClock(NOW))
    for state in (SemanticState.ON, SemanticState.DEGRADED, SemanticState.OFF):
        tally.observe(search(state))
    tally.observe(search(SemanticState.ON, "globex"))
    tally.observe(search(SemanticState.ON, ok=False))  # a failed call answered nothing
    found = counts(tally)
    assert (found["acme"].searches, found["acme"].semantic, found["acme"].degraded) == (3, 2, 1)
    assert (found[SERVICE_WIDE].searches, found[SERVICE_WIDE].semantic) == (4, 3)
    assert found["acme"].minute == minute_of(NOW)
    assert tally.take() == []  # handed over once


def test_a_new_minute_is_a_new_tally() -> None:
    clock = FakeClock(NOW)
    tally = ActivityTally(clock)
    tally.observe(search(SemanticState.ON))
    clock.advance(seconds=30)
    tally.observe(search(SemanticState.ON))
    minutes = sorted(c.minute for c in tally.take() if c.org_id == "acme")
    assert minutes == [minute_of(NOW), minute_of(NOW) + timedelta(minutes=1)]


def test_a_pass_over_all_orgs_counts_windows_per_org_and_the_longest_waits() -> None:
    tally = ActivityTally(FakeClock(NOW))
    report = SweepReport(windows_embedded=7, org_windows_embedded={"acme": 5, "globex": 2})
    report.backlog = backlog(2, ("acme", 120.0), ("initech", 30.0))
    tally.observe(sweep(report, trigger="interval"))
    found = counts(tally)
    assert found[SERVICE_WIDE].windows_embedded == 7
    assert found[SERVICE_WIDE].lag_age_seconds == 120.0
    assert (found["acme"].windows_embedded, found["acme"].lag_age_seconds) == (5, 120.0)
    assert found["initech"].lag_age_seconds == 30.0
    # The backlog names every org still waiting: a visited org not among them waits no more.
    assert found["globex"].lag_age_seconds == 0.0


def test_an_org_the_backlog_cannot_clear_has_no_lag_for_the_minute() -> None:
    tally = ActivityTally(FakeClock(NOW))
    report = SweepReport(windows_embedded=2, org_windows_embedded={"globex": 2})
    report.backlog = backlog(6, ("acme", 120.0))  # five more orgs wait, unnamed
    tally.observe(sweep(report))
    found = counts(tally)
    assert found["globex"].lag_age_seconds is None
    assert found["globex"].windows_embedded == 2


def test_a_one_org_pass_tells_that_orgs_lag_only() -> None:
    tally = ActivityTally(FakeClock(NOW))
    report = SweepReport(windows_embedded=3, org_windows_embedded={"acme": 3})
    report.backlog = backlog(0)
    tally.observe(sweep(report, org_id="acme", trigger="api"))
    found = counts(tally)
    assert found["acme"].lag_age_seconds == 0.0
    assert found[SERVICE_WIDE].lag_age_seconds is None  # not the service's backlog
    assert found[SERVICE_WIDE].windows_embedded == 3


def test_tallies_of_the_same_minute_merge_counts_add_lag_keeps_the_larger() -> None:
    minute = minute_of(NOW)
    merged = ActivityCount("acme", minute, 1, 1, 0, 2, 30.0).merged(
        ActivityCount("acme", minute, 2, 1, 1, 3, 10.0)
    )
    assert merged == ActivityCount("acme", minute, 3, 2, 1, 5, 30.0)
    assert ActivityCount("acme", minute).merged(merged).lag_age_seconds == 30.0


class FailingLog:
    def __init__(self) -> None:
        self.fail = True
        self.added: list[ActivityCount] = []

    def add(self, counts: list[ActivityCount], *, forget_before: datetime) -> None:
        if self.fail:
            raise ConnectionError("down")
        self.added += counts

    def minutes(self, org_id: str, since: datetime) -> list[ActivityCount]:
        return [c for c in self.added if c.org_id == org_id and c.minute >= since]


def test_a_failed_flush_keeps_its_tallies_for_the_next_within_the_hour() -> None:
    clock = FakeClock(NOW)
    log = FailingLog()
    activity = HistoryActivity(log, clock)
    activity.tally.observe(search(SemanticState.ON))
    with pytest.raises(ConnectionError):
        activity.flush()
    # Not stored yet, but this replica's trend shows it.
    assert activity.last_hour("acme").searches == 1
    log.fail = False
    assert activity.flush() == 2  # acme and the service
    assert activity.last_hour().searches == 1 and activity.flush() == 0

    activity.tally.observe(search(SemanticState.ON))
    log.fail = True
    clock.advance(hours=2)
    with pytest.raises(ConnectionError):
        activity.flush()
    log.fail = False
    assert activity.flush() == 0  # too old for any trend: dropped
