"""Recall of a retrieval check, per language pair: the share of questions in one language
whose document (in another, or the same) is among the top k results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

LanguagePair = tuple[str, str]  # (question's language, document's language)


@dataclass(frozen=True, slots=True)
class Answered:
    """One question: its pair, and whether each method found its document in the top k."""

    pair: LanguagePair
    semantic: bool
    full_text: bool


@dataclass(frozen=True, slots=True)
class PairRecall:
    pair: LanguagePair
    questions: int
    semantic: float
    full_text: float

    @property
    def cross_lingual(self) -> bool:
        return self.pair[0] != self.pair[1]


@dataclass(frozen=True)
class RecallTable:
    k: int
    pairs: list[PairRecall] = field(default_factory=list)
    overall_semantic: float = 0.0
    overall_full_text: float = 0.0
    cross_lingual_semantic: float = 0.0
    cross_lingual_full_text: float = 0.0

    @classmethod
    def of(cls, answered: Sequence[Answered], k: int) -> RecallTable:
        if not answered:
            raise ValueError("no questions answered")
        by_pair: dict[LanguagePair, list[Answered]] = {}
        for a in answered:
            by_pair.setdefault(a.pair, []).append(a)
        pairs = [
            PairRecall(pair, len(group), _share(group, "semantic"), _share(group, "full_text"))
            for pair, group in sorted(by_pair.items())
        ]
        cross = [a for a in answered if a.pair[0] != a.pair[1]]
        return cls(
            k=k,
            pairs=pairs,
            overall_semantic=_share(answered, "semantic"),
            overall_full_text=_share(answered, "full_text"),
            cross_lingual_semantic=_share(cross, "semantic") if cross else 0.0,
            cross_lingual_full_text=_share(cross, "full_text") if cross else 0.0,
        )


def _share(group: Sequence[Answered], method: str) -> float:
    return sum(1 for a in group if getattr(a, method)) / len(group)


def top_k(scores: dict[str, float], k: int) -> list[str]:
    """The ids of the k best scores, ties broken by id so a run is repeatable."""
    return [i for i, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]]
