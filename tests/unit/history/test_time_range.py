"""The accepted range of instants (ingest `occurred_at`, search time bounds): one rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.time_range import (
    DEFAULT_MAX_FUTURE_SKEW,
    MAX_FUTURE_SKEW_LIMIT,
    AcceptedTimeRange,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RANGE = AcceptedTimeRange(NOW, timedelta(minutes=5))


@pytest.mark.parametrize(
    "value",
    [
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1970, 1, 1, 8, tzinfo=timezone(timedelta(hours=8))),
        NOW,
        NOW + timedelta(minutes=5),
    ],
)
def test_instants_from_the_epoch_to_now_plus_the_skew_are_accepted(value: datetime) -> None:
    assert RANGE.check(value, "at") == value and RANGE.contains(value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "before 1970-01-01"),
        (datetime(1970, 1, 1, 7, 59, tzinfo=timezone(timedelta(hours=8))), "before 1970"),
        (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))), "before 1970"),
        (NOW + timedelta(minutes=5, microseconds=1), "300 s after the server's clock"),
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))), "300 s"),
    ],
)
def test_outside_the_range_is_invalid_naming_the_field(value: datetime, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        RANGE.check(value, "events.3.occurred_at")
    assert caught.value.field == "events.3.occurred_at"
    assert reason in caught.value.reason
    assert not RANGE.contains(value)


def test_a_naive_instant_is_invalid() -> None:
    with pytest.raises(InvalidInput, match="timezone"):
        RANGE.check(datetime(2026, 1, 1), "since")


def test_the_skew_is_bounded_and_the_stored_range_uses_its_limit() -> None:
    with pytest.raises(ValueError):
        AcceptedTimeRange(NOW, MAX_FUTURE_SKEW_LIMIT + timedelta(seconds=1))
    with pytest.raises(ValueError):
        AcceptedTimeRange(NOW, timedelta(seconds=-1))
    stored = AcceptedTimeRange.for_stored_rows(NOW)
    assert stored.contains(NOW + MAX_FUTURE_SKEW_LIMIT)
    assert not stored.contains(NOW + MAX_FUTURE_SKEW_LIMIT + timedelta(microseconds=1))
    assert AcceptedTimeRange(NOW).latest == NOW + DEFAULT_MAX_FUTURE_SKEW
