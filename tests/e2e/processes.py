"""`memory serve` as a real process, for the e2e tests that need one (signals, kill -9, a
database stopped underneath it): the package's `ServeProcess` with the tests' settings."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from tests.conftest import TEST_ADMIN_TOKEN

from memory.entrypoints.serve_process import ServeProcess, serve_environment, served

# Hash models start in seconds; this leaves room for a loaded 2-core machine.
STARTUP_DEADLINE_SECONDS = 60
# Fast, deterministic models: these tests are about processes and the database, not meaning.
HASH_MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}


def serve(home: Path, port: int, *, admin_token: bool = True, **env_overrides: str) -> ServeProcess:
    """Start `memory serve` on `port` with only the given MEMORY_* settings, and the test
    admin key (`AUTH_HEADERS`) unless `admin_token=False` (then the server bootstraps its
    own key into the home: `admin_headers(home)`). Its output goes to a pipe that
    `terminate` returns."""
    settings = {"MEMORY_HOME": str(home)}
    if admin_token:
        settings["MEMORY_ADMIN_TOKEN"] = TEST_ADMIN_TOKEN
    return ServeProcess(settings | env_overrides, port=port)


def memory_cli(
    home: Path, *args: str | bytes, **env_overrides: str
) -> subprocess.CompletedProcess[str]:
    """Run `memory <args>` to completion with only the given MEMORY_* settings. An argument
    may be bytes: what a shell passes for text that is not UTF-8."""
    return subprocess.run(
        [sys.executable, "-m", "memory.entrypoints.cli", *args],
        env=serve_environment({"MEMORY_HOME": str(home), **env_overrides}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_healthy(url: str, proc: ServeProcess) -> httpx.Response:
    """The first answer of `url` (any status) once the server listens."""
    return proc.first_answer(STARTUP_DEADLINE_SECONDS, url)


def admin_headers(home: Path) -> dict[str, str]:
    """The bootstrap admin key `memory serve` wrote to its home (README quickstart)."""
    secret = (home / "admin-token").read_text().strip()
    return {"Authorization": f"Bearer {secret}"}


def terminate(proc: ServeProcess) -> str:
    """SIGTERM, wait for a clean exit, return the process's log."""
    return proc.stop()


@contextmanager
def served_on(database_url: str, home: Path, **env_overrides: str) -> Iterator[str]:
    """A `memory serve` on `database_url` with the hash models and the test admin key
    (`TEST_ADMIN_TOKEN`); yields its base URL and stops it (cleanly) afterwards. Its output
    goes to `home`/serve.log: a server answering thousands of requests would fill a pipe."""
    settings = {
        "MEMORY_HOME": str(home),
        "MEMORY_DATABASE_URL": database_url,
        "MEMORY_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
        **HASH_MODELS,
    }
    with served(
        settings | env_overrides,
        deadline_seconds=STARTUP_DEADLINE_SECONDS,
        log_path=home / "serve.log",
    ) as server:
        yield server.base_url


def stack_traces(log: str) -> str:
    """The lines of a server's log that carry a stack trace, each after the line before it:
    what an assertion shows, since the whole log is cut short in CI's output."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback" in line]
    found = ["\n".join(lines[max(0, i - 1) : i + 1]) for i in starts]
    return "\n---\n".join(found)
