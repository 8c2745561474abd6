"""The last sweep pass and purge /healthz shows: each with its outcome, a failed one
included (its error's class, never its message)."""

from __future__ import annotations

from memory.application.errors import DatabaseUnavailable
from memory.application.history.retention import PurgeReport
from memory.application.history.sweep import SweepReport
from memory.application.observer import ServiceCall
from memory.entrypoints.history_runtime import LastRuns


def sweep(result: object = None, error: Exception | None = None) -> ServiceCall:
    return ServiceCall("history", "sweep", 1.5, result, error, {"trigger": "interval"})


def test_a_pass_that_worked_shows_its_counts_and_ok() -> None:
    runs = LastRuns()
    runs.observe(sweep(SweepReport(windows_embedded=3, partitions=2)))
    assert runs.sweep is not None
    assert (runs.sweep["outcome"], runs.sweep["windows_embedded"]) == ("ok", 3)
    assert "error" not in runs.sweep


def test_a_stalled_or_interrupted_pass_says_so() -> None:
    runs = LastRuns()
    runs.observe(sweep(SweepReport(partitions=2, partitions_stalled=1)))
    assert runs.sweep is not None and runs.sweep["outcome"] == "stalled"
    runs.observe(sweep(SweepReport(partitions=2, partitions_interrupted=1)))
    assert runs.sweep["outcome"] == "interrupted"


def test_a_failed_pass_replaces_the_last_good_one_and_names_only_the_error_class() -> None:
    runs = LastRuns()
    runs.observe(sweep(SweepReport(windows_embedded=3)))
    runs.observe(sweep(error=DatabaseUnavailable("connection to 10.0.0.5 secret-host refused")))
    assert runs.sweep is not None
    assert (runs.sweep["outcome"], runs.sweep["error"]) == ("failed", "DatabaseUnavailable")
    assert "windows_embedded" not in runs.sweep
    assert "secret-host" not in str(runs.sweep)
    assert runs.passes == {"interval": 2}
    assert runs.windows_embedded_total == 3


def test_the_purge_has_an_outcome_too() -> None:
    runs = LastRuns()
    runs.observe(ServiceCall("history", "purge", 0.1, PurgeReport(orgs=1, events_deleted=4)))
    assert runs.purge is not None
    assert (runs.purge["outcome"], runs.purge["events_deleted"]) == ("ok", 4)
    runs.observe(ServiceCall("history", "purge", 0.1, None, RuntimeError("x")))
    assert runs.purge == {
        "finished_at": runs.purge["finished_at"],
        "outcome": "failed",
        "error": "RuntimeError",
    }
