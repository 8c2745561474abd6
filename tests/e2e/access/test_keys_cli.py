"""`memory keys create|list|revoke` against a real database, and the key it prints working
over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.application.audit.ports import AuditQuery
from memory.entrypoints.cli import main
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database


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
        "--scope", "history:write", "--scope", "history:read", "--json",
    )  # fmt: skip
    assert code == 0, err
    described = json.loads(out)
    secret = described["secret"]
    assert secret.startswith("mem_") and len(secret) == 47
    assert described["org_id"] == "acme"
    assert described["scopes"] == ["history:read", "history:write"]
    assert secret not in err, "the secret goes to stdout only"

    code, out, _ = run(capsys, "keys", "list", "--json")
    assert code == 0
    keys = json.loads(out)["keys"]
    assert [k["name"] for k in keys] == ["ingest bot"] and secret not in out

    code, out, _ = run(capsys, "keys", "revoke", described["key_id"], "--json")
    assert code == 0 and json.loads(out)["revoked_at"] is not None
    code, _, err = run(capsys, "keys", "revoke", "key_0000000000000000")
    assert code == 1 and "no API key" in err
    code, out, _ = run(capsys, "keys", "list")  # readable text without --json
    assert "revoked at" in out and "ingest bot" in out


def test_the_command_lines_changes_are_in_the_audit_log_under_the_operator(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "keys", "create", "--name", "bot", "--scope", "policies:read")[0] == 0
    assert run(capsys, "history", "retention", "acme", "--days", "7")[0] == 0
    assert run(capsys, "purge", "--org", "acme")[0] == 0
    assert run(capsys, "sweep", "--once", "--org", "acme")[0] == 0
    database = Database(cli_env, min_size=1, max_size=2)
    database.open()
    try:
        entries = PostgresAuditTrail(database).entries(AuditQuery()).entries
    finally:
        database.close()
    assert [e.action for e in entries] == [
        "sweep.triggered",
        "purge.run",
        "retention.set",
        "api_key.created",
    ]
    assert {e.actor.key_id for e in entries} == {"cli"}
    assert all(e.actor.name.startswith("cli:") for e in entries)


def test_an_unknown_scope_is_refused(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["keys", "create", "--name", "x", "--scope", "history:delete"])
    capsys.readouterr()
