"""`memory keys create|list|revoke` against a real database, and the key it prints working
over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from tests.conftest import RunCli

from memory.application.audit.ports import AuditQuery
from memory.entrypoints.cli import main
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database


def test_create_list_revoke(run_cli: RunCli) -> None:
    code, out, err = run_cli(
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

    code, out, _ = run_cli("keys", "list", "--json")
    assert code == 0
    keys = json.loads(out)["keys"]
    assert [k["name"] for k in keys] == ["ingest bot"] and secret not in out

    code, out, _ = run_cli("keys", "revoke", described["key_id"], "--json")
    assert code == 0 and json.loads(out)["revoked_at"] is not None
    code, _, err = run_cli("keys", "revoke", "key_0000000000000000")
    assert code == 1 and "no API key" in err
    code, out, _ = run_cli("keys", "list")  # readable text without --json
    assert "revoked at" in out and "ingest bot" in out


def test_the_command_lines_changes_are_in_the_audit_log_under_the_operator(
    cli_env: str, run_cli: RunCli
) -> None:
    assert run_cli("keys", "create", "--name", "bot", "--scope", "policies:read")[0] == 0
    assert run_cli("history", "retention", "acme", "--days", "7")[0] == 0
    assert run_cli("purge", "--org", "acme")[0] == 0
    assert run_cli("sweep", "--once", "--org", "acme")[0] == 0
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


def test_a_key_created_with_an_expiry_lists_it_and_bounds_are_refused(
    run_cli: RunCli, capsys: pytest.CaptureFixture[str]
) -> None:
    before = datetime.now(UTC)
    code, out, err = run_cli(
        "keys", "create", "--name", "weekly", "--scope", "history:read",
        "--expires-in-days", "7", "--json",
    )  # fmt: skip
    assert code == 0, err
    expires = datetime.fromisoformat(json.loads(out)["expires_at"])
    assert before + timedelta(days=7) <= expires <= datetime.now(UTC) + timedelta(days=7)
    at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    code, out, err = run_cli(
        "keys", "create", "--name", "hourly", "--scope", "history:read",
        "--expires-at", at.isoformat(), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert datetime.fromisoformat(json.loads(out)["expires_at"]) == at
    code, out, _ = run_cli("keys", "list")
    assert "expires at" in out

    code, _, err = run_cli(
        "keys", "create", "--name", "old", "--scope", "admin",
        "--expires-at", "2020-01-01T00:00:00+00:00",
    )  # fmt: skip
    assert code == 2 and "--expires-at: must be in the future" in err
    code, _, err = run_cli(
        "keys", "create", "--name", "long", "--scope", "admin",
        "--expires-in-days", "5000",
    )  # fmt: skip
    assert code == 2 and "--expires-in-days: must be between 1 and" in err
    code, out, _ = run_cli("keys", "list", "--json")
    assert [k["name"] for k in json.loads(out)["keys"]] == ["weekly", "hourly"]
    for argv in (
        ["--expires-in-days", "7", "--expires-at", at.isoformat()],
        ["--expires-at", "next tuesday"],
    ):
        with pytest.raises(SystemExit):
            main(["keys", "create", "--name", "x", "--scope", "admin", *argv])
        capsys.readouterr()
