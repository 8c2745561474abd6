"""Every `memory` module's imports of other `memory` modules, read from the source (every
`import` statement, also those inside functions), for the layering tests."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import memory

PACKAGE_ROOT = Path(memory.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_ROOT.rglob("*.py"))}


def imported(module: str) -> frozenset[str]:
    """The `memory` modules `module` imports (`from a import b`: `a.b` when it is a module)."""
    known = modules()
    tree = ast.parse(known[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "memory")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "memory":
                continue
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return frozenset(found)
