"""A sweep pass, purge, re-embed or drop logs one line with its numbers, never its text."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from memory.application.embedding import ModelUnavailable
from memory.application.history.retention import PurgeReport
from memory.application.history.sweep import PartitionReport, SweepReport
from memory.application.observer import ServiceCall
from memory.domain.history.partition import Partition
from memory.infrastructure.history.metrics import OrgLag
from memory.infrastructure.service_log import ServiceLog


def one_line(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    (record,) = [r for r in caplog.records if r.name == "memory.service"]
    return record


def partition(org: str, channel: str = "c") -> Partition:
    return Partition(org, "slack", channel)


def test_a_sweep_pass_logs_its_counts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    report = SweepReport()
    report.add(PartitionReport(partition("acme"), windows_embedded=4, windows_open=1))
    report.add(PartitionReport(partition("acme", "d"), windows_skipped=2, stalled="model"))
    ServiceLog().observe(ServiceCall("history", "sweep", 0.25, report, labels={"trigger": "api"}))
    line = one_line(caplog)
    assert line.levelno == logging.INFO
    assert line.getMessage() == "history.sweep done"
    fields = line.__dict__
    assert fields["windows_embedded"] == 4
    assert fields["windows_skipped"] == 2
    assert fields["partitions_stalled"] == 1
    assert fields["trigger"] == "api"
    assert fields["seconds"] == 0.25


def test_a_purge_logs_its_counts_but_no_per_org_map(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    report = PurgeReport(orgs=2, events_deleted=7, embeddings_deleted=3, per_org={"a": (7, 3)})
    ServiceLog().observe(ServiceCall("history", "purge", 0.1, report))
    fields = one_line(caplog).__dict__
    assert (fields["orgs"], fields["events_deleted"], fields["embeddings_deleted"]) == (2, 7, 3)
    assert "per_org" not in fields


def test_a_failure_logs_the_error_class_not_its_message(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    error = ModelUnavailable("ollama:bge-m3", "server said: <the user's chat text>")
    ServiceLog().observe(ServiceCall("history", "sweep", 1.0, error=error))
    line = one_line(caplog)
    assert line.levelno == logging.WARNING
    assert line.__dict__["error"] == "ModelUnavailable"
    assert "chat text" not in str(line.__dict__)


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_per_org_lag_is_exported_as_a_bounded_aggregate() -> None:
    lag = OrgLag()
    lag.update({f"org-{i}": i * 50 for i in range(40)}, all_orgs=True)  # 0, 50, ..., 1950
    assert gauge("memory_history_sweep_orgs_by_lag", le="0") == 1
    assert gauge("memory_history_sweep_orgs_by_lag", le="100") == 3
    assert gauge("memory_history_sweep_orgs_by_lag", le="1000") == 21
    assert gauge("memory_history_sweep_orgs_by_lag", le="+Inf") == 40
    assert gauge("memory_history_sweep_lag_events_max") == 1950
    # No series names an org.
    names = {s.labels.get("org_id") for m in REGISTRY.collect() for s in m.samples if s.labels}
    assert names == {None}
    # A one-org pass updates that org only; a pass over all orgs replaces the picture.
    lag.update({"org-39": 0}, all_orgs=False)
    assert gauge("memory_history_sweep_lag_events_max") == 1900
    lag.update({"org-1": 5}, all_orgs=True)
    assert gauge("memory_history_sweep_orgs_by_lag", le="+Inf") == 1
    assert gauge("memory_history_sweep_lag_events_sum") == 5
