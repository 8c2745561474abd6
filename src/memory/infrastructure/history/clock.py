"""The real clock (tests pass their own)."""

from __future__ import annotations

from datetime import UTC, datetime


def system_clock() -> datetime:
    return datetime.now(UTC)
