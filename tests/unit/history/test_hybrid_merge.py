from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory.domain.history.search import HistoryHit, HybridMerge, MatchedBy

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def hit(event_id: str, by: MatchedBy) -> HistoryHit:
    similarity = 0.8 if by is MatchedBy.SEMANTIC else None
    window = uuid.uuid4() if by is MatchedBy.SEMANTIC else None
    return HistoryHit(event_id, "slack", "C1", "ali", "t", T, by, similarity, window)


def ids(hits: list[HistoryHit]) -> list[tuple[str, str]]:
    return [(h.event_id, h.matched_by.value) for h in hits]


def test_full_text_first_then_semantic_appended() -> None:
    fts = [hit("f1", MatchedBy.FTS), hit("f2", MatchedBy.FTS)]
    sem = [hit("s1", MatchedBy.SEMANTIC), hit("s2", MatchedBy.SEMANTIC)]
    assert ids(HybridMerge(10).merge(fts, sem)) == [
        ("f1", "fts"),
        ("f2", "fts"),
        ("s1", "semantic"),
        ("s2", "semantic"),
    ]


def test_an_event_found_by_both_appears_once_as_full_text() -> None:
    fts = [hit("a", MatchedBy.FTS)]
    sem = [hit("b", MatchedBy.SEMANTIC), hit("a", MatchedBy.SEMANTIC), hit("b", MatchedBy.SEMANTIC)]
    assert ids(HybridMerge(10).merge(fts, sem)) == [("a", "fts"), ("b", "semantic")]


def test_results_are_capped_at_the_limit() -> None:
    fts = [hit(f"f{i}", MatchedBy.FTS) for i in range(3)]
    sem = [hit(f"s{i}", MatchedBy.SEMANTIC) for i in range(3)]
    assert ids(HybridMerge(4).merge(fts, sem))[-1] == ("s0", "semantic")
    assert len(HybridMerge(4).merge(fts, sem)) == 4
    assert ids(HybridMerge(2).merge(fts, sem)) == [("f0", "fts"), ("f1", "fts")]


def test_no_semantic_hits_is_full_text_only() -> None:
    assert ids(HybridMerge(5).merge([hit("f", MatchedBy.FTS)], [])) == [("f", "fts")]


def test_the_limit_is_positive() -> None:
    with pytest.raises(ValueError):
        HybridMerge(0)
