"""docs/cli.md, the command-line reference, generated from the parser `memory` runs
(`python -m memory.entrypoints.cli_reference > docs/cli.md`); a test fails when the page
and the parser differ (docs/adr/0110)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from memory.entrypoints.cli import build_parser

# The help text's width, whatever the terminal: the page must not depend on who made it.
WIDTH = 96
HEADER = """# Command-line reference

Generated from the parser of `memory` by `python -m memory.entrypoints.cli_reference >
docs/cli.md` (a test fails when this page and the parser differ). The README's "Commands"
section says what the commands are for; this page lists every argument.
"""


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command, depth first in the order the parser lists them, with its words."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in dict(action.choices).items():
                yield from commands(child, (*path, name))


def help_text(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH, max_help_position=32)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    formatter.add_text(parser.description)
    for group in parser._action_groups:
        formatter.start_section(group.title)
        formatter.add_text(group.description)
        formatter.add_arguments(group._group_actions)
        formatter.end_section()
    formatter.add_text(parser.epilog)
    return formatter.format_help().rstrip()


def render() -> str:
    sections = [HEADER]
    for path, parser in commands(build_parser()):
        title = " ".join(("memory", *path))
        sections.append(f"## `{title}`\n\n```text\n{help_text(parser)}\n```\n")
    return "\n".join(sections)


if __name__ == "__main__":
    print(render(), end="")
