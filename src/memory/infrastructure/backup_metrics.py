"""`memory_backup_last_success_timestamp_seconds`: when the last backup that succeeded
finished (docs/adr/0108), for the backup-age alert in deploy/prometheus/alerts.yml.

Backups are taken by a separate command, so this process learns of them through a source
the backup code installs with `set_source` (a callable answering the Unix time of the last
good backup, or None when there is none yet). It is called on every scrape, so it must
answer from memory or a cheap cached read. Without a source, or while it answers None, the
metric has no sample (a deployment without backups gets no age to alert on, not 1970).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

log = logging.getLogger(__name__)

NAME = "memory_backup_last_success_timestamp_seconds"
HELP = "When the last successful backup finished (Unix time); no sample before the first one"

LastBackup = Callable[[], float | None]


class BackupAge(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source: LastBackup | None = None

    def set_source(self, source: LastBackup | None) -> None:
        with self._lock:
            self._source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, HELP)
        with self._lock:
            source = self._source
        finished = None
        if source is not None:
            try:
                finished = source()
            except Exception:
                # A scrape never fails because of one source; the metric goes missing,
                # which the backup-age alert's `absent` arm reports where backups are set up.
                log.exception("the last backup's time could not be read")
        if finished is not None:
            family.add_metric([], finished)
        yield family


BACKUP_AGE = BackupAge()
REGISTRY.register(BACKUP_AGE)


def set_source(source: LastBackup | None) -> None:
    """Install (or remove, with None) what tells /metrics when the last backup finished."""
    BACKUP_AGE.set_source(source)
