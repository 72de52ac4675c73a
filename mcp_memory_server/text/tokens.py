"""Pure text functions: normalisation, keywords (SPEC 3.1), index text and FTS5 query quoting.

Segmentation itself is jieba's (see `segmenter`); everything here works on its output so it can
be tested without loading a dictionary.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .keyword_query import KeywordQuery
from .stopwords import SINGLE_CHAR_STOPWORDS, STOPWORDS

__all__ = [
    "INDEX_VERSION",
    "char_queries",
    "fingerprint",
    "fts_query",
    "index_terms",
    "index_text",
    "is_cjk",
    "keyword_query",
    "keywords",
    "like_pattern",
    "normalize",
    "sentences",
    "similarity",
    "stem",
    "term_query",
]

# Bump when `index_text` changes: the store then rebuilds the full-text index from the memories
# on its next open.
INDEX_VERSION = 3

_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ebef"
# A run of CJK characters, or a run of other letters and digits.
_TERMS = re.compile(f"([{_CJK_CLASS}]+)|([^\\W_{_CJK_CLASS}]+)")

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202f\ufeff]")


def normalize(text: str) -> str:
    """NFKC (full-width letters and digits become ASCII) and control characters become spaces."""
    if not text.isascii():  # NFKC leaves ASCII as it is; most English text skips the work
        text = unicodedata.normalize("NFKC", text)
    return _CONTROL.sub(" ", text)


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


_SENTENCE_END = frozenset(".!?;。！？；…\n")


def sentences(tokens: Iterable[str]) -> list[list[str]]:
    """Segmenter tokens grouped into sentences (split after . ! ? ; and their full-width forms and
    line breaks); empty sentences left out."""
    out: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if (
            token
            and all(ch in _SENTENCE_END or ch.isspace() for ch in token)
            and any(ch in _SENTENCE_END for ch in token)
        ):
            if current:
                out.append(current)
                current = []
            continue
        current.append(token)
    if current:
        out.append(current)
    return out


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """English Snowball stem of a lower-case word (numbers and short words are left alone)."""
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    return str(_english_stemmer().stemWord(word))


@functools.cache
def _english_stemmer() -> Any:
    import snowballstemmer  # imported on first use: start-up does not pay for it

    return snowballstemmer.stemmer("english")


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def _cjk_terms(run: str) -> list[str]:
    # Bigrams find words; single characters let a query share meaning with a memory that words it
    # differently (犯困 and 困了, 减脂 and 减肥) at a lower weight (see `char_queries`).
    return _bigrams(run) + list(run) if len(run) > 1 else [run]


def index_terms(text: str) -> list[str]:
    """What the full-text index stores for a text: Chinese (and other CJK) runs as overlapping
    character bigrams, so any word inside them can be found whatever a segmenter would have
    made of it (拿铁 in 喝拿铁咖啡), and as single characters; other words lower-cased and
    stemmed (paintings -> paint)."""
    terms: list[str] = []
    for cjk, word in _TERMS.findall(normalize(text).lower()):
        if cjk:
            terms.extend(_cjk_terms(cjk))
        else:
            terms.append(stem(word))
    return terms


def index_text(text: str) -> str:
    """`index_terms` joined by spaces, for FTS5's unicode61 tokenizer to split again."""
    return " ".join(index_terms(text))


def _wants_prefix(keyword: str) -> bool:
    # Prefix matching (Pyth*) for whole Latin words of 3+ letters: "c++"* would become c* and
    # match everything, and two-letter prefixes (go*, ai*) match too much to help.
    return keyword.isascii() and keyword.isalnum() and len(keyword) >= 3


def _keyword_terms(keyword: str) -> tuple[str, ...]:
    """A keyword's index terms, without the single characters of its Chinese words."""
    terms = index_terms(keyword)
    return tuple(t for t in terms if len(t) > 1 or not is_cjk(t)) or tuple(terms)


def term_query(keyword: str) -> str | None:
    """The FTS5 expression for one keyword, in the index's own terms: a Chinese keyword becomes the
    phrase of its bigrams, a word its stem (with a prefix star), each quoted so nothing in the
    keyword is FTS syntax. None when the keyword has no indexable characters."""
    terms = _keyword_terms(keyword)
    if not terms:
        return None
    phrase = '"' + " ".join(terms).replace('"', '""') + '"'
    return phrase + "*" if len(terms) == 1 and _wants_prefix(keyword) else phrase


def keyword_query(keyword: str) -> KeywordQuery | None:
    """The in-memory index's query for one keyword (see `term_query` for the FTS5 form)."""
    terms = _keyword_terms(keyword)
    if not terms:
        return None
    return KeywordQuery(terms, prefix=len(terms) == 1 and _wants_prefix(keyword))


def char_queries(words: Iterable[str], weight: float) -> list[KeywordQuery]:
    """Single-character queries for the Chinese characters of a query's words, each counting
    `weight` of a word. `words` are keywords or raw segmenter tokens: stopwords (一般, 哪里) and
    function characters (的, 我, 啥) are left out, while one-character content words that
    keywords drop for being short (住, 喝, 猫) are kept: 我现在住哪儿 has no keyword but 住."""
    if weight <= 0:
        return []
    chars = dict.fromkeys(
        ch
        for word in words
        if word not in STOPWORDS
        for ch in normalize(word)
        if is_cjk(ch) and ch not in SINGLE_CHAR_STOPWORDS
    )
    return [KeywordQuery((ch,), weight=weight) for ch in chars]


def fts_query(keywords: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing the keywords' term queries; never FTS syntax errors."""
    parts = [q for q in (term_query(k) for k in keywords if k) if q is not None]
    return " OR ".join(dict.fromkeys(parts))


def like_pattern(term: str) -> str:
    """A LIKE pattern finding `term` anywhere; use with ESCAPE '\\'."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_NOT_ALNUM = re.compile(r"[\W_]+")


def _squeeze(text: str) -> str:
    """Letters and digits only, case-folded: what two texts must share to be the same memory."""
    return _NOT_ALNUM.sub("", normalize(text).casefold())


def _shingles(text: str) -> set[str]:
    squeezed = _squeeze(text)
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

    squeezed = _squeeze(text) or text.strip()
    return hashlib.sha1(squeezed.encode("utf-8")).hexdigest()
