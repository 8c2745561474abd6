"""Which build of `memory` is running: the version `memory --version` prints and the source
commit, for `memory_build_info` (docs/adr/0108).

The commit comes from the file `BUILD_COMMIT` in the package when the image build wrote it
(deploy/Dockerfile), else from git when the package runs from a source checkout (an editable
install: `src/memory` inside the repository), else `unknown`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import subprocess
from importlib import resources
from pathlib import Path

from prometheus_client import Gauge

UNKNOWN = "unknown"
COMMIT_FILE = "BUILD_COMMIT"
# The exporter's label value: a full or abbreviated hex object name, nothing else (a file
# or a git answer with anything else in it is not shown).
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
GIT_TIMEOUT_SECONDS = 2.0

BUILD_INFO = Gauge(
    "memory_build_info",
    "Always 1; its labels name the running build: version (as memory --version) and commit",
    ["version", "commit"],
)


def version() -> str:
    try:
        return importlib.metadata.version("memory")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN


@functools.cache
def commit() -> str:
    return _commit_file() or _checkout_commit() or UNKNOWN


def publish() -> None:
    """Set `memory_build_info` (once per process; the value never changes)."""
    BUILD_INFO.labels(version(), commit()).set(1)


def _commit_file() -> str | None:
    try:
        text = resources.files("memory").joinpath(COMMIT_FILE).read_text("utf-8")
    except (FileNotFoundError, OSError):
        return None
    return _valid(text)


def _checkout_commit() -> str | None:
    package = Path(__file__).resolve().parents[1]
    checkout = package.parents[1]
    if package.parent.name != "src" or not (checkout / "pyproject.toml").is_file():
        return None  # an installed package: any repository around it is not its source
    try:
        answer = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return _valid(answer.stdout) if answer.returncode == 0 else None


def _valid(text: str) -> str | None:
    value = text.strip().lower()
    return value if _COMMIT.fullmatch(value) else None
