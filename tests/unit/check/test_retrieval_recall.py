"""Recall per language pair, overall and across languages, from which questions each
method answered in its top k."""

from __future__ import annotations

import pytest

from memory.domain.retrieval_recall import Answered, RecallTable, top_k


def test_recall_is_counted_per_pair_and_across_languages() -> None:
    answered = [
        Answered(("en", "ms"), semantic=True, full_text=False),
        Answered(("en", "ms"), semantic=False, full_text=False),
        Answered(("ms", "ms"), semantic=True, full_text=True),
        Answered(("zh", "en"), semantic=True, full_text=False),
    ]
    table = RecallTable.of(answered, k=3)
    pairs = {p.pair: (p.questions, p.semantic, p.full_text) for p in table.pairs}
    assert pairs == {
        ("en", "ms"): (2, 0.5, 0.0),
        ("ms", "ms"): (1, 1.0, 1.0),
        ("zh", "en"): (1, 1.0, 0.0),
    }
    assert table.overall_semantic == 0.75
    assert table.overall_full_text == 0.25
    assert table.cross_lingual_semantic == pytest.approx(2 / 3)
    assert table.cross_lingual_full_text == 0.0


def test_no_questions_is_an_error() -> None:
    with pytest.raises(ValueError, match="no questions"):
        RecallTable.of([], k=3)


def test_top_k_breaks_ties_by_id() -> None:
    assert top_k({"b": 0.9, "a": 0.9, "c": 0.95, "d": 0.1}, 3) == ["c", "a", "b"]
