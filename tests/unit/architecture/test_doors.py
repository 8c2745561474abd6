"""No door imports another door (docs/architecture.md): the CLI, the HTTP routes and the
in-process API each call the application services and share the presenters, never each
other's modules."""

from __future__ import annotations

import pytest
from tests.unit.architecture.imports import imported, modules

HTTP = "memory.entrypoints.http"
PRESENTERS = "memory.entrypoints.presenters"

# `memory serve` starts the HTTP door: launching it is the one thing the CLI needs of it.
CLI_LAUNCHES_HTTP = {("memory.entrypoints.cli", "memory.entrypoints.http.app")}


def _cli_modules() -> list[str]:
    return [
        m
        for m in modules()
        if m.startswith("memory.entrypoints.")
        and m.count(".") == 2
        and (m.endswith("_cli") or m.rsplit(".", 1)[1].startswith("cli"))
    ]


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_cli_modules_are_found() -> None:
    found = set(_cli_modules())
    assert {
        "memory.entrypoints.cli",
        "memory.entrypoints.policy_cli",
        "memory.entrypoints.keys_cli",
        "memory.entrypoints.history_cli",
    } <= found


@pytest.mark.parametrize("module", _cli_modules())
def test_no_cli_module_imports_an_http_module(module: str) -> None:
    http = {
        target
        for target in imported(module)
        if _under(target, HTTP) and (module, target) not in CLI_LAUNCHES_HTTP
    }
    assert not http, f"{module} imports {sorted(http)}: share a presenter instead"


def test_no_http_module_imports_a_cli_module() -> None:
    cli = set(_cli_modules())
    found = {
        (module, target)
        for module in modules()
        if _under(module, HTTP)
        for target in imported(module)
        if target in cli
    }
    assert not found


def test_the_in_process_api_imports_neither_http_nor_cli() -> None:
    cli = set(_cli_modules())
    found = {t for t in imported("memory.api") if _under(t, HTTP) or t in cli}
    assert not found


def test_presenters_import_no_door() -> None:
    cli = set(_cli_modules())
    found = {
        (module, target)
        for module in modules()
        if _under(module, PRESENTERS)
        for target in imported(module)
        if _under(target, HTTP) or target in cli
    }
    assert not found


def test_the_walk_sees_imports_inside_functions() -> None:
    # `memory serve` imports the app inside its command function: were such imports missed,
    # every test above would pass whatever the CLI imported.
    assert "memory.entrypoints.http.app" in imported("memory.entrypoints.cli")


# The adapters of the service's ports and of its models: `entrypoints/bootstrap.py` (and
# the context runtimes it builds) choose them; a command asks the composition root. The
# embedded cluster's own tooling (`memory db`, `memory backup`) is the operator's machine,
# not an adapter of a port, and stays with its commands.
ADAPTERS = (
    "memory.infrastructure.postgres.database",
    "memory.infrastructure.embedding.factory",
    "memory.infrastructure.embedding.vector_cache",
    "memory.infrastructure.access",
    "memory.infrastructure.audit",
    "memory.infrastructure.durability",
    "memory.infrastructure.history",
    "memory.infrastructure.policy",
)


@pytest.mark.parametrize("module", _cli_modules())
def test_no_cli_module_picks_an_adapter(module: str) -> None:
    picked = {t for t in imported(module) if any(_under(t, a) for a in ADAPTERS)}
    assert not picked, f"{module} imports {sorted(picked)}: build it in bootstrap.py"
