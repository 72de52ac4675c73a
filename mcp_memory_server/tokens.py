"""Pure text functions: normalisation, keywords (SPEC 3.1), index text and FTS5 query quoting.

Segmentation itself is jieba's (see `segmenter`); everything here works on its output so it can
be tested without loading a dictionary.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from .stopwords import SINGLE_CHAR_STOPWORDS, STOPWORDS

__all__ = [
    "INDEX_VERSION",
    "fingerprint",
    "fts_query",
    "index_text",
    "is_cjk",
    "keywords",
    "like_pattern",
    "normalize",
    "similarity",
]

# Bump when `index_text` or the segmentation feeding it changes: the store then rebuilds the
# full-text index from the memories on its next open.
INDEX_VERSION = 1

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202f\ufeff]")


def normalize(text: str) -> str:
    """NFKC (full-width letters and digits become ASCII) and control characters become spaces."""
    return _CONTROL.sub(" ", unicodedata.normalize("NFKC", text))


def is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2EBEF
        or 0xF900 <= code <= 0xFAFF
        or 0x3040 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
    )


def _has_word_char(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def _join_unknown_words(tokens: Iterable[str]) -> list[str]:
    """Join runs of single Chinese characters that are not function words: jieba splits words it
    does not know (拿铁 -> 拿/铁), which the two-character minimum would otherwise drop."""
    out: list[str] = []
    run = ""
    for token in tokens:
        if len(token) == 1 and is_cjk(token) and token not in SINGLE_CHAR_STOPWORDS:
            run += token
            continue
        if run:
            out.append(run)
            run = ""
        out.append(token)
    if run:
        out.append(run)
    return out


def keywords(tokens: Iterable[str], limit: int = 10) -> list[str]:
    """SPEC 3.1: lower-case, drop stopwords, tokens under 2 characters and numbers under 4 digits,
    de-duplicate keeping order, keep at most `limit`. Unknown Chinese words split into single
    characters are joined back first."""
    seen: set[str] = set()
    result: list[str] = []
    for raw in _join_unknown_words(tokens):
        token = raw.strip().lower()
        if len(token) < 2 or not _has_word_char(token) or token in STOPWORDS:
            continue
        if token.isdigit() and len(token) < 4:
            continue
        if token not in seen:
            seen.add(token)
            result.append(token)
            if len(result) >= limit:
                break
    return result


def index_text(tokens: Iterable[str]) -> str:
    """Space-joined word tokens: FTS5's unicode61 tokenizer then sees jieba's word boundaries."""
    return " ".join(t for t in (tok.strip().lower() for tok in tokens) if t and _has_word_char(t))


def _quote(term: str) -> str:
    # FTS5 reads its query as a C string: a NUL would end it inside the quotes.
    return '"' + _CONTROL.sub(" ", term).replace('"', '""') + '"'


def _wants_prefix(keyword: str) -> bool:
    # Prefix matching (Pyth*) for whole words only: "c++"* would become c* and match everything,
    # and two-letter Latin prefixes (go*, ai*) match too much to help.
    if not keyword.isalnum():
        return False
    return is_cjk(keyword[0]) or len(keyword) >= 3


def fts_query(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so no input is FTS syntax.

    A Chinese term also matches as a phrase of its single characters, which is how the index
    holds a word jieba did not know (拿铁 indexed as 拿 铁)."""
    parts: list[str] = []
    for term in terms:
        if not term:
            continue
        parts.append(_quote(term) + ("*" if _wants_prefix(term) else ""))
        if len(term) > 1 and all(is_cjk(ch) for ch in term):
            parts.append(_quote(" ".join(term)))
    return " OR ".join(parts)


def like_pattern(term: str) -> str:
    """A LIKE pattern finding `term` anywhere; use with ESCAPE '\\'."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _shingles(text: str) -> set[str]:
    squeezed = "".join(ch for ch in normalize(text).casefold() if ch.isalnum())
    if len(squeezed) < 2:
        return {squeezed} if squeezed else set()
    return {squeezed[i : i + 2] for i in range(len(squeezed) - 1)}


_DIGITS = re.compile(r"\d+")


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character bigrams, ignoring case, spacing and punctuation (0-1).

    The same measure for Chinese and English: "I prefer VS Code" and "I prefer VSCode." score 1.0,
    while a negation ("我喜欢" vs "我不喜欢") changes enough bigrams to stay below the threshold.
    Texts whose numbers differ (尾号1234 vs 尾号5678) are different facts: their score is halved.
    """
    sa, sb = _shingles(a), _shingles(b)
    if not sa or not sb:
        return 1.0 if sa == sb else 0.0
    score = len(sa & sb) / len(sa | sb)
    if sorted(_DIGITS.findall(normalize(a))) != sorted(_DIGITS.findall(normalize(b))):
        score /= 2
    return score


def fingerprint(text: str) -> str:
    """Hash of the text ignoring case, spacing and punctuation: equal fingerprints, same memory."""
    import hashlib

    squeezed = "".join(ch for ch in normalize(text).casefold() if ch.isalnum()) or text.strip()
    return hashlib.sha1(squeezed.encode("utf-8")).hexdigest()
