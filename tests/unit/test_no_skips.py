"""tests/no_skips.py: a run with a skipped test fails, in one process and under pytest-xdist,
and a run without one passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Each case runs pytest in a subprocess (two of them start xdist workers).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 120


def run_pytest(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (directory / "pytest.ini").write_text("[pytest]\n", "utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.no_skips",
            "-p",
            "no:cacheprovider",
            # Not needed to run a plain test, and its import (hypothesis's with it) was most
            # of each run's CPU.
            "-p",
            "no:schemathesis",
            "-c",
            str(directory / "pytest.ini"),
            "--rootdir",
            str(directory),
            str(directory),
            *extra,
        ],
        cwd=ROOT,  # where `tests.no_skips` is imported from
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=False,
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "xdist"])
def test_a_run_with_a_skipped_test_fails_and_names_it(
    tmp_path: Path, workers: tuple[str, ...]
) -> None:
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "def test_gives_up():\n    pytest.skip('cannot run here')\n",
        "utf-8",
    )
    run = run_pytest(tmp_path, *workers)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout
    assert "1 skipped test(s), and nothing may be skipped" in run.stdout
    assert "test_some.py::test_gives_up" in run.stdout
    assert "1 passed, 1 skipped" in run.stdout


def test_a_run_without_skips_passes(tmp_path: Path) -> None:
    (tmp_path / "test_some.py").write_text("def test_runs():\n    pass\n", "utf-8")
    run = run_pytest(tmp_path, "-n", "2")
    assert run.returncode == pytest.ExitCode.OK, run.stdout
    assert "skipped" not in run.stdout
