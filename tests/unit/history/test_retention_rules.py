from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.domain.history.retention import (
    RETENTION_DAYS_MAX,
    RETENTION_DAYS_MIN,
    check_retention_days,
    retention_cutoff,
)


def test_cutoff_is_now_minus_the_days() -> None:
    now = datetime(2026, 3, 31, 12, tzinfo=UTC)
    assert retention_cutoff(now, 30) == now - timedelta(days=30)


def test_bounds() -> None:
    assert (RETENTION_DAYS_MIN, RETENTION_DAYS_MAX) == (1, 3650)
    assert check_retention_days(1) == 1
    assert check_retention_days(3650) == 3650
    for bad in (0, -1, 3651):
        with pytest.raises(ValueError):
            check_retention_days(bad)
