"""`memory serve` on a port that is already taken exits at once, non-zero, saying so, and
touches nothing: no embedded cluster started, no migration, no "serving on" (ADR 0132)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from memory.entrypoints.serve_process import SERVE_COMMAND, ServeProcess, serve_environment

# Import time and the refusal; a server that started a cluster and loaded a model first would
# take far longer than this on any machine.
REFUSAL_SECONDS = 30


def test_a_taken_port_stops_serve_before_it_starts_anything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            [*SERVE_COMMAND, "--port", str(port)],
            env=serve_environment({"MEMORY_HOME": str(home), "MEMORY_POLICY_MODEL": "hash:384"}),
            capture_output=True,
            text=True,
            timeout=REFUSAL_SECONDS,
            check=False,
        )
        elapsed = time.monotonic() - started
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Address already in use" in done.stderr
    output = done.stdout + done.stderr
    for sign_of_start in ("serving on", "migrat", "cluster", "purge"):
        assert sign_of_start not in output.lower()
    assert not home.exists()  # no embedded cluster, no admin key, no backups: nothing
    assert elapsed < REFUSAL_SECONDS


def _listening(port: int, deadline_seconds: float) -> None:
    deadline = time.monotonic() + deadline_seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.1)


def test_a_second_server_started_while_the_first_starts_is_refused(tmp_path: Path) -> None:
    """The first server holds its port from its first moment (before its embedded cluster,
    migrations and model): a second one on that port is refused, and the first serves."""
    first = ServeProcess(
        {"MEMORY_HOME": str(tmp_path / "first"), "MEMORY_POLICY_MODEL": "hash:384"}
    )
    try:
        _listening(first.port, REFUSAL_SECONDS)
        second = subprocess.run(
            [*SERVE_COMMAND, "--port", str(first.port)],
            env=serve_environment(
                {"MEMORY_HOME": str(tmp_path / "second"), "MEMORY_POLICY_MODEL": "hash:384"}
            ),
            capture_output=True,
            text=True,
            timeout=REFUSAL_SECONDS,
            check=False,
        )
        assert second.returncode == 2, second.stderr
        assert not (tmp_path / "second").exists()
        assert first.first_answer(120).status_code in (200, 503)
    finally:
        first.stop()
