"""The command line as an operator meets it: `--version`, `--json` on every command and a
readable default without Python reprs, configuration errors named by their environment
variable, and MEMORY_HOME resolved once, never silently creating a second, empty cluster."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from memory.entrypoints.cli import build_parser, main
from memory.infrastructure.settings import Settings

# A command run in-process configures the root logger.
pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.fixture
def on_database(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_HISTORY_MODEL", "hash:1024")
    monkeypatch.setenv("MEMORY_POLICY_MODEL", "hash:384")
    return database_url


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from leaves(child, (*path, name))


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert re.fullmatch(r"memory \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


def test_every_command_takes_json() -> None:
    commands = dict(leaves(build_parser()))
    assert len(commands) >= 12
    for path, parser in commands.items():
        options = {s for a in parser._actions for s in a.option_strings}
        assert "--json" in options, " ".join(path)


def test_a_configuration_error_names_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_LOG_LEVEL", "LOUD")
    monkeypatch.setenv("MEMORY_POOL_MAX_SIZE", "0")
    monkeypatch.setenv("MEMORY_DATABASE_STALL_TIMEOUT", "0")
    assert main(["policies", "status"]) == 2
    err = capsys.readouterr().err
    assert "MEMORY_DATABASE_STALL_TIMEOUT: Input should be greater than 0 (got '0')" in err
    assert "MEMORY_LOG_LEVEL: must be one of DEBUG, INFO, WARNING, ERROR (got 'LOUD')" in err
    assert "MEMORY_POOL_MAX_SIZE:" in err
    assert "log_level" not in err and "pool_max_size" not in err
    assert main(["policies", "status", "--json"]) == 2
    assert "MEMORY_LOG_LEVEL" in json.loads(capsys.readouterr().out)["error"]


def test_readable_and_json_output_hold_no_python_reprs(
    on_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    when = datetime.now(UTC) - timedelta(hours=3)
    assert main(["history", "status", "acme"]) == 0  # migrates
    capsys.readouterr()
    with psycopg.connect(on_database) as conn:
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at)"
            " SELECT 'acme', 'e' || i, 'slack', 'C1', 'ali', 'message', 'received',"
            " 'please reset my password number ' || i, %s + i * interval '1 minute'"
            " FROM generate_series(1, 3) AS i",
            (when,),
        )
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " VALUES ('acme', 'slack', 'C1')"
        )
        conn.execute(
            "INSERT INTO admin_feature_flags (flag, enabled)"
            " VALUES ('digital_worker_semantic_search', true)"
        )
    assert main(["sweep", "--once"]) == 0
    swept = capsys.readouterr().out
    assert re.search(r"windows embedded: +1", swept)
    assert main(["history", "status", "acme"]) == 0
    readable = capsys.readouterr().out
    assert main(["history", "status", "acme", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (partition,) = document["partitions"]
    assert partition["position"]["event_id"] == "e3"
    datetime.fromisoformat(partition["position"]["occurred_at"])
    for text in (readable, json.dumps(document)):
        for repr_mark in ("SweepPosition(", "datetime.", "Partition(", "{'", "None"):
            assert repr_mark not in text
    assert "slack" in readable and "e3" in readable


def test_an_operator_command_on_a_home_without_a_cluster_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMORY_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_HOME", "elsewhere")  # relative: resolved against the cwd
    commands = (["history", "status", "acme"], ["policies", "status"], ["purge"], ["keys", "list"])
    for command in commands:
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"no database under MEMORY_HOME={tmp_path / 'elsewhere'}" in err
    assert not (tmp_path / "elsewhere" / "postgres").exists()


def test_the_default_home_is_absolute_and_the_same_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    first = Settings().home
    monkeypatch.chdir(tmp_path)
    assert Settings().home == first == tmp_path / "data" / "memory"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert Settings().home == tmp_path / "user" / ".local" / "share" / "memory"


# The input rule for arguments (docs/adr/0086), in every text argument of every command:
# walking the parser finds each one, so a command added later is covered without a new case.
LONE_SURROGATE = "\udcff"  # what Python makes of the argv byte 0xff
SURROGATE_REASON = "must not contain lone surrogates (not valid Unicode text)"


def _text_arguments() -> Iterator[tuple[list[str], str]]:
    """(argv with a lone surrogate in one text argument, that argument's name), for every
    argument that takes text (no type conversion, no fixed choices)."""
    for path, parser in leaves(build_parser()):
        actions = [a for a in parser._actions if a.nargs != 0 and a.dest != "help"]
        for target in actions:
            if target.type is not None or target.choices is not None:
                continue
            argv = list(path)
            # An optional positional before the target must be given for the target to be
            # reached (`memory flags FLAG STATE`).
            positionals = [a for a in actions if not a.option_strings]
            before = positionals[: positionals.index(target)] if target in positionals else []
            for action in actions:
                if action is not target and not action.required and action not in before:
                    continue
                value = LONE_SURROGATE if action is target else _valid(action)
                argv += [action.option_strings[-1], value] if action.option_strings else [value]
            yield argv, _name(target)


def _valid(action: argparse.Action) -> str:
    return str(next(iter(action.choices))) if action.choices is not None else "x"


def _name(action: argparse.Action) -> str:
    if action.option_strings:
        return max(action.option_strings, key=len)
    return action.metavar if isinstance(action.metavar, str) else action.dest


TEXT_ARGUMENTS = list(_text_arguments())


def test_the_walk_finds_the_commands_that_take_text() -> None:
    commands = {" ".join(argv[:2]) for argv, _ in TEXT_ARGUMENTS}
    assert {"policies get", "history status", "keys create", "sweep --org", "serve --host"} <= (
        commands
    )


@pytest.mark.parametrize(("argv", "argument"), TEXT_ARGUMENTS, ids=repr)
def test_a_lone_surrogate_in_any_text_argument_is_refused_naming_it(
    argv: list[str], argument: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"memory: {argument}: {SURROGATE_REASON}\n")
