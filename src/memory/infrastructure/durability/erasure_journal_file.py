"""The erasure journal as a file of JSON lines beside the backups
(`<backup repository>/memory/erasures.jsonl`): outside the data directory, so a restore of
the cluster leaves it as it was (docs/adr/0106). Appends are serialised between processes
with an exclusive lock and on disk (fsync) before the erasure commits."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from memory.domain.durability.erasure_record import ErasureRecord

JOURNAL_DIRECTORY = "memory"
JOURNAL_FILE = "erasures.jsonl"


def journal_path(repository: Path) -> Path:
    return repository / JOURNAL_DIRECTORY / JOURNAL_FILE


class FileErasureJournal:
    """`ErasureJournal` in one file; a torn last line (a crash mid-append) is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: ErasureRecord) -> None:
        with self._lock(), self.path.open("a+b") as journal:
            # A line torn by a crash mid-append is ended, so this record stays whole.
            journal.seek(0, 2)
            torn = journal.tell() > 0 and self._last_byte(journal) != b"\n"
            journal.write((("\n" if torn else "") + record.to_json() + "\n").encode())
            journal.flush()
            os.fsync(journal.fileno())

    @staticmethod
    def _last_byte(journal: BinaryIO) -> bytes:
        journal.seek(-1, 2)
        last = journal.read(1)
        journal.seek(0, 2)
        return last

    def records(self) -> list[ErasureRecord]:
        if not self.path.exists():
            return []
        with self._lock():
            return self._read()

    def prune(self, before: datetime) -> int:
        if not self.path.exists():
            return 0
        with self._lock():
            records = self._read()
            kept = [r for r in records if r.recorded_at >= before]
            if len(kept) < len(records):
                fresh = self.path.with_suffix(".tmp")
                with fresh.open("w") as out:
                    out.write("".join(r.to_json() + "\n" for r in kept))
                    out.flush()
                    os.fsync(out.fileno())
                fresh.replace(self.path)
        return len(records) - len(kept)

    def _read(self) -> list[ErasureRecord]:
        records = []
        for line in self.path.read_text().splitlines():
            with contextlib.suppress(ValueError, KeyError):
                records.append(ErasureRecord.from_json(line))
        return records

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Appends and a prune's rewrite take turns, between processes too."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.with_suffix(".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
