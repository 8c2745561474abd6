"""`make reference` builds the API reference of `memory.client` and `memory.api` with pdoc: a
page per module, and on it every public name (each in the module's `__all__`) and every
public method of the clients and the services (docs/adr/0130)."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

# A subprocess that imports the whole service and renders two large pages.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
MODULES = ("memory.client", "memory.api")
# One import of memory.api and pdoc's rendering; on a loaded two-core machine, well within.
BUILD_SECONDS = 300


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    venv = Path(sys.executable).parent.parent
    # The Makefile's own recipe, with this interpreter's environment and setup-dev treated
    # as done (`-o`): what `make reference` runs after its setup.
    command = ["make", "--no-print-directory", "-o", "setup-dev", "reference"]
    subprocess.run(
        [*command, f"VENV={venv}", f"REFERENCE_DIR={out}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=BUILD_SECONDS,
    )
    return out


def anchors(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("module", MODULES)
def test_the_reference_has_a_page_per_module_with_its_public_names(
    reference: Path, module: str
) -> None:
    page = reference / (module.replace(".", "/") + ".html")
    assert page.is_file(), f"no page for {module}"
    found = anchors(page)
    imported = importlib.import_module(module)
    public = list(imported.__all__)
    assert public and [name for name in public if name not in found] == []
    # The doors a user calls: every public method of the clients and the services.
    for name in public:
        exported = getattr(imported, name)
        if name.endswith(("MemoryClient", "Service")) and inspect.isclass(exported):
            methods = [m for m, _ in inspect.getmembers(exported, inspect.isfunction)]
            missing = [m for m in methods if not m.startswith("_") and f"{name}.{m}" not in found]
            assert missing == [], f"{module}.{name}"


def test_the_index_links_both_modules(reference: Path) -> None:
    index = (reference / "index.html").read_text(encoding="utf-8")
    for module in MODULES:
        assert module.replace(".", "/") + ".html" in index
