"""Which backup a restore to a moment starts from, and the targets refused before anything
is touched (docs/adr/0105)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.infrastructure.postgres.cluster_restore import RestoreRefused, check_target
from memory.infrastructure.postgres.pgbackrest import Backup

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _backup(label: str, stop: datetime) -> Backup:
    return Backup(
        label=label,
        kind="full",
        started_at=stop - timedelta(minutes=1),
        stopped_at=stop,
        size_bytes=1,
        repository_bytes=1,
        restorable_from=stop + timedelta(seconds=1),
        restorable_until=NOW,
    )


OLD = _backup("old", NOW - timedelta(days=2))
NEW = _backup("new", NOW - timedelta(days=1))


def test_a_target_restores_from_the_newest_backup_consistent_before_it() -> None:
    assert check_target([OLD, NEW], None, NOW) is NEW
    assert check_target([OLD, NEW], NOW - timedelta(hours=1), NOW) is NEW
    assert check_target([OLD, NEW], NEW.restorable_from - timedelta(seconds=1), NOW) is OLD
    assert check_target([OLD, NEW], OLD.restorable_from, NOW) is OLD


@pytest.mark.parametrize(
    ("backups", "target", "reason"),
    [
        ([], None, "holds no backup yet"),
        ([OLD], NOW + timedelta(seconds=1), "is in the future"),
        ([OLD], OLD.restorable_from - timedelta(seconds=1), "before the oldest backup"),
        ([OLD], datetime(2026, 12, 1, 11, 0), "time zone"),
    ],
)
def test_targets_no_backup_can_reach_are_refused_with_the_reason(
    backups: list[Backup], target: datetime | None, reason: str
) -> None:
    with pytest.raises(RestoreRefused, match=reason):
        check_target(backups, target, NOW)
