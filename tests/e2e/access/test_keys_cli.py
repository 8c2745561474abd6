"""`memory keys create|list|revoke` against a real database, and the key it prints working
over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.entrypoints.cli import main


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_HISTORY_MODEL", "hash:1024")
    monkeypatch.setenv("MEMORY_POLICY_MODEL", "hash:384")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield database_url
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_create_list_revoke(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "keys", "create", "--name", "ingest bot", "--org", "acme",
        "--scope", "history:write", "--scope", "history:read",
    )  # fmt: skip
    assert code == 0, err
    secret = out.strip()
    assert secret.startswith("mem_") and "\n" not in secret
    described = json.loads(err[err.index("{") :])
    assert described["org_id"] == "acme"
    assert described["scopes"] == ["history:read", "history:write"]

    code, out, _ = run(capsys, "keys", "list")
    assert code == 0
    keys = json.loads(out)["keys"]
    assert [k["name"] for k in keys] == ["ingest bot"] and secret not in out

    code, out, _ = run(capsys, "keys", "revoke", described["key_id"])
    assert code == 0 and json.loads(out)["revoked_at"] is not None
    code, _, err = run(capsys, "keys", "revoke", "key_0000000000000000")
    assert code == 1 and "no API key" in err
    code, out, _ = run(capsys, "keys", "list")
    assert json.loads(out)["keys"][0]["revoked_at"] is not None


def test_an_unknown_scope_is_refused(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["keys", "create", "--name", "x", "--scope", "history:delete"])
    capsys.readouterr()
