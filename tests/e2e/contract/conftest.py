"""Reports how many cases the contract test sent to how many operations (recorded per run,
issue 9), and how many requests its stateful phase sent. The tests record their counts as
report properties, so that the summary also appears when pytest-xdist ran them elsewhere."""

from __future__ import annotations

from typing import Any

import pytest


def _recorded(terminalreporter: pytest.TerminalReporter, name: str) -> Any:
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", None) != "call":
                continue
            for key, value in getattr(report, "user_properties", ()):
                if key == name:
                    return value
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    cases = _recorded(terminalreporter, "contract_cases")
    if cases:
        terminalreporter.write_line(
            f"contract: {sum(cases.values())} generated cases over {len(cases)} operations "
            f"(max_examples {_recorded(terminalreporter, 'contract_max_examples')} per operation"
            " and phase)"
        )
    called = _recorded(terminalreporter, "contract_stateful_requests")
    if called:
        terminalreporter.write_line(
            f"contract, stateful phase: {sum(called.values())} requests over {len(called)}"
            " operations"
        )
