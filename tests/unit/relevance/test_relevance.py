"""Relevance: a similarity standardised against the query's similarities to the searched
windows of the same script group, and the rule that keeps semantic hits."""

from __future__ import annotations

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.relevance import (
    DEFAULT_BEST_RELEVANCE,
    DEFAULT_MIN_RELEVANCE,
    MAX_MIN_RELEVANCE,
    MIN_DISTRIBUTION,
    QueryDistribution,
    RelevanceFilter,
    ScriptGroup,
    parse_min_relevance,
    relevances,
    script_group,
)

HAN, MALAY, OTHER = ScriptGroup.HAN, ScriptGroup.MALAY, ScriptGroup.OTHER


def test_script_group_follows_the_share_of_han_characters() -> None:
    assert script_group("仓库的叉车坏了 今天的货要延迟") is HAN
    assert script_group("wei ming: 仓库的叉车坏了") is HAN
    assert script_group("Boss, slip gaji bulan ni belum dapat lagi lah, 谢谢") is not HAN
    assert script_group("The forklift is broken") is OTHER
    assert script_group("   ") is OTHER


def test_latin_text_is_malay_when_malay_function_words_outnumber_english_ones() -> None:
    assert script_group("Wifi pejabat tak boleh disambung sejak pagi tadi") is MALAY
    assert script_group("Saya TAK dapat masuk") is MALAY
    # Rojak with Malay grammar is Malay; with English grammar and Malay nouns it is not.
    assert script_group("I lupa password, macam mana nak reset") is MALAY
    assert script_group("The roti canai at the mamak is the best in town") is OTHER
    # A tie is not Malay: nothing says the text is more Malay than English.
    assert script_group("di the") is OTHER
    assert script_group("forklift rosak") is OTHER  # no function word either way


def test_a_hit_is_standardised_within_its_own_script_group() -> None:
    # Every Han window scores high for this query, every other window lower: the best
    # window of the other group stands out as much as the best Han window does.
    han = [(HAN, 0.88 + 0.001 * (i % 5)) for i in range(MIN_DISTRIBUTION)]
    other = [(OTHER, 0.78 + 0.001 * (i % 5)) for i in range(MIN_DISTRIBUTION)]
    scored = [*han, (HAN, 0.92), *other, (OTHER, 0.82)]
    rel = relevances(scored)
    best_han, best_other = rel[len(han)], rel[-1]
    assert best_han is not None and best_other is not None
    assert best_han == pytest.approx(best_other, rel=0.05)
    assert best_other > 3
    # Against the pooled distribution the other group's best would sit below the Han mean.
    pooled = QueryDistribution.of(scored).overall.standardise(0.82)
    assert pooled < 0


def test_a_small_group_borrows_the_whole_distribution_and_a_tiny_set_has_none() -> None:
    other = [(OTHER, 0.78 + 0.002 * (i % 7)) for i in range(MIN_DISTRIBUTION)]
    scored = [*other, (HAN, 0.9)]
    distribution = QueryDistribution.of(scored)
    assert distribution.relevance(HAN, 0.9) == distribution.overall.standardise(0.9)
    few = [(OTHER, 0.7 + 0.01 * i) for i in range(MIN_DISTRIBUTION - 1)]
    assert relevances(few) == [None] * len(few)


def test_min_relevance_accepts_numbers_in_range_only() -> None:
    assert parse_min_relevance(3) == 3.0
    assert parse_min_relevance(0) == 0.0
    assert parse_min_relevance(MAX_MIN_RELEVANCE) == MAX_MIN_RELEVANCE
    for bad in (-0.1, MAX_MIN_RELEVANCE + 0.1, float("nan"), float("inf"), True, "2", None):
        with pytest.raises(InvalidInput) as raised:
            parse_min_relevance(bad)
        assert raised.value.field == "min_relevance"


def test_the_default_rule_answers_only_a_query_whose_best_hit_stands_out() -> None:
    default = RelevanceFilter.requested(None)
    assert DEFAULT_MIN_RELEVANCE < DEFAULT_BEST_RELEVANCE
    best, next_ = DEFAULT_BEST_RELEVANCE, DEFAULT_MIN_RELEVANCE
    assert default.keep([best, next_, next_ - 0.01]) == [True, True, False]
    # No hit stands out: the query gets no semantic hit, even those above the floor.
    assert default.keep([best - 0.01, next_]) == [False, False]
    assert default.keep([None, None]) == [True, True]
    assert default.keep([]) == []
    # A caller's floor is one floor for every hit.
    assert RelevanceFilter.requested(1.0).keep([1.5, 1.0, 0.5, None]) == [True, True, False, False]


def test_the_default_filter_keeps_uncalibrated_hits_an_explicit_one_drops_them() -> None:
    default = RelevanceFilter.requested(None)
    assert default.min_relevance == DEFAULT_MIN_RELEVANCE
    assert default.keeps(None)
    assert default.keeps(DEFAULT_MIN_RELEVANCE)
    assert not default.keeps(DEFAULT_MIN_RELEVANCE - 0.01)
    explicit = RelevanceFilter.requested(1.0)
    assert not explicit.keeps(None)
    assert explicit.keeps(1.0)
    assert not explicit.keeps(0.99)
