"""What `memory serve` tells /metrics about backups (`memory_backup_last_success_timestamp_
seconds`, docs/adr/0108): when the newest backup of the home's repository finished, read
from pgBackRest's `backup.info` at most once a minute. A server on an external database has
no repository of its own here, and so no sample (its operator's backups are elsewhere)."""

from __future__ import annotations

import threading
import time

from memory.entrypoints.database_url import embedded_cluster
from memory.infrastructure import backup_metrics
from memory.infrastructure.postgres.pgbackrest import BackupRepository
from memory.infrastructure.settings import Settings

# A scrape reads the file at most this often; a backup shows within this long.
REFRESH_SECONDS = 60.0


class LastBackup:
    """The backup-age source: the newest backup's stop time, cached."""

    def __init__(self, repository: BackupRepository) -> None:
        self._repository = repository
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._value: float | None = None

    def __call__(self) -> float | None:
        with self._lock:
            now = time.monotonic()
            if self._read_at is None or now - self._read_at >= REFRESH_SECONDS:
                self._value = self._repository.last_backup_stopped()
                self._read_at = now
            return self._value


def install_backup_age(settings: Settings) -> None:
    if settings.database_url:
        return
    backup_metrics.set_source(LastBackup(embedded_cluster(settings).backups))
