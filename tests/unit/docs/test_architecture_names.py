"""Every name docs/architecture.md writes in backticks exists in the code: a path (a module,
a package or a glob of them, relative to src/memory/ or to the repository), a layer chain
(`entrypoints -> domain`), a dotted name (`Database.migrate`, `memory.api`), a single name
(a module, class, function, method, constant or table the code defines), a route
(`GET /v1/audit`, `/openapi.json`), a command (`memory keys`) or one of its options."""

from __future__ import annotations

import argparse
import ast
import re
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

from memory.entrypoints.cli import build_parser
from memory.entrypoints.http.openapi import OPERATIONS

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "memory"
PAGE = ROOT / "docs" / "architecture.md"
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# Inside a fenced block every word would be a name; the diagram's names are in the text too.
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ROUTE = re.compile(r"(?:(GET|POST|PUT|DELETE|PATCH) )?(/\S*)")
TABLE = re.compile(r"CREATE (?:TABLE|VIEW)(?: IF NOT EXISTS)? (\w+)", re.IGNORECASE)


@cache
def definitions() -> dict[str, set[str]]:
    """Every name the package defines -> the names defined inside it (a class's methods and
    attributes; a module's top-level names). Each module is parsed and walked once."""
    found: dict[str, set[str]] = {}
    constants: dict[str, str] = {}
    application_names: list[ast.expr] = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = path.stem if path.stem != "__init__" else path.parent.name
        top = _top_level(tree)
        found.setdefault(module, set()).update(top)
        for name in top:
            found.setdefault(name, set())
        constants.update(_string_constants(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(node.name, set())
            elif isinstance(node, ast.ClassDef):
                found.setdefault(node.name, set()).update(_top_level(node))
                if any("Application" in ast.unparse(b) for b in node.bases):
                    application_names.extend(_assigned(node, "name"))
    for table in _event_tables(application_names, constants):
        found.setdefault(table, set())
    for path in PACKAGE.rglob("*.sql"):
        for table in TABLE.findall(path.read_text(encoding="utf-8")):
            found.setdefault(table, set())
    for package in (p for p in PACKAGE.rglob("*") if p.is_dir()):
        found.setdefault(package.name, set())
    return found


def _string_constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _assigned(node: ast.ClassDef, name: str) -> list[ast.expr]:
    return [
        c.value
        for c in node.body
        if isinstance(c, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in c.targets)
    ]


def _event_tables(names: list[ast.expr], constants: dict[str, str]) -> set[str]:
    """The eventsourcing library's table of each `Application` subclass: its `name` (a
    string, or a module constant holding one) + `_events`, lower case as Postgres keeps it."""
    tables = set()
    for value in names:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            tables.add(f"{value.value}_events".lower())
        elif isinstance(value, ast.Name) and value.id in constants:
            tables.add(f"{constants[value.id]}_events".lower())
    return tables


def _top_level(node: ast.Module | ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for child in node.body:
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(child.name)
        elif isinstance(child, ast.Assign):
            names.update(t.id for t in child.targets if isinstance(t, ast.Name))
        elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
            names.add(child.target.id)
    return names


def _route(method: str | None, path: str) -> bool:
    if any(op.path == path and method in (None, op.method) for op in OPERATIONS):
        return True
    app = (PACKAGE / "entrypoints" / "http" / "app.py").read_text(encoding="utf-8")
    return method in (None, "GET") and f'"{path}"' in app


def _command(words: list[str]) -> bool:
    parser = build_parser()
    for word in words:
        if word.startswith("-"):
            return word in parser._option_string_actions
        choices = {
            name: child
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, child in action.choices.items()
        }
        if word not in choices:
            return False
        parser = choices[word]
    return True


def exists(span: str) -> bool:
    route = ROUTE.fullmatch(span)
    if route:
        return _route(route.group(1), route.group(2))
    if span.startswith("memory "):
        return _command(span.split()[1:])
    if span.startswith("--"):
        return _command(["policies", "get", span])
    if "->" in span:
        return all(exists(part.strip()) for part in span.split("->"))
    if "/" in span or span.endswith((".py", ".sql")):
        return any(PACKAGE.glob(span)) or any(ROOT.glob(span))
    parts = span.split(".")
    if not all(NAME.fullmatch(p) for p in parts):
        return False
    if parts[0] == "memory":
        return (PACKAGE.joinpath(*parts[1:]).with_suffix(".py")).exists() or PACKAGE.joinpath(
            *parts[1:]
        ).is_dir()
    known = definitions()
    if parts[0] not in known:
        return False
    return all(inner in known.get(outer, set()) for outer, inner in pairwise(parts))


def spans() -> list[str]:
    text = FENCE.sub("", PAGE.read_text(encoding="utf-8"))
    return sorted(set(CODE_SPAN.findall(text)))


@pytest.mark.parametrize("span", spans())
def test_every_name_in_backticks_exists(span: str) -> None:
    assert exists(span), f"docs/architecture.md names `{span}`, which the code does not have"


@pytest.mark.parametrize(
    "span",
    [
        "application/access/nowhere.py",
        "NoSuchService",
        "Database.no_such_method",
        "memory.no_such_module",
        "entrypoints -> nowhere",
        "(org, model)",
        "GET /v1/nowhere",
        "DELETE /v1/audit",
        "memory nowhere",
        "memory keys --no-such-option",
    ],
)
def test_a_name_the_code_lacks_is_caught(span: str) -> None:
    assert not exists(span)


def test_the_page_names_what_it_must() -> None:
    named = set(spans())
    for must in ("AccessService", "Authentication", "KeyAdministration", "AuditTrail"):
        assert must in named, must
    assert any(s.startswith("contract/") for s in named)
    assert any(s.startswith("client/") for s in named)
    assert any(s.startswith("entrypoints/presenters/") for s in named)
