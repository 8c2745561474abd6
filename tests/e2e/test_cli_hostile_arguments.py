"""Hostile bytes in `memory` arguments (docs/adr/0086): a lone surrogate (what Python makes of
argv bytes that are not UTF-8), a NUL, or an identifier the API would refuse gives one line
on stderr naming the argument and why, exit status 2, and changes nothing in the database.

Real processes, so the bytes pass through the kernel's argv and Python's decoding as a
shell's would. argv cannot carry NUL (the kernel's strings end at one): that case goes
through `main` in-process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.conftest import ClonedDatabases, RunCli
from tests.e2e.processes import HASH_MODELS, memory_cli

from memory.infrastructure.postgres.embedded import with_database

# 48 cases, each a real `memory` process (about 0.3 s of CPU each since a refused argument
# loads no command's stack, docs/adr/0160): 78 s in the idle run at 64ce900, its CPU since
# cut from 44.8 s to 19.6 s (docs/testing.md).
pytestmark = pytest.mark.long(seconds=35)

SURROGATE = "must not contain lone surrogates (not valid Unicode text)"
NUL = "must not contain NUL characters"
CONTROL = "must not contain control characters"
ORG_RULE = (
    "must be 1 to 128 characters: letters, digits, '.', '_', ':' or '-', "
    "starting with a letter or digit"
)

# Every command that takes free text or an identifier, with bytes that are not UTF-8 in each
# such argument, and the argument's name as the error gives it.
NOT_UTF8 = [
    ([b"policies", b"get", b"p\xff"], "POLICY_ID"),
    ([b"policies", b"delete", b"p\xff"], "POLICY_ID"),
    ([b"policies", b"list", b"--source", b"s\xff"], "--source"),
    ([b"policies", b"list", b"--tag", b"\xfft"], "--tag"),
    ([b"policies", b"list", b"--cursor", b"c\xff"], "--cursor"),
    ([b"policies", b"reembed", b"--model", b"hash:\xff"], "--model"),
    ([b"policies", b"drop-model", b"hash:\xff"], "MODEL"),
    ([b"sweep", b"--once", b"--org", b"o\xff"], "--org"),
    ([b"purge", b"--org=o\xff"], "--org"),
    ([b"history", b"drop-model", b"local:\xfe\xff"], "MODEL"),
    ([b"history", b"retention", b"acme\xff", b"--days", b"3"], "ORG"),
    ([b"history", b"status", b"o\xff"], "ORG"),
    ([b"history", b"orgs", b"--prefix", b"o\xff"], "--prefix"),
    ([b"history", b"orgs", b"--cursor", b"c\xff"], "--cursor"),
    ([b"keys", b"create", b"--name", b"n\xff", b"--scope", b"admin"], "--name"),
    ([b"keys", b"create", b"--name", b"n", b"--org", b"o\xff", b"--scope", b"admin"], "--org"),
    ([b"keys", b"revoke", b"k\xff"], "KEY_ID"),
    ([b"check", b"--model", b"hash:\xff"], "--model"),
    ([b"serve", b"--host", b"h\xff"], "--host"),
]
# Valid text the API refuses in the same field: the domain's rule for the identifier.
REFUSED_IDS = [
    (["history", "status", "acme logistics"], f"ORG: {ORG_RULE}"),
    (["history", "retention", "../acme", "--days", "3"], f"ORG: {ORG_RULE}"),
    (["sweep", "--once", "--org", "acme/2"], f"--org: {ORG_RULE}"),
    (["purge", "--org", ""], f"--org: {ORG_RULE}"),
    (["keys", "create", "--name", "ok", "--org", "a b", "--scope", "admin"], f"--org: {ORG_RULE}"),
    (["keys", "create", "--name", "tab\there", "--scope", "admin"], f"--name: {CONTROL}"),
    (["policies", "get", "../etc/passwd"], "POLICY_ID: must start with a letter or digit"),
    (["policies", "delete", "x" * 129], "POLICY_ID: must be at most 128 characters, got 129"),
]


@pytest.fixture(scope="module")
def seeded(
    pg_admin_url: str,
    cloned_databases: ClonedDatabases,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A database `memory demo` filled (policies, chat, flags, embeddings), an API key and
    a retention: the home and the settings every command here runs with."""
    name = cloned_databases.take()
    try:
        settings = {"MEMORY_DATABASE_URL": with_database(pg_admin_url, name), **HASH_MODELS}
        home = tmp_path_factory.mktemp("hostile-cli")
        for argv in (
            ["demo"],
            ["keys", "create", "--name", "seed", "--scope", "admin"],
            ["history", "retention", "acme-logistics", "--days", "30"],
        ):
            done = memory_cli(home, *argv, **settings)
            assert done.returncode == 0, done.stderr
        yield home, settings
    finally:
        cloned_databases.drop(name)


def database_contents(url: str) -> dict[str, str]:
    """A digest of every table's rows: equal before and after means nothing changed."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE'"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        digests = {}
        for schema, table in tables:
            query = sql.SQL(
                "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {} t"
            ).format(sql.Identifier(schema, table))
            row = conn.execute(query).fetchone()
            assert row is not None
            digests[f"{schema}.{table}"] = row[0]
    return digests


def refused(
    seeded: tuple[Path, dict[str, str]], *argv: str | bytes, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run `memory *argv`: it must exit 2 and leave every table as it was."""
    home, settings = seeded
    before = database_contents(settings["MEMORY_DATABASE_URL"])
    done = memory_cli(home, *argv, **settings, **env)
    assert done.returncode == 2, done.stderr
    assert database_contents(settings["MEMORY_DATABASE_URL"]) == before
    return done


@pytest.mark.parametrize(("argv", "argument"), NOT_UTF8, ids=repr)
def test_bytes_that_are_not_utf8_are_refused_naming_the_argument(
    seeded: tuple[Path, dict[str, str]], argv: list[bytes], argument: str
) -> None:
    done = refused(seeded, *argv)
    assert done.stderr.splitlines() == [f"memory: {argument}: {SURROGATE}"]
    assert done.stdout == ""


def test_a_refusal_with_json_is_a_document_too(seeded: tuple[Path, dict[str, str]]) -> None:
    done = refused(seeded, b"history", b"status", b"acme\xff", b"--json")
    assert json.loads(done.stdout) == {"error": f"ORG: {SURROGATE}"}
    assert done.stderr.splitlines() == [f"memory: ORG: {SURROGATE}"]


@pytest.mark.parametrize(("argv", "message"), REFUSED_IDS, ids=repr)
def test_an_identifier_the_api_refuses_is_refused_before_anything_opens(
    seeded: tuple[Path, dict[str, str]], argv: list[str], message: str
) -> None:
    [line] = refused(seeded, *argv).stderr.splitlines()  # no log line: nothing was opened
    assert line.startswith(f"memory: {message}")


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["history", "orgs", "--limit", "0"], "--limit: must be between 1 and 200, got 0"),
        (["history", "retention", "acme-logistics", "--days", "0"], "--days: must be between"),
        (
            ["keys", "create", "--name", "x", "--scope", "admin", "--expires-in-days", "5000"],
            "--expires-in-days: must be between 1 and",
        ),
        (["policies", "list", "--cursor", "forged"], "--cursor: "),
    ],
    ids=repr,
)
def test_a_rule_the_service_checks_names_the_argument_too(
    seeded: tuple[Path, dict[str, str]], argv: list[str], line: str
) -> None:
    done = refused(seeded, *argv, MEMORY_LOG_LEVEL="WARNING")
    assert done.stderr.splitlines()[-1].startswith(f"memory: {line}")


def test_a_number_that_is_not_utf8_is_refused_by_the_parser(
    seeded: tuple[Path, dict[str, str]],
) -> None:
    done = refused(seeded, b"history", b"orgs", b"--limit", b"\xff")
    assert "argument --limit: invalid int value" in done.stderr


def test_a_nul_is_refused_naming_the_argument(cli_env: str, run_cli: RunCli) -> None:
    before = database_contents(cli_env)
    assert run_cli("history", "retention", "acme\x00", "--days", "3") == (
        2,
        "",
        f"memory: ORG: {NUL}\n",
    )
    assert run_cli("keys", "create", "--name", "a\x00b", "--scope", "admin")[2] == (
        f"memory: --name: {NUL}\n"
    )
    assert database_contents(cli_env) == before
