"""Precision of a retrieval check: for each query the semantic hits a rule keeps in the top
k, judged against the query's right answers (none for a no-answer query).

Reported per language pair: recall@k per (query language, answer language); off-topic hits
per query, split by the language of the off-topic hit; and per query language the share of
no-answer queries answered with no semantic hit at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.domain.retrieval_recall import LanguagePair


@dataclass(frozen=True, slots=True)
class Judged:
    """One query: its language, its right answers (id -> language), and the hits a rule
    kept in its top k (id -> language), best first."""

    lang: str
    answers: dict[str, str]
    kept: list[tuple[str, str]]

    @property
    def found(self) -> int:
        return sum(1 for doc, _ in self.kept if doc in self.answers)

    def recall(self, k: int) -> float:
        return self.found / min(len(self.answers), k)

    @property
    def off_topic(self) -> list[str]:
        """The languages of the kept hits that are not right answers."""
        return [lang for doc, lang in self.kept if doc not in self.answers]


@dataclass(frozen=True, slots=True)
class PairPrecision:
    pair: LanguagePair
    answers: int  # (query, right answer) pairs of this language pair
    recall: float | None  # None when no query of this pair has answers
    off_topic_per_query: float


@dataclass(frozen=True, slots=True)
class LanguageEmptyShare:
    lang: str
    no_answer_queries: int
    empty_share: float


@dataclass(frozen=True)
class PrecisionTable:
    k: int
    queries: int
    no_answer_queries: int
    recall: float
    off_topic_per_query: float
    empty_share: float
    pairs: list[PairPrecision] = field(default_factory=list)
    languages: list[LanguageEmptyShare] = field(default_factory=list)

    @classmethod
    def of(cls, judged: Sequence[Judged], k: int) -> PrecisionTable:
        answerable = [j for j in judged if j.answers]
        no_answer = [j for j in judged if not j.answers]
        if not answerable:
            raise ValueError("no answerable query")
        return cls(
            k=k,
            queries=len(judged),
            no_answer_queries=len(no_answer),
            recall=sum(j.recall(k) for j in answerable) / len(answerable),
            off_topic_per_query=sum(len(j.off_topic) for j in judged) / len(judged),
            empty_share=_empty_share(no_answer),
            pairs=_pairs(judged),
            languages=[
                LanguageEmptyShare(lang, len(group), _empty_share(group))
                for lang, group in sorted(_by_lang(no_answer).items())
            ],
        )


def _empty_share(no_answer: Sequence[Judged]) -> float:
    return sum(1 for j in no_answer if not j.kept) / len(no_answer) if no_answer else 0.0


def _by_lang(judged: Sequence[Judged]) -> dict[str, list[Judged]]:
    groups: dict[str, list[Judged]] = {}
    for j in judged:
        groups.setdefault(j.lang, []).append(j)
    return groups


def _pairs(judged: Sequence[Judged]) -> list[PairPrecision]:
    found: dict[LanguagePair, list[bool]] = {}
    off: dict[LanguagePair, int] = {}
    for j in judged:
        kept = {doc for doc, _ in j.kept}
        for doc, lang in j.answers.items():
            found.setdefault((j.lang, lang), []).append(doc in kept)
        for lang in j.off_topic:
            off[(j.lang, lang)] = off.get((j.lang, lang), 0) + 1
    queries = {lang: len(group) for lang, group in _by_lang(judged).items()}
    return [
        PairPrecision(
            pair,
            len(found.get(pair, [])),
            sum(found[pair]) / len(found[pair]) if found.get(pair) else None,
            off.get(pair, 0) / queries[pair[0]],
        )
        for pair in sorted(set(found) | set(off))
    ]
