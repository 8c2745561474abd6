"""How long an org's chat history lives. Embedding rows die with their source events: no
chunk text outlives the cutoff."""

from __future__ import annotations

from datetime import datetime, timedelta

RETENTION_DAYS_MIN = 1
RETENTION_DAYS_MAX = 3650


def check_retention_days(days: int) -> int:
    if not RETENTION_DAYS_MIN <= days <= RETENTION_DAYS_MAX:
        raise ValueError(f"retention must be {RETENTION_DAYS_MIN}..{RETENTION_DAYS_MAX} days")
    return days


def retention_cutoff(now: datetime, days: int) -> datetime:
    """Events that occurred strictly before this instant are purged."""
    return now - timedelta(days=check_retention_days(days))
