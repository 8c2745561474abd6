"""The retrieval check's data set (`memory check`): twelve documents in four languages and
one question per document per language, written for this project."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class CheckDocument:
    id: str
    lang: str
    kind: str  # "chat" or "policy"
    text: str


@dataclass(frozen=True, slots=True)
class CheckQuery:
    document: str
    lang: str
    text: str


@dataclass(frozen=True, slots=True)
class CheckSet:
    documents: list[CheckDocument]
    queries: list[CheckQuery]

    def language_of(self, document_id: str) -> str:
        return next(d.lang for d in self.documents if d.id == document_id)


def load_check_set() -> CheckSet:
    text = resources.files(__package__).joinpath("retrieval_check.json").read_text("utf-8")
    raw = json.loads(text)
    return CheckSet(
        [CheckDocument(**d) for d in raw["documents"]],
        [CheckQuery(**q) for q in raw["queries"]],
    )
