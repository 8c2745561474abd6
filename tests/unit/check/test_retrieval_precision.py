"""Precision per language pair: recall of right answers, off-topic hits per query, and the
share of no-answer queries answered with nothing; and the shipped precision set's shape."""

from __future__ import annotations

import pytest

from memory.datasets.precision_check import load_precision_set
from memory.domain.retrieval_precision import Judged, PrecisionTable


def test_off_topic_hits_and_empty_answers_are_counted_per_language() -> None:
    judged = [
        Judged("en", {"a": "ms", "b": "zh"}, [("a", "ms"), ("x", "en"), ("y", "zh")]),
        Judged("en", {"c": "en"}, [("c", "en")]),
        Judged("zh", {}, []),
        Judged("zh", {}, [("x", "en")]),
        Judged("ms", {}, []),
    ]
    table = PrecisionTable.of(judged, k=5)
    assert table.recall == pytest.approx((0.5 + 1.0) / 2)
    assert table.off_topic_per_query == pytest.approx(3 / 5)
    assert table.empty_share == pytest.approx(2 / 3)
    pairs = {p.pair: (p.answers, p.recall, p.off_topic_per_query) for p in table.pairs}
    assert pairs == {
        ("en", "en"): (1, 1.0, 0.5),
        ("en", "ms"): (1, 1.0, 0.0),
        ("en", "zh"): (1, 0.0, 0.5),
        ("zh", "en"): (0, None, 0.5),
    }
    assert [(x.lang, x.no_answer_queries, x.empty_share) for x in table.languages] == [
        ("ms", 1, 1.0),
        ("zh", 2, 0.5),
    ]


def test_recall_counts_at_most_k_answers() -> None:
    judged = [Judged("en", {"a": "en", "b": "en", "c": "en"}, [("a", "en"), ("b", "en")])]
    assert PrecisionTable.of(judged, k=2).recall == 1.0


def test_the_precision_set_is_large_multilingual_and_consistent() -> None:
    data = load_precision_set()
    languages = {"en", "ms", "zh", "rojak"}
    assert len(data.documents) >= 200
    assert {d.lang for d in data.documents} == languages
    assert {d.lang for d in data.documents if d.distracts} == languages
    ids = [d.id for d in data.documents]
    assert len(set(ids)) == len(ids)
    topics = {i.split(".")[0] for i in ids}
    for d in data.documents:
        assert d.distracts is None or d.distracts in topics
    no_answer = [q for q in data.queries if not q.answers]
    assert len(no_answer) >= 50
    assert {q.lang for q in no_answer} == languages
    distractors = {d.id for d in data.documents if d.distracts}
    for q in data.queries:
        assert set(q.answers) <= set(ids)
        assert not set(q.answers) & distractors
