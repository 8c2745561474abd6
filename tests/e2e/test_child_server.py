"""The child `memory serve` every e2e test, benchmark and the screenshot script start
(`memory.entrypoints.serve_process`): what it inherits, how a failed start is reported, that
its deadline bounds the wait, and that a stop checks the exit status."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.e2e.drills import http
from tests.e2e.processes import HASH_MODELS

from memory.entrypoints.serve_process import (
    ServeFailed,
    ServeProcess,
    serve_environment,
    served,
)
from memory.infrastructure.postgres.embedded import free_port

# Nothing listens on port 1: the server starts and answers 503 until a database does.
UNREACHABLE_DATABASE = "postgresql://memory@127.0.0.1:1/memory?connect_timeout=1"
BAD_CONFIGURATION = {"MEMORY_LOG_LEVEL": "LOUD"}


def test_the_child_inherits_no_memory_setting_and_no_pythonpath(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_DATABASE_URL", "postgresql://elsewhere/db")
    monkeypatch.setenv("MEMORY_ADMIN_TOKEN", "a-token-from-the-shell")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = serve_environment({"MEMORY_HOME": "/tmp/h"})
    assert {k for k in env if k.startswith("MEMORY_")} == {"MEMORY_HOME"}
    assert "PYTHONPATH" not in env
    assert env["LANG"] == "C.UTF-8"


def test_a_server_that_exits_during_start_up_is_reported_with_its_log(tmp_path: Path) -> None:
    settings = {"MEMORY_HOME": str(tmp_path / "home"), **BAD_CONFIGURATION}
    with (
        pytest.raises(ServeFailed, match="exited with status 2 during start-up") as failed,
        served(settings, deadline_seconds=60, log_path=tmp_path / "serve.log"),
    ):
        pytest.fail("a server with an invalid setting never becomes healthy")
    assert "MEMORY_LOG_LEVEL: must be one of" in str(failed.value)


def test_the_deadline_bounds_the_wait_and_the_server_is_not_left_running(
    tmp_path: Path,
) -> None:
    port = free_port()
    settings = {
        "MEMORY_HOME": str(tmp_path / "home"),
        "MEMORY_DATABASE_URL": UNREACHABLE_DATABASE,
        **HASH_MODELS,
    }
    server = ServeProcess(settings, port=port)
    try:
        # It answers (503: no database yet), but is not healthy: a wait for any answer ends
        # while a wait for health runs out its deadline.
        assert server.first_answer(60).status_code == 503
        with pytest.raises(ServeFailed, match=r"no /healthz 200 within 2 s"):
            server.wait_healthy(2)
    finally:
        server.discard()

    with (
        pytest.raises(ServeFailed, match=r"no /healthz 200 within 2 s"),
        served(settings, deadline_seconds=2, port=port),
    ):
        pytest.fail("a server without its database never becomes healthy")
    with pytest.raises(httpx.TransportError):
        http.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_a_stop_checks_the_exit_status(tmp_path: Path) -> None:
    server = ServeProcess({"MEMORY_HOME": str(tmp_path / "home"), **BAD_CONFIGURATION})
    server.wait(timeout=60)
    with pytest.raises(ServeFailed, match="exited with status 2 before it was stopped") as failed:
        server.stop()
    assert "MEMORY_LOG_LEVEL" in str(failed.value)  # the piped output, shown
