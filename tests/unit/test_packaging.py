"""Packaging: runtime dependencies locked apart from the dev tools, the image built from
the runtime lock in cache-friendly layers as a non-root user with a health check, pinned
images, and compose waiting for the model server."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_TOOLS = {"pytest", "pytest-timeout", "ruff", "mypy", "types-tqdm"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=;!~]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def locked(path: Path) -> dict[str, str]:
    """name -> version of every `name==version` in a lock, each followed by its hashes."""
    text = path.read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+) \\$", text, re.MULTILINE))
    entries = re.split(r"\n(?=[A-Za-z0-9])", text)
    for entry in entries:
        if "==" in entry.split("\n")[0]:
            assert "--hash=sha256:" in entry, entry.split("\n")[0]
    return {k.lower().replace("_", "-"): v for k, v in pins.items()}


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_runtime_lock_pins_every_dependency_and_no_dev_tool() -> None:
    runtime = locked(ROOT / "requirements.lock")
    wanted = {_name(r) for r in project()["dependencies"]}
    assert wanted - {"uvloop"} <= set(runtime)
    assert not DEV_TOOLS & set(runtime)


def test_the_dev_lock_adds_the_tools_at_the_same_versions() -> None:
    runtime = locked(ROOT / "requirements.lock")
    dev = locked(ROOT / "requirements-dev.lock")
    assert set(dev) >= DEV_TOOLS
    shared = set(runtime) & set(dev)
    assert {k: runtime[k] for k in shared} == {k: dev[k] for k in shared}
    assert set(runtime) <= set(dev)


def test_setup_installs_the_dev_tools_only_when_asked() -> None:
    setup = (ROOT / "scripts/setup.sh").read_text()
    assert 'EXTRAS="${MEMORY_EXTRAS:-}"' in setup
    assert "--require-hashes" in setup
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: setup$", makefile, re.MULTILINE)
    assert re.search(r"^test: setup-dev$", makefile, re.MULTILINE)


def test_the_image_installs_the_lock_before_the_source_and_runs_unprivileged() -> None:
    lines = [
        line.strip()
        for line in (ROOT / "deploy/Dockerfile").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    joined = "\n".join(lines)
    base = re.search(r"ARG PYTHON_IMAGE=(\S+)", joined)
    assert base and re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base[1])
    lock_install = joined.index("--require-hashes --no-deps -r /tmp/requirements.lock")
    assert lock_install < joined.index("COPY src ")  # a code change keeps the deps layer
    assert "requirements-dev.lock" not in joined
    assert re.search(r"^USER memory$", joined, re.MULTILINE)
    assert "HEALTHCHECK" in joined and "/healthz" in joined


def test_the_build_context_holds_only_what_the_image_copies() -> None:
    rules = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert rules[0] == "*"
    assert set(rules[1:5]) == {"!requirements.lock", "!pyproject.toml", "!README.md", "!src/"}


def test_compose_pins_images_and_waits_for_the_model_server() -> None:
    compose = (ROOT / "deploy/compose.yaml").read_text()
    images = re.findall(r"image: (\S+)", compose)
    assert images and all(":" in i and not i.endswith(":latest") for i in images)
    memory = compose[compose.index("  memory:") :]
    assert "condition: service_healthy" in memory
    assert "ollama-pull:\n        condition: service_completed_successfully" in memory
    url = re.search(r"MEMORY_DATABASE_URL: (\S+)", memory)
    assert url and "${" not in url[1]  # no password inside the URL
    assert "MEMORY_DATABASE_PASSWORD: ${MEMORY_DB_PASSWORD}" in memory
