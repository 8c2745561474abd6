"""The backup age /metrics reports (docs/adr/0108) comes from pgBackRest's `backup.info`:
the newest backup's stop time, no sample before the first backup; and without pgBackRest a
command says how to install it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.infrastructure.postgres.pgbackrest import (
    STANZA,
    BackupError,
    BackupRepository,
    ClusterLocation,
)

HEADER = """[backrest]
backrest-format=5
backrest-version="2.45"

[db]
db-id=1
"""
CURRENT = """
[backup:current]
20261202-004517F={"backrest-format":5,"backup-timestamp-start":1796172317,"backup-timestamp-stop":1796172321,"backup-type":"full"}
20261202-004517F_20261202-005001I={"backrest-format":5,"backup-timestamp-start":1796172601,"backup-timestamp-stop":1796172607,"backup-type":"incr"}
"""


def _repository(tmp_path: Path, info: str | None) -> BackupRepository:
    location = ClusterLocation(
        data=tmp_path / "data",
        server_dir=tmp_path,
        socket_dir=tmp_path,
        user="memory",
        password="",
        run_as=None,
    )
    repository = BackupRepository(location, tmp_path / "backups")
    if info is not None:
        stanza = tmp_path / "backups" / "backup" / STANZA
        stanza.mkdir(parents=True)
        (stanza / "backup.info").write_text(info)
    return repository


def test_the_newest_backup_s_stop_time_and_none_before_the_first(tmp_path: Path) -> None:
    assert _repository(tmp_path / "none", None).last_backup_stopped() is None
    assert _repository(tmp_path / "empty", HEADER).last_backup_stopped() is None
    assert _repository(tmp_path / "two", HEADER + CURRENT).last_backup_stopped() == 1796172607


def test_without_pgbackrest_a_command_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BackupError, match="pgBackRest is not installed"):
        _repository(tmp_path, HEADER).info()
