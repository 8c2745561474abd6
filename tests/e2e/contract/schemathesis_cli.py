"""Runs schemathesis's own engine (its CLI) against a served `memory serve`, with the hooks of
`fuzz_hooks`, and reads back which operations its requests reached.

Both contract phases run this way rather than through `schema.parametrize()`: the CLI is a
process of its own, so it behaves the same whether pytest runs in one process or on
pytest-xdist workers (under xdist, `parametrize()` generated no cases at all, docs/adr/0143),
and hypothesis's state machine under pytest rejects a live service, which answers a replay
differently (docs/adr/0123)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.contract import fuzz_hooks

ROOT = Path(__file__).resolve().parents[3]
# schemathesis's checks that every phase applies to every answer: no 5xx, a declared status,
# JSON where JSON is declared, a body that matches its schema.
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)
REQUEST_SECONDS = 30


@dataclass(frozen=True)
class FuzzRun:
    """What one run of the CLI printed, and `METHOD /path` of every request it sent."""

    output: str
    called: Counter[str]


def run_schemathesis(
    served: str,
    workdir: Path,
    *,
    name: str,
    phases: Sequence[str],
    checks: Sequence[str],
    max_examples: int,
    timeout: float,
    config: str = "",
    workers: int = 1,
    operation_ids: Sequence[str] = (),
) -> FuzzRun:
    """One `schemathesis run` of `phases` against `served`, over the operations named in
    `operation_ids` (none: every one); asserts that it passed (any failed check, error or
    crash fails the calling test, with the CLI's report)."""
    config_file = workdir / f"{name}.toml"
    config_file.write_text(config, "utf-8")
    events = workdir / f"{name}.ndjson"
    environment = {**os.environ, "SCHEMATHESIS_HOOKS": fuzz_hooks.__name__}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")])
    run = subprocess.run(
        [
            str(Path(sys.executable).with_name("schemathesis")),
            f"--config-file={config_file}",
            "run",
            f"{served}/openapi.json",
            "--phases=" + ",".join(phases),
            "--checks=" + ",".join(checks),
            f"--header=Authorization: Bearer {TEST_ADMIN_TOKEN}",
            f"--max-examples={max_examples}",
            f"--request-timeout={REQUEST_SECONDS}",
            "--suppress-health-check=all",
            f"--workers={workers}",
            "--report=ndjson",
            f"--report-ndjson-path={events}",
            "--no-color",
            *(f"--include-operation-id={operation_id}" for operation_id in operation_ids),
        ],
        cwd=workdir,  # its cache and hypothesis's database go there, not into the repository
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    return FuzzRun(run.stdout, called_operations(events))


def called_operations(events: Path) -> Counter[str]:
    """`METHOD /path` of every request a run sent, from its NDJSON report."""
    called: Counter[str] = Counter()
    for line in events.read_text("utf-8").splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if finished is None:
            continue
        for case in (finished["recorder"].get("cases") or {}).values():
            called[f"{case['value']['method']} {case['value']['path']}"] += 1
    return called
