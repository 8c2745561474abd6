"""What full-text search indexes and asks for: Chinese (and Japanese, Korean) text cut into
overlapping character bigrams, the way Elasticsearch's `cjk` analyzer does (docs/adr/0050).

PostgreSQL's parser sees an unbroken run of Chinese characters as one word, so "退款" would
only find a message that is exactly "退款". Here every run of CJK characters becomes its
overlapping bigrams ("退款申请" -> "退款 款申 申请"), written as separate words at
consecutive positions; a lone CJK character stays one word. Everything outside CJK runs is
left exactly as it was, so Latin-script words (English, Malay) are indexed as before by the
'simple' configuration: lower-cased, no stemming, no stop words.

A query is cut the same way, after a dictionary has cut each of its CJK runs into words
(Chinese is written without spaces, so "退款到账" is two keywords). Each word becomes a
phrase of its bigrams (consecutive positions), so "退款" matches those two characters
together and not every message holding "退" somewhere; every word and phrase is required, as
Latin words always were. A one-character CJK query matches only that character standing
alone (a run of length one, e.g. "好" as a whole reply), never every message containing it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Cuts a run of CJK characters into dictionary words (jieba in production): only queries are
# cut this way, never what is stored, so the dictionary can change without re-indexing.
WordSplitter = Callable[[str], Iterable[str]]

# Han (with extensions A-F, compatibility ideographs and the marks U+3005, U+3007),
# Hiragana, Katakana (without the middle dot, which is punctuation) and Hangul: the scripts
# the `cjk` analyzer bigrams. Korean puts spaces between words, but glues particles on to
# them, so bigrams help it the same way.
_CJK_CHARS = (
    "\u3005\u3007"
    "\u3040-\u309f"
    "\u30a0-\u30fa\u30fc-\u30ff"
    "\u3131-\u318e"
    "\u31f0-\u31ff"
    "\u3400-\u4dbf"
    "\u4e00-\u9fff"
    "\uac00-\ud7af"
    "\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
# Ideographic space and punctuation (、。「」 etc.) and full-width punctuation: word breaks.
# PostgreSQL treats them as letters under a plain C locale, which would glue them to words.
_CJK_PUNCTUATION = re.compile(
    "[\u3000-\u3004\u3008-\u303f\u30fb\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]"
)


def bigrams(run: str) -> list[str]:
    """The overlapping bigrams of a run of CJK characters; the run itself if it is one
    character."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


@dataclass(frozen=True, slots=True)
class FullTextQuery:
    """A search text cut for full-text search: `words` holds everything outside CJK runs
    (every word required, as `plainto_tsquery('simple', ...)` reads it); `phrases` one
    entry per CJK run (or per dictionary word of one), its bigrams separated by spaces (for
    `phraseto_tsquery`). A message matches when it matches `words` and every phrase."""

    words: str
    phrases: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, split_words: WordSplitter | None = None) -> FullTextQuery:
        """Without `split_words`, each CJK run is one phrase. With it, each run is cut into
        words (`query_words`) and each word is a phrase of its own: "退款到账" then finds
        "退款什么时候到账" as "退款 到账" would, where one phrase would need the four
        characters together."""
        text = _CJK_PUNCTUATION.sub(" ", text)
        runs = _CJK_RUN.findall(text)
        if split_words is not None:
            runs = [word for run in runs for word in query_words(run, split_words)]
        phrases = tuple(" ".join(bigrams(run)) for run in runs)
        words = " ".join(_CJK_RUN.sub(" ", text).split())
        return cls(words, phrases)


def query_words(run: str, split_words: WordSplitter) -> list[str]:
    """The words of a query's CJK run: consecutive one-character words glued together
    (a dictionary may cut 到账 into 到/账), a one-character word left alone between longer
    ones dropped (particles such as 的, 了, 吗 would otherwise demand a character standing
    alone in the message), and the run itself when nothing longer is left."""
    chunks: list[str] = []
    glue = False
    for word in split_words(run):
        if not word:
            continue
        if len(word) == 1 and glue:
            chunks[-1] += word
        else:
            chunks.append(word)
        glue = len(word) == 1
    return [chunk for chunk in chunks if len(chunk) > 1] or [run]


@dataclass(frozen=True, slots=True)
class Segmentation:
    """How message texts are cut before PostgreSQL's 'simple' configuration indexes them.
    `version` is stored with each row (`search_segmentation`), so rows indexed by an older
    segmentation can be found and re-indexed (`memory history reindex`, docs/adr/0051)."""

    version: int
    cjk_bigrams: bool

    def index_text(self, text: str) -> str:
        """The text whose `to_tsvector('simple', ...)` is a message's index: with CJK
        bigrams, every CJK run replaced by its bigrams separated by spaces (each a word, at
        consecutive positions) and CJK punctuation by spaces; everything else unchanged."""
        if not self.cjk_bigrams or not has_cjk(text):
            return text
        text = _CJK_PUNCTUATION.sub(" ", text)
        return _CJK_RUN.sub(lambda m: " " + " ".join(bigrams(m.group())) + " ", text)

    def query(self, text: str, split_words: WordSplitter | None = None) -> FullTextQuery:
        """The query cut the way `index_text` cuts messages (see `FullTextQuery.parse`)."""
        if not self.cjk_bigrams:
            return FullTextQuery(text, ())
        return FullTextQuery.parse(text, split_words)


# PostgreSQL's parser alone, as before: a CJK run is one word. Rows written before migration
# 0205 carry this version.
WHOLE_RUNS = Segmentation(version=0, cjk_bigrams=False)
CJK_BIGRAMS = Segmentation(version=1, cjk_bigrams=True)
# What ingest writes and search asks with; reindexing brings older rows to it.
CURRENT_SEGMENTATION = CJK_BIGRAMS
