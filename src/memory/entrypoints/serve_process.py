"""`memory serve` as a child process: started with only the settings its caller gives, waited
for until it answers, stopped with SIGTERM and held to a clean exit.

The end-to-end tests, the benchmarks (bench/) and scripts/console_screenshots.py run real
servers this way; docs/adr/0085-child-server-in-the-package.md says why this lives in the
package. Nothing in the service imports it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from memory.infrastructure.postgres.embedded import free_port
from memory.infrastructure.settings import ENV_PREFIX

SERVE_COMMAND = (sys.executable, "-m", "memory.entrypoints.cli", "serve")
HEALTH_PATH = "/healthz"
# Between two looks at a starting server: start-up is seen within a fraction of a second
# without keeping a shared 2-core machine busy.
POLL_SECONDS = 0.2
# One look's limit. /healthz caps each of its checks at 1 s, so a listening server answers
# well within this even on a loaded machine; a slower answer counts as not ready yet.
PROBE_TIMEOUT_SECONDS = 2.0
# SIGTERM drains requests for up to cli.DRAIN_SECONDS, then the workers and an embedded
# cluster stop; on a loaded machine that can take several times the drain.
STOP_TIMEOUT_SECONDS = 60.0
# How much of the server's log an error shows: its last lines, where the reason is.
LOG_TAIL_CHARS = 3000


class ServeFailed(RuntimeError):
    """The server exited during start-up, did not answer by its deadline, or did not exit
    cleanly on SIGTERM. The message ends with the tail of its log."""


def serve_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """The environment of a child `memory` command: this process's, without any MEMORY_*
    variable (a setting in the caller's shell would silently reconfigure a server whose
    settings the caller spells out) and without PYTHONPATH (the child runs the `memory`
    installed for this interpreter, as an operator's `memory serve` does), plus `settings`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(ENV_PREFIX) and key != "PYTHONPATH"
    }
    env.update(settings)
    return env


class ServeProcess(subprocess.Popen[bytes]):
    """A child `memory serve` on a loopback port. It is a `Popen` (signals, `wait`, `poll`,
    `pid` as usual) that also knows its URL and where its output goes.

    Output goes to `log_path` (appended), or to a pipe when there is none: `stop` then
    returns what the server wrote. A pipe suits a server that writes little (a test that
    reads its log); one answering thousands of requests writes an access line each, fills a
    pipe nobody reads until the end, and blocks: give it a file."""

    def __init__(
        self, settings: Mapping[str, str], *, port: int | None = None, log_path: Path | None = None
    ) -> None:
        self.port = free_port() if port is None else port
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        argv = [*SERVE_COMMAND, "--port", str(self.port)]
        env = serve_environment(settings)
        if log_path is None:
            super().__init__(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            return
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # The child keeps its own descriptor of the file; ours closes once it is started.
        with log_path.open("ab") as log:
            super().__init__(argv, env=env, stdout=log, stderr=subprocess.STDOUT)

    def first_answer(self, deadline_seconds: float, url: str | None = None) -> httpx.Response:
        """The first answer of `url` (default: /healthz) once the server listens, whatever
        its status: a 503 while the database is down is an answer."""
        return self._poll(url or self.base_url + HEALTH_PATH, deadline_seconds, healthy=False)

    def wait_healthy(self, deadline_seconds: float) -> httpx.Response:
        """Until /healthz answers 200 (the services are up, migrations ran)."""
        return self._poll(self.base_url + HEALTH_PATH, deadline_seconds, healthy=True)

    def stop(self, timeout_seconds: float = STOP_TIMEOUT_SECONDS) -> str:
        """SIGTERM, then wait for exit status 0; returns the piped output ("" with a log
        file). `ServeFailed` on another status, or after `timeout_seconds` (then killed)."""
        signalled = self.poll() is None
        if signalled:
            self.send_signal(signal.SIGTERM)
        try:
            output, _ = self.communicate(timeout=timeout_seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            output, _ = self.communicate()
            raise ServeFailed(
                f"memory serve did not exit within {timeout_seconds:g} s of SIGTERM"
                + self._tail(output)
            ) from None
        if self.returncode != 0:
            when = "on SIGTERM" if signalled else "before it was stopped"
            raise ServeFailed(
                f"memory serve exited with status {self.returncode} {when}" + self._tail(output)
            )
        return (output or b"").decode(errors="replace")

    def discard(self) -> None:
        """Kill it if it still runs: cleaning up after a failure, nothing to check."""
        if self.poll() is None:
            self.kill()
        self.communicate()

    def _poll(self, url: str, deadline_seconds: float, *, healthy: bool) -> httpx.Response:
        deadline = time.monotonic() + deadline_seconds
        # One client for every look: `httpx.get` builds a client, and its TLS context, per
        # call (~45 ms of CPU), which made a start-up's polling cost seconds (ADR 0157).
        with httpx.Client(timeout=PROBE_TIMEOUT_SECONDS) as client:
            while True:
                if self.poll() is not None:
                    output, _ = self.communicate()
                    raise ServeFailed(
                        f"memory serve exited with status {self.returncode} during start-up"
                        + self._tail(output)
                    )
                try:
                    response = client.get(url)
                    if not healthy or response.status_code == 200:
                        return response
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    what = "/healthz 200" if healthy else f"an answer from {url}"
                    raise ServeFailed(
                        f"memory serve gave no {what} within {deadline_seconds:g} s" + self._tail()
                    )
                time.sleep(POLL_SECONDS)

    def _tail(self, output: bytes | None = None) -> str:
        if output:
            text = output.decode(errors="replace")
        elif self.log_path is not None and self.log_path.exists():
            text = self.log_path.read_text(errors="replace")
        else:
            return ""
        return f"\n--- its log ---\n{text[-LOG_TAIL_CHARS:]}"


@contextmanager
def served(
    settings: Mapping[str, str],
    *,
    deadline_seconds: float,
    log_path: Path | None = None,
    port: int | None = None,
) -> Iterator[ServeProcess]:
    """A `memory serve` healthy within `deadline_seconds` (the bundled e5 model needs minutes
    to load on a slow machine, the hash models seconds), stopped cleanly afterwards."""
    server = ServeProcess(settings, port=port, log_path=log_path)
    try:
        server.wait_healthy(deadline_seconds)
    except BaseException:
        server.discard()
        raise
    try:
        yield server
    finally:
        server.stop()
