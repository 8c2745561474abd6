"""The precision check's data set (`memory check`, bench/relevance.py): 202 workplace
conversations and policies in English, Malay, Chinese and rojak (two per topic in two
languages, near-miss distractors and small talk in every language) and 230 queries, 56 of
which have no right answer in the set. Written for this project."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class PrecisionDocument:
    id: str
    lang: str
    kind: str  # "chat" or "policy"
    text: str
    distracts: str | None = None  # the topic a near-miss distractor shares words with


@dataclass(frozen=True, slots=True)
class PrecisionQuery:
    lang: str
    text: str
    answers: tuple[str, ...]  # empty: no document answers it


@dataclass(frozen=True, slots=True)
class PrecisionSet:
    documents: list[PrecisionDocument]
    queries: list[PrecisionQuery]

    def language_of(self, document_id: str) -> str:
        return next(d.lang for d in self.documents if d.id == document_id)


def load_precision_set() -> PrecisionSet:
    text = resources.files(__package__).joinpath("precision_check.json").read_text("utf-8")
    raw = json.loads(text)
    return PrecisionSet(
        [PrecisionDocument(**d) for d in raw["documents"]],
        [PrecisionQuery(q["lang"], q["text"], tuple(q["answers"])) for q in raw["queries"]],
    )
