# ruff: noqa: RUF001
from __future__ import annotations

from memory.domain.history.full_text import (
    CJK_BIGRAMS,
    WHOLE_RUNS,
    FullTextQuery,
    bigrams,
    has_cjk,
    query_words,
)

# A dictionary at the edge: the cuts a segmenter makes for the runs these tests use.
CUTS = {
    "退款到账": ["退款", "到账"],
    "我的退款什么时候到账": ["我", "的", "退款", "什么", "时候", "到", "账"],
    "退款了吗": ["退款", "了", "吗"],
    "请问退款了没有": ["请问", "退款", "了", "没有"],
    "我要钱": ["我", "要", "钱"],
    "好": ["好"],
}


def split(run: str) -> list[str]:
    return CUTS[run]


def words(segmented: str) -> list[str]:
    return segmented.split()


def test_a_chinese_run_becomes_its_overlapping_bigrams() -> None:
    assert bigrams("退款申请") == ["退款", "款申", "申请"]
    assert bigrams("退款") == ["退款"]
    assert bigrams("好") == ["好"]
    assert bigrams("") == []


def test_a_chinese_sentence_is_indexed_as_bigrams_and_punctuation_breaks_runs() -> None:
    indexed = CJK_BIGRAMS.index_text("我要退款，谢谢。")
    assert words(indexed) == ["我要", "要退", "退款", "谢谢"]


def test_latin_text_is_left_exactly_as_it_was() -> None:
    text = "Boss, my parcel belum sampai lagi lah! Tracking: MY-123_x (e-mail ali@x.my)"
    assert CJK_BIGRAMS.index_text(text) == text
    assert not has_cjk(text)


def test_rojak_keeps_latin_words_and_cuts_the_chinese_inside_one_message() -> None:
    indexed = CJK_BIGRAMS.index_text("Boss, 退款申请 dah submit, 明天ok好?")
    assert words(indexed) == [
        "Boss,",
        "退款",
        "款申",
        "申请",
        "dah",
        "submit,",
        "明天",
        "ok",
        "好",
        "?",
    ]


def test_japanese_and_korean_runs_are_cut_the_same_way() -> None:
    assert words(CJK_BIGRAMS.index_text("東京に行く")) == ["東京", "京に", "に行", "行く"]
    assert words(CJK_BIGRAMS.index_text("비밀번호 재설정")) == [
        "비밀",
        "밀번",
        "번호",
        "재설",
        "설정",
    ]
    # The katakana middle dot is punctuation, not part of a word.
    assert words(CJK_BIGRAMS.index_text("パスワード・リセット")) == [
        "パス",
        "スワ",
        "ワー",
        "ード",
        "リセ",
        "セッ",
        "ット",
    ]


def test_full_width_punctuation_separates_but_full_width_digits_stay() -> None:
    assert words(CJK_BIGRAMS.index_text("订单（１２３）已发货！")) == [
        "订单",
        "１２３",
        "已发",
        "发货",
    ]


def test_a_query_cuts_each_chinese_run_into_a_phrase_and_keeps_the_other_words() -> None:
    query = CJK_BIGRAMS.query("退款申请 status 发票?")
    assert query == FullTextQuery("status ?", ("退款 款申 申请", "发票"))
    assert CJK_BIGRAMS.query("好") == FullTextQuery("", ("好",))
    assert CJK_BIGRAMS.query("reset my password") == FullTextQuery("reset my password", ())


def test_a_query_uses_the_same_cut_as_the_index() -> None:
    message = "请问我的退款申请什么时候到账"
    indexed = words(CJK_BIGRAMS.index_text(message))
    for keyword in ("退款", "退款申请", "到账", "什么时候"):
        (phrase,) = CJK_BIGRAMS.query(keyword).phrases
        terms = phrase.split()
        # The query's bigrams occur consecutively in the message's: a phrase match.
        assert any(indexed[i : i + len(terms)] == terms for i in range(len(indexed))), keyword


def test_the_old_segmentation_leaves_texts_and_queries_to_postgres() -> None:
    assert WHOLE_RUNS.index_text("我要退款") == "我要退款"
    assert WHOLE_RUNS.query("我要退款 now") == FullTextQuery("我要退款 now", ())
    assert WHOLE_RUNS.version != CJK_BIGRAMS.version


def test_a_query_run_is_cut_into_dictionary_words_each_a_phrase() -> None:
    query = CJK_BIGRAMS.query("退款到账 status", split)
    assert query == FullTextQuery("status", ("退款", "到账"))
    assert CJK_BIGRAMS.query("退款到账") == FullTextQuery("", ("退款 款到 到账",))


def test_one_character_words_are_glued_together_or_dropped_between_longer_words() -> None:
    # 到/账 glued back into 到账; 我/的 into 我的 (both phrases the message must hold).
    assert query_words("我的退款什么时候到账", split) == ["我的", "退款", "什么", "时候", "到账"]
    # A lone particle between or after longer words would demand it standing alone.
    assert query_words("请问退款了没有", split) == ["请问", "退款", "没有"]
    # Nothing longer than one character: the run itself.
    assert query_words("我要钱", split) == ["我要钱"]
    assert query_words("好", split) == ["好"]
