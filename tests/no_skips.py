"""A pytest plugin (loaded by tests/conftest.py): a run in which any test was skipped fails.

The suite's rule is that nothing is skipped (docs/testing.md): a test that cannot run here is
not generated, and the pytest header says so. A skip (a `pytest.skip()` left in a fixture, a
skip marker, a plugin that skips what it cannot run) would otherwise pass unseen among 1,900
dots. Under pytest-xdist the controller sees every worker's reports and decides; a worker
only reports."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if not skipped:
        return
    names = sorted({report.nodeid for report in skipped})
    reporter.ensure_newline()
    reporter.write_line(
        f"{len(names)} skipped test(s), and nothing may be skipped (docs/testing.md): "
        + ", ".join(names[:20]),
        red=True,
    )
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
