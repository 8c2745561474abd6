"""`FileErasureJournal` runs the cases the in-memory fake stands for, on a real file, and
survives what a file meets: a torn last line, processes appending at once."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.fakes import InMemoryErasureJournal

from memory.application.durability.erasure_journal import ErasureJournal
from memory.domain.audit.admin_action import Action
from memory.domain.durability.erasure_record import ErasureRecord
from memory.infrastructure.durability.erasure_journal_file import FileErasureJournal, journal_path

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _record(minutes: int, org: str = "acme") -> ErasureRecord:
    return ErasureRecord(T + timedelta(minutes=minutes), Action.ORG_ERASED, org, org)


@pytest.fixture(params=["memory", "file"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> ErasureJournal:
    if request.param == "memory":
        return InMemoryErasureJournal()
    return FileErasureJournal(journal_path(tmp_path / "backups"))


def test_records_come_back_in_order_and_prune_drops_only_the_older(
    journal: ErasureJournal,
) -> None:
    assert journal.records() == []
    assert journal.prune(T) == 0
    for minutes in (0, 1, 2):
        journal.append(_record(minutes))
    assert journal.records() == [_record(0), _record(1), _record(2)]
    assert journal.prune(T + timedelta(minutes=1)) == 1
    assert journal.records() == [_record(1), _record(2)]
    journal.append(_record(3))
    assert journal.records()[-1] == _record(3)


def test_a_torn_last_line_is_skipped_and_the_next_append_is_kept(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "backups")
    journal = FileErasureJournal(path)
    journal.append(_record(0))
    with path.open("a") as torn:
        torn.write('{"recorded_at": "2026-12-01T12:0')  # a crash mid-append
    journal.append(_record(1))
    assert journal.records() == [_record(0), _record(1)]


def _append_many(path: Path, org: str) -> None:
    journal = FileErasureJournal(path)
    for minutes in range(50):
        journal.append(_record(minutes, org))


def test_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "backups")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(path, f"org{i}")) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    records = FileErasureJournal(path).records()
    assert sorted((r.target, r.recorded_at) for r in records) == sorted(
        (f"org{i}", _record(m).recorded_at) for i in range(3) for m in range(50)
    )
