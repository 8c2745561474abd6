"""`memory.client` is what another program installs to talk to the service: importing it
must not pull in the server's web framework, its ASGI server or the database driver
(docs/adr/0075-contract-package.md). Checked in a fresh interpreter, since this test
process has long imported all of them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SERVER_ONLY = ("starlette", "uvicorn", "psycopg", "memory.entrypoints", "memory.infrastructure")


def modules_after_import(module: str) -> set[str]:
    probe = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(done.stdout))


def server_only(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in SERVER_ONLY or m.startswith(SERVER_ONLY)}


@pytest.mark.slow
def test_importing_the_client_imports_no_server_framework_or_database_driver() -> None:
    loaded = modules_after_import("memory.client")
    assert {"memory.client", "memory.contract.responses", "httpx", "pydantic"} <= loaded
    assert server_only(loaded) == set()


@pytest.mark.slow
def test_the_probe_sees_the_server_side_when_it_is_imported() -> None:
    # The same probe on the HTTP app finds what the client must not load: the check above
    # would catch a client module that imported it.
    loaded = server_only(modules_after_import("memory.entrypoints.http.app"))
    assert {"starlette", "memory.entrypoints.http.app"} <= loaded
