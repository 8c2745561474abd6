"""docs/cli.md is the parser's own description of every command: regenerate it with
`python -m memory.entrypoints.cli_reference > docs/cli.md` when a command changes."""

from __future__ import annotations

from pathlib import Path

from memory.entrypoints.cli import build_parser
from memory.entrypoints.cli_reference import commands, render

PAGE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def test_the_page_is_what_the_parser_says() -> None:
    assert PAGE.read_text("utf-8") == render(), "docs/cli.md is stale: regenerate it"


def test_every_command_and_option_is_on_the_page() -> None:
    page = PAGE.read_text("utf-8")
    for path, parser in commands(build_parser()):
        assert f"## `{' '.join(('memory', *path))}`" in page
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page, f"{flag} of memory {' '.join(path)}"
