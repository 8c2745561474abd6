"""`memory serve` as a real process, for the e2e tests that need one (signals, kill -9, a
database stopped underneath it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from tests.conftest import TEST_ADMIN_TOKEN

from memory.infrastructure.postgres.embedded import free_port

STARTUP_DEADLINE_SECONDS = 60
# Fast, deterministic models: these tests are about processes and the database, not meaning.
HASH_MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}


def serve(
    home: Path, port: int, *, admin_token: bool = True, **env_overrides: str
) -> subprocess.Popen[bytes]:
    """Start `memory serve` on `port` with only the given MEMORY_* settings, and the test
    admin key (`AUTH_HEADERS`) unless `admin_token=False` (then the server bootstraps its
    own key into the home: `admin_headers(home)`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env["MEMORY_HOME"] = str(home)
    if admin_token:
        env["MEMORY_ADMIN_TOKEN"] = TEST_ADMIN_TOKEN
    env.update(env_overrides)
    return subprocess.Popen(
        [sys.executable, "-m", "memory.entrypoints.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def memory_cli(home: Path, *args: str, **env_overrides: str) -> subprocess.CompletedProcess[str]:
    """Run `memory <args>` to completion with only the given MEMORY_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env["MEMORY_HOME"] = str(home)
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-m", "memory.entrypoints.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> httpx.Response:
    """The first answer of `url` (any status) once the server listens."""
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "memory serve exited during start-up"
        try:
            return httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("memory serve did not answer /healthz in time")


def admin_headers(home: Path) -> dict[str, str]:
    """The bootstrap admin key `memory serve` wrote to its home (README quickstart)."""
    secret = (home / "admin-token").read_text().strip()
    return {"Authorization": f"Bearer {secret}"}


def terminate(proc: subprocess.Popen[bytes]) -> str:
    """SIGTERM, wait for a clean exit, return the process's log."""
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    log = output.decode()
    assert proc.returncode == 0, log
    return log


@contextmanager
def served_on(database_url: str, home: Path, **env_overrides: str) -> Iterator[str]:
    """A `memory serve` on `database_url` with the hash models and the test admin key
    (`TEST_ADMIN_TOKEN`); yields its base URL and
    stops it (cleanly) afterwards. Its output goes to a file, not a pipe: a server answering
    thousands of requests writes an access line each, which would fill a pipe nobody reads
    until the end and block the server."""
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_") and k != "PYTHONPATH"}
    env |= {
        "MEMORY_HOME": str(home),
        "MEMORY_DATABASE_URL": database_url,
        "MEMORY_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
        **HASH_MODELS,
    }
    env.update(env_overrides)
    log_path = home / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory.entrypoints.cli", "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        assert wait_healthy(f"{base}/healthz", proc).status_code == 200, log_path.read_text()
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.returncode == 0, log_path.read_text(errors="replace")


def stack_traces(log: str) -> str:
    """The lines of a server's log that carry a stack trace, each after the line before it:
    what an assertion shows, since the whole log is cut short in CI's output."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback" in line]
    found = ["\n".join(lines[max(0, i - 1) : i + 1]) for i in starts]
    return "\n---\n".join(found)
