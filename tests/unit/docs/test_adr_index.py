"""docs/adr/README.md lists every ADR file with its number, title, status and successor, and
nothing else; no page or source file cites a seed document by its "ADR-NNNN" number (the
project's own ADRs use those numbers too)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ADRS = ROOT / "docs" / "adr"
INDEX = ADRS / "README.md"
HEADING = re.compile(r"# (\d{4})\. (.+)")
STATUS = re.compile(r"^Status: (\w+)(.*)$", re.MULTILINE)
SUCCESSOR = re.compile(r"superseded by (?:ADR )?(\d{4})", re.IGNORECASE)
ROW = re.compile(r"^\| \[(\d{4})\]\(([^)]+)\) \|.*\|$", re.MULTILINE)
# A seed's self-given number ("ADR-0050"), as opposed to the project's "ADR 0050".
SEED_NUMBER = re.compile(r"\bADR-\d{4}\b")
NO_SUCCESSOR = "—"


def adr_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9][0-9][0-9]-*.md"))


def expected_row(adr: Path) -> str:
    """The index row an ADR file calls for."""
    text = adr.read_text(encoding="utf-8")
    heading = HEADING.match(text.splitlines()[0])
    assert heading is not None, f"{adr.name}: the first line is not '# NNNN. Title'"
    status = STATUS.search(text)
    assert status is not None, f"{adr.name}: no 'Status:' line"
    successor = SUCCESSOR.search(status[0])
    superseded_by = NO_SUCCESSOR
    if successor is not None:
        (target,) = adr.parent.glob(f"{successor[1]}-*.md")
        superseded_by = f"[{successor[1]}]({target.name})"
    word = "superseded" if successor is not None else status[1].lower()
    return f"| [{heading[1]}]({adr.name}) | {heading[2]} | {word} | {superseded_by} |"


def index_problems(folder: Path) -> list[str]:
    rows = {m[2]: m[0] for m in ROW.finditer((folder / "README.md").read_text("utf-8"))}
    problems = []
    for adr in adr_files(folder):
        row = expected_row(adr)
        if rows.pop(adr.name, None) != row:
            problems.append(f"missing or stale: {row}")
    problems += [f"no such ADR file: {row}" for row in rows.values()]
    return problems


def test_the_index_lists_every_adr_with_its_title_status_and_successor() -> None:
    assert index_problems(ADRS) == []


def test_a_missing_stale_or_extra_row_is_found(tmp_path: Path) -> None:
    (tmp_path / "0001-one.md").write_text("# 0001. One\n\nStatus: accepted (2026-01-01)\n")
    (tmp_path / "0002-two.md").write_text(
        "# 0002. Two\n\nStatus: superseded by 0003 (2026-01-02)\n"
    )
    (tmp_path / "0003-three.md").write_text("# 0003. Three\n\nStatus: accepted (2026-01-02)\n")
    (tmp_path / "README.md").write_text(
        "| Number | Title | Status | Superseded by |\n|---|---|---|---|\n"
        "| [0002](0002-two.md) | Two | accepted | — |\n"
        "| [0003](0003-three.md) | Three | accepted | — |\n"
        "| [0004](0004-four.md) | Four | accepted | — |\n"
    )
    assert index_problems(tmp_path) == [
        "missing or stale: | [0001](0001-one.md) | One | accepted | — |",
        "missing or stale: | [0002](0002-two.md) | Two | superseded | [0003](0003-three.md) |",
        "no such ADR file: | [0004](0004-four.md) | Four | accepted | — |",
    ]


def test_no_page_or_source_cites_a_seed_document_by_number() -> None:
    files = [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "src").rglob("*.sql"),
    ]
    cited = [
        f"{path.relative_to(ROOT)}: {match[0]}"
        for path in files
        for match in SEED_NUMBER.finditer(path.read_text(encoding="utf-8"))
    ]
    assert cited == []
