"""Which writing system a text is mostly in, as far as a multilingual model's vectors care.

A multilingual embedding model scores a text written in the query's own script higher than an
equally relevant text in another: on the bundled model, a Chinese question's cosine to the right
English memory was 0.81 at the median while unrelated Chinese memories reached 0.89. The vector
index (index/vectors.py) corrects for it per script group; this module says which group a text
belongs to. A text that mixes both (an English sentence with a Chinese clause) is near both, so it
is a group of its own.
"""

from __future__ import annotations

import re

__all__ = ["CJK", "LATIN", "MIXED", "SCRIPTS", "script_distance", "script_of"]

LATIN = 0  # Latin and every other script without CJK characters (and text with no letters)
CJK = 1  # mostly Chinese, Japanese or Korean characters
MIXED = 2  # a good share of both
SCRIPTS = (LATIN, CJK, MIXED)

# Kana, CJK ideographs and Hangul (the scripts the multilingual model scores apart from Latin ones).
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
# A Chinese word is two characters on average: two CJK characters weigh as one Latin word.
_CHARS_PER_WORD = 2
# A text is of one script when the other makes up less than this share of its words.
_MINOR_SHARE = 0.25


def script_of(text: str) -> int:
    """`LATIN`, `CJK` or `MIXED`: the script group of a text, by its share of CJK words."""
    cjk = len(_CJK_CHAR.findall(text)) / _CHARS_PER_WORD
    latin = len(_LATIN_WORD.findall(text))
    if cjk + latin == 0:
        return LATIN
    share = cjk / (cjk + latin)
    if share < _MINOR_SHARE:
        return LATIN
    if share > 1 - _MINOR_SHARE:
        return CJK
    return MIXED


def script_distance(a: int, b: int) -> float:
    """How far apart two groups are for the model: 0 the same, 1 Latin and CJK, 0.5 either and mixed."""
    if a == b:
        return 0.0
    return 0.5 if MIXED in (a, b) else 1.0
