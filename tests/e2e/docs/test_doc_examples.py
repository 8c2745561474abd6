"""Every example in README.md, docs/policy.md and docs/history.md runs as written against a
real `memory serve` (hash models): shell blocks with their `curl`s (each must succeed),
Python blocks (the client), and the policy reference's request bodies in the order the
reference gives them, ending with its filter example finding the policy it stored and
updated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.conftest import TEST_ADMIN_TOKEN

from memory.entrypoints.admin_key import ADMIN_TOKEN_FILE
from memory.infrastructure.settings import default_home

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", ROOT / "docs" / "policy.md", ROOT / "docs" / "history.md"]
BLOCK = re.compile(r"```(sh|python|json)\n(.*?)```", re.DOTALL)
PRINTED = re.compile(r"^\s*print\(.*\)\s+# (\S+)$", re.MULTILINE)
# The address the docs use for a local `make run`.
DOC_HOSTS = ("http://127.0.0.1:8080", "localhost:8080")


def blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for i, (lang, text) in enumerate(BLOCK.findall(doc.read_text(encoding="utf-8"))):
            if lang == kind:
                found.append((f"{doc.name}#{i}", text))
    return found


SHELL = [(name, text) for name, text in blocks("sh") if "curl" in text]
PYTHON = blocks("python")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the examples run, and the user's home: as after a first `make run`, the
    default home's admin-token file (where `memory serve` writes it) holds an admin key."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    token = default_home() / ADMIN_TOKEN_FILE
    token.parent.mkdir(parents=True)
    token.write_text(TEST_ADMIN_TOKEN + "\n")
    return tmp_path


def example_env(workdir: Path) -> dict[str, str]:
    """A user's shell: no MEMORY_* setting, `workdir` as the home directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.pop("XDG_DATA_HOME", None)
    return env | {"HOME": str(workdir)}


def local(text: str, base: str) -> str:
    for host in DOC_HOSTS:
        text = text.replace(host, base if host.startswith("http") else base.split("//")[1])
    return text


def test_the_docs_have_examples_of_each_kind() -> None:
    assert len(SHELL) >= 1 and len(PYTHON) >= 2


@pytest.mark.parametrize(("name", "script"), SHELL, ids=[n for n, _ in SHELL])
def test_a_shell_example_runs(name: str, script: str, served: str, workdir: Path) -> None:
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("make ")]
    command = local("\n".join(lines), served).replace("curl ", "curl -sS --fail-with-body ")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=workdir,
        env=example_env(workdir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{name}: {done.stdout}\n{done.stderr}"


@pytest.mark.parametrize(("name", "script"), PYTHON, ids=[n for n, _ in PYTHON])
def test_a_python_example_runs(name: str, script: str, served: str, workdir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", local(script, served)],
        cwd=workdir,
        env=example_env(workdir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{name}: {done.stderr}"
    # `print(x)  # value`: the example says what that line prints.
    for said in PRINTED.findall(script):
        assert said in done.stdout.splitlines(), f"{name}: {said!r} not in {done.stdout!r}"


def test_the_policy_reference_runs_in_order_and_its_filter_finds_the_updated_policy(
    served: str,
) -> None:
    """The first JSON block under each request heading is that request's body."""
    text = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    requests = re.findall(
        r"### `(POST|PUT) (/v1/policies[^`\s]*)`[^\n]*\n+```json\n(.*?)```", text, re.DOTALL
    )
    assert [(m, p) for m, p, _ in requests] == [
        ("POST", "/v1/policies"),
        ("PUT", "/v1/policies/{policy_id}"),
        ("POST", "/v1/policies/search"),
    ]
    stored = json.loads(requests[0][2])
    auth = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
    with httpx.Client(base_url=served, timeout=30, headers=auth) as http:
        for method, path, body in requests:
            url = path.replace("{policy_id}", stored["policy_id"])
            answer = http.request(method, url, json=json.loads(body))
            assert answer.is_success, (method, path, answer.text)
        # The search example, at any similarity (the hash model's scores mean nothing): its
        # filter must still hold for the policy as the update example left it.
        search = json.loads(requests[2][2]) | {"similarity_threshold": 0.0}
        found = http.post("/v1/policies/search", json=search).json()["results"]
        assert [r["policy_id"] for r in found] == [stored["policy_id"]]


def test_the_history_reference_ingest_and_erasure_examples_run(served: str) -> None:
    text = (ROOT / "docs" / "history.md").read_text(encoding="utf-8")
    ingest = re.search(
        r"### `POST /v1/orgs/\{org_id\}/chat-events`[^\n]*\n+```json\n(.*?)```", text, re.DOTALL
    )
    erasure = re.search(r"### Erasure\n(.*?)\n### ", text + "\n### ", re.DOTALL)
    assert ingest is not None and erasure is not None
    by_id, by_sender = (
        json.loads(b) for b in re.findall(r"```json\n(.*?)```", erasure[1], re.DOTALL)[:2]
    )
    auth = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
    with httpx.Client(base_url=served, timeout=30, headers=auth) as http:
        stored = http.post("/v1/orgs/docs/chat-events", json=json.loads(ingest[1]))
        assert stored.status_code == 201, stored.text
        erased = http.request("DELETE", "/v1/orgs/docs/chat-events", json=by_id)
        assert erased.json()["events_deleted"] == 1  # the example erases what it ingested
        again = http.post("/v1/orgs/docs/chat-events", json=json.loads(ingest[1]))
        assert again.json()["inserted"] == 1
        erased = http.request("DELETE", "/v1/orgs/docs/chat-events", json=by_sender)
        assert erased.json()["events_deleted"] == 1
        org = http.delete("/v1/orgs/docs")
        assert org.status_code == 200, org.text
