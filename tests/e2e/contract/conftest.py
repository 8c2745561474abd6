"""Reports how many cases the contract test generated (recorded per run, issue 9) and how
many requests its stateful phase sent to how many operations."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    module = sys.modules.get("tests.e2e.contract.test_openapi_contract")
    cases = getattr(module, "CASES", None)
    if cases:
        terminalreporter.write_line(
            f"contract: {sum(cases.values())} generated cases over {len(cases)} operations "
            f"(max_examples {module.EXAMPLES_PER_OPERATION} per operation and phase)"  # type: ignore[union-attr]
        )
    called = getattr(module, "STATEFUL_CALLED", None)
    if called:
        terminalreporter.write_line(
            f"contract, stateful phase: {sum(called.values())} requests over {len(called)}"
            " operations"
        )
