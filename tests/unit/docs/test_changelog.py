"""CHANGELOG.md follows Keep a Changelog and has an entry for the version `memory --version`
prints: bumping the version without saying what changed fails here."""

from __future__ import annotations

import re
import tomllib
from datetime import date
from pathlib import Path

from memory.entrypoints.cli import memory_version

ROOT = Path(__file__).resolve().parents[3]
CHANGELOG = ROOT / "CHANGELOG.md"
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+(?:[-.+][\w.]+)?)\] - (\d{4}-\d{2}-\d{2})$")
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _headings() -> list[str]:
    return [line for line in CHANGELOG.read_text("utf-8").splitlines() if line.startswith("#")]


def released() -> list[tuple[str, date]]:
    found = []
    for line in _headings():
        match = RELEASE.match(line)
        if match:
            found.append((match[1], date.fromisoformat(match[2])))
    return found


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def test_the_version_memory_reports_is_the_projects_and_has_an_entry() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    # An editable install reports the version it was installed with: reinstall after a bump.
    assert memory_version() == project, "memory --version disagrees with pyproject.toml"
    versions = [version for version, _ in released()]
    assert project in versions, f"CHANGELOG.md has no '## [{project}] - YYYY-MM-DD' entry"


def test_the_changelog_has_keep_a_changelog_shape() -> None:
    headings = _headings()
    assert headings[0] == "# Changelog"
    assert headings[1] == "## [Unreleased]"
    for line in headings[2:]:
        if line.startswith("## "):
            assert RELEASE.match(line), f"not a release heading: {line!r}"
        else:
            assert line.startswith("### ") and line[4:] in KINDS, f"unknown section: {line!r}"
    entries = released()
    assert entries, "no release yet"
    # Newest first, both by version and by date.
    assert [v for v, _ in entries] == sorted(
        (v for v, _ in entries), key=_version_key, reverse=True
    )
    assert [d for _, d in entries] == sorted((d for _, d in entries), reverse=True)
