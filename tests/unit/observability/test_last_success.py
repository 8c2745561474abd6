"""The times of the last successful sweep pass and purge over all orgs, which the "no recent
sweep" alert reads: a failed, interrupted or one-org run leaves them where they were."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY

from memory.application.history.retention import PurgeReport
from memory.application.history.sweep import SweepReport
from memory.application.observer import ServiceCall
from memory.infrastructure import backup_metrics
from memory.infrastructure.history.metrics import (
    PURGE_LAST_SUCCESS,
    SWEEP_LAST_SUCCESS,
    HistoryMetrics,
)

SWEEP = "memory_history_sweep_last_success_timestamp_seconds"
PURGE = "memory_history_purge_last_success_timestamp_seconds"
BACKUP = "memory_backup_last_success_timestamp_seconds"


def _value(name: str) -> float | None:
    return REGISTRY.get_sample_value(name)


def _sweep(report: SweepReport | None, error: Exception | None = None, **labels: str) -> None:
    HistoryMetrics().observe(
        ServiceCall("history", "sweep", 0.1, report, error, {"trigger": "interval", **labels})
    )


def test_a_pass_over_all_orgs_sets_the_time_and_a_stalled_partition_does_not_stop_it() -> None:
    SWEEP_LAST_SUCCESS.set(0)
    before = time.time()
    _sweep(SweepReport(partitions=3, partitions_stalled=1))
    value = _value(SWEEP)
    assert value is not None and before <= value <= time.time()


def test_failed_interrupted_and_one_org_passes_leave_the_time_alone() -> None:
    SWEEP_LAST_SUCCESS.set(0)
    _sweep(None, RuntimeError("database gone"))
    _sweep(SweepReport(partitions=3, partitions_interrupted=1))
    _sweep(SweepReport(partitions=1), org_id="acme")
    assert _value(SWEEP) == 0


def test_only_a_purge_of_all_orgs_that_worked_sets_the_purge_time() -> None:
    PURGE_LAST_SUCCESS.set(0)
    metrics = HistoryMetrics()
    metrics.observe(ServiceCall("history", "purge", 0.1, None, RuntimeError("x")))
    metrics.observe(
        ServiceCall("history", "purge", 0.1, PurgeReport(orgs=1), None, {"org_id": "a"})
    )
    assert _value(PURGE) == 0
    metrics.observe(ServiceCall("history", "purge", 0.1, PurgeReport(orgs=2)))
    value = _value(PURGE)
    assert value is not None and value > 0


def test_the_backup_time_comes_from_the_installed_source_and_is_absent_without_one() -> None:
    try:
        backup_metrics.set_source(None)
        assert _value(BACKUP) is None
        backup_metrics.set_source(lambda: None)
        assert _value(BACKUP) is None
        backup_metrics.set_source(lambda: 1_700_000_000.0)
        assert _value(BACKUP) == 1_700_000_000.0

        def broken() -> float:
            raise OSError("the backup repository is not mounted")

        backup_metrics.set_source(broken)
        assert _value(BACKUP) is None  # the scrape still answers
    finally:
        backup_metrics.set_source(None)
