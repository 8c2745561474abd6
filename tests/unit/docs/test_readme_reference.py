"""The README's reference tables are held to the code they describe, so they cannot drift
again: the configuration table to the `Settings` model (every setting, its default, nothing
that no longer exists), the endpoint tables and the error codes to the OpenAPI route
table, and the command table to the CLI's parser."""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic.fields import FieldInfo

from memory.entrypoints.cli import build_parser
from memory.entrypoints.http.openapi import OPERATIONS
from memory.infrastructure.settings import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# What the table says for a setting without a value, and for `home`, whose default is
# computed from the user's home directory.
UNSET = "unset"
HOME_DEFAULT = "`~/.local/share/memory`"
METHOD = r"(?:GET|PUT|POST|DELETE)"
ENDPOINT = re.compile(rf"`({METHOD}(?:\\?\|{METHOD})*) (/[^`\s]*)`")
WORD = r"[a-z][a-z-]*"
COMMAND = re.compile(rf"(?:^\| |/ )`memory ({WORD}(?: {WORD})?)", re.MULTILINE)


def section(title: str) -> str:
    start = README.index(f"\n### {title}\n")
    end = README.find("\n## ", start + 1)
    following = README.find("\n### ", start + 1)
    return README[start : min(i for i in (end, following) if i != -1)]


def section_from(start: str, end: str) -> str:
    begin = README.index(f"\n{start}\n")
    return README[begin : README.index(f"\n{end}\n", begin)]


def configuration_rows() -> dict[str, str]:
    """Each variable the configuration table names, with the default it states (a row
    `A` / `B` | x / y states two)."""
    rows = {}
    for line in section("Configuration").splitlines():
        if not line.startswith("| `"):
            continue
        names, default = (cell.strip() for cell in line.split("|")[1:3])
        pairs = zip(names.split(" / "), default.split(" / "), strict=True)
        rows.update({name.strip("`"): value for name, value in pairs})
    return rows


def stated(field: FieldInfo) -> str:
    """A field's default as the table writes it."""
    value: Any = field.default
    if value is None:
        return UNSET
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"`{value}`"
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


def test_the_configuration_table_lists_every_setting_and_no_other() -> None:
    assert sorted(configuration_rows()) == sorted(
        ENV_PREFIX + name.upper() for name in Settings.model_fields
    )


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_the_configuration_table_states_each_settings_default(name: str) -> None:
    field = Settings.model_fields[name]
    expected = HOME_DEFAULT if field.default_factory is not None else stated(field)
    assert configuration_rows()[ENV_PREFIX + name.upper()] == expected


def documented_endpoints() -> set[tuple[str, str]]:
    """Every `METHOD /path` the README names, a query string dropped, `GET\\|PUT` and an
    optional `[/segment]` expanded into each route they stand for."""
    found = set()
    for methods, target in ENDPOINT.findall(README):
        path = target.split("?", 1)[0]
        optional = re.findall(r"\[([^\]]+)\]", path)
        for kept in itertools.product((False, True), repeat=len(optional)):
            expanded = path
            for part, keep in zip(optional, kept, strict=True):
                expanded = expanded.replace(f"[{part}]", part if keep else "", 1)
            found.update((m, expanded) for m in methods.replace("\\", "").split("|"))
    return found


def test_the_readme_names_every_route_of_the_contract() -> None:
    routes = {(op.method, op.path) for op in OPERATIONS}
    assert routes - documented_endpoints() == set()


def test_the_readme_names_only_routes_that_exist() -> None:
    # Served outside the contract: the metrics, the console and the contract itself.
    served_outside = {
        ("GET", "/metrics"),
        ("GET", "/console"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
    }
    routes = {(op.method, op.path) for op in OPERATIONS} | served_outside
    assert documented_endpoints() - routes == set()


def test_the_readme_names_every_error_code_of_the_api_with_its_status() -> None:
    api = section_from("## API", "### Policy memory")
    declared = {
        (status, code)
        for op in OPERATIONS
        if op.path.startswith("/v1/")
        for status, codes in op.errors.items()
        for code in codes
    }
    missing = {(s, c) for s, c in declared if not re.search(rf"{s} `{c}`", api)}
    assert missing == set()


def cli_commands() -> set[str]:
    """`memory X` and `memory X Y` for every command and subcommand of the parser."""

    def children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    found = set()
    for name, sub in children(build_parser()).items():
        nested = children(sub)
        found.update({f"{name} {child}" for child in nested} if nested else {name})
    return found


def test_the_command_table_lists_every_command_and_no_other() -> None:
    # A row may name two (`memory db status` / `memory db url`).
    assert set(COMMAND.findall(section("Commands"))) == cli_commands()
