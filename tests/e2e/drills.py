"""Helpers of the process drills (backups, standby, `memory db`): a `memory` command run in
this process, and the URL of a home's running cluster without a command.

A `memory` command as a child process costs a Python start-up and the package's imports,
over a second of CPU each; the drills ran dozens of them to set up, look at and tidy homes.
Those run here instead, through the same `main` the installed command runs (docs/adr/0157);
what a drill proves of the command as a process (its exit status, a server it leaves
running or stopped) is still proven by the child processes each drill keeps.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import httpx

from memory.infrastructure.postgres.embedded import EmbeddedPostgres
from memory.infrastructure.settings import ENV_PREFIX

# The drills' HTTP client, for `http.get(...)` where `httpx.get(...)` was: that builds a
# client, and its TLS context, per call (~45 ms of CPU; the replica drill's polling spent
# 26 s of CPU so). Without keep-alive every request opens its own connection as before: the
# servers behind it are killed and restarted underneath. Safe to share between threads.
http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


@contextmanager
def _settings(settings: dict[str, str]) -> Iterator[None]:
    """This process's environment with only `settings` of the MEMORY_* variables (as a
    child command gets them, `serve_environment`); put back afterwards."""
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith(ENV_PREFIX)]:
        del os.environ[key]
    os.environ.update(settings)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def memory_here(home: Path, *args: str, **env_overrides: str) -> subprocess.CompletedProcess[str]:
    """`memory <args>` on `home`, run in this process (`memory_cli`'s result: exit status,
    standard output, standard error). The root logger is put back afterwards."""
    from memory.entrypoints.cli import main

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with (
            _settings({"MEMORY_HOME": str(home), **env_overrides}),
            redirect_stdout(out),
            redirect_stderr(err),
        ):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse refuses an argument this way
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return subprocess.CompletedProcess(["memory", *args], code, out.getvalue(), err.getvalue())


def home_url(home: Path) -> str:
    """The service's URL of `home`'s running cluster (what `memory db url` prints)."""
    cluster = EmbeddedPostgres(home)
    assert cluster.status().running, f"the cluster of {home} is not running"
    return cluster.service_url


_template: Path | None = None


def _cluster_template() -> Path:
    """A home whose cluster was created (initdb, the database, `vector`, the service role)
    and stopped, once per test process; removed when the process exits."""
    global _template
    if _template is None:
        root = Path(tempfile.mkdtemp(prefix="memory-test-template-"))
        root.chmod(0o755)
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        cluster = EmbeddedPostgres(root / "home", durable=False)
        cluster.start()
        cluster.stop()
        cluster.paths.log_file.unlink()
        _template = root / "home"
    return _template


def seeded_home(home: Path) -> Path:
    """`home` with a copy of a created, stopped cluster in it: what a first `memory db start`
    or `memory serve` leaves, bar archiving (set up at the next start), without running
    initdb again (over a second of CPU). For the drills whose subject is not a new home's
    first start; that one is test_serve_process's. Returns `home`."""
    assert not home.exists(), f"{home} exists"
    home.mkdir(parents=True)
    # cp -a keeps the server user's ownership and the data directory's 0700.
    source = _cluster_template() / "postgres"
    subprocess.run(["cp", "-a", str(source), str(home / "postgres")], check=True)
    return home
