"""The code names the guides write in backticks exist: in README.md and docs/*.md, every
class-like name (`HistoryService`, `Authentication.own_key`) and private name
(`_search_request`) is one the package defines (as tests/unit/docs/test_architecture_names.py
checks every name of docs/architecture.md), an alert of deploy/prometheus/alerts.yml, or
Python's own. A class renamed or split (`AccessService`, issue 20) leaves no guide naming
what is gone. ADRs are records of their time and may name what was replaced."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.unit.docs.test_architecture_names import CODE_SPAN, FENCE, exists

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
# `HybridMerge`, `Authentication.own_key`, `PolicyQueries.search_request`: a class, maybe
# with a member; `_search_request`: a private name.
CODE_NAME = re.compile(
    r"_?[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
    r"|[A-Z][a-z0-9]+\.[a-z_][a-z0-9_]*"
    r"|_[a-z][a-z0-9_]*"
)
# Python's and the data formats' own names the guides mention.
NOT_OURS = frozenset({"StrEnum", "NaN"})


def names(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {
        span.removesuffix("()")
        for span in CODE_SPAN.findall(text)
        if CODE_NAME.fullmatch(span.removesuffix("()"))
    }


def known(name: str) -> bool:
    alert = re.compile(rf"^\s*- alert: {re.escape(name)}$", re.MULTILINE)
    return name in NOT_OURS or exists(name) or alert.search(ALERTS.read_text()) is not None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_name_a_guide_writes_exists(page: Path) -> None:
    gone = sorted(n for n in names(page) if not known(n))
    assert gone == [], f"{page.relative_to(ROOT)} names {gone}, which the code does not have"


@pytest.mark.parametrize(
    "name", ["NoSuchService", "AccessService.no_such_method", "_search_request", "MemoryNoAlert"]
)
def test_a_name_the_code_lacks_is_caught(name: str) -> None:
    assert CODE_NAME.fullmatch(name) and not known(name)
