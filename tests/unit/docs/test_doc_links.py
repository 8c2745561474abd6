"""Every file README.md and docs/*.md point a reader to exists: relative Markdown links and
images (relative to the page), repository paths written in the text (docs/..., bench/...,
relative to the root; `docs/adr/0050` names the ADR numbered 0050) and `ADR 0045`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
ADRS = ROOT / "docs" / "adr"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# A path into one of the repository's top-level folders, not part of a longer path or URL.
REPO_PATH = re.compile(
    r"(?<![\w/.$~-])((?:bench|deploy|docs|scripts|src|tests)/[\w./-]*[\w/])(?![\w{*])"
)
ADR_NUMBER = re.compile(r"\bADRs? (\d{4})\b")
EXTERNAL = re.compile(r"^(?:[a-z][a-z+.-]*:|#)")


def adr_exists(number: str) -> bool:
    return any(ADRS.glob(f"{number}-*.md"))


def missing(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    gone = [
        f"link {target}"
        for target in LINK.findall(text)
        if not EXTERNAL.match(target) and not (page.parent / target.split("#")[0]).exists()
    ]
    for path in REPO_PATH.findall(text):
        adr = re.fullmatch(r"docs/adr/(\d{4})", path)
        if not ((ROOT / path).exists() or (adr is not None and adr_exists(adr[1]))):
            gone.append(f"path {path}")
    gone += [f"ADR {n}" for n in ADR_NUMBER.findall(text) if not adr_exists(n)]
    return gone


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_file_a_page_points_to_exists(page: Path) -> None:
    assert missing(page) == []


def test_a_broken_link_path_or_adr_number_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "![gone](console/none.png) see bench/none.py, docs/adr/0000 and ADR 0000; "
        "[site](https://example.com) and [here](#anchor) are not files.",
        encoding="utf-8",
    )
    assert missing(page) == [
        "link console/none.png",
        "path bench/none.py",
        "path docs/adr/0000",
        "ADR 0000",
    ]
