"""Tokens without jieba's dictionary: for a query while the dictionary is still loading, and for
the near-duplicate search of every write, which never waits for it.

A Chinese (or other CJK) run becomes its overlapping character bigrams, which is how the full-text
index stores it (`tokens.index_terms`): every word of two characters or more inside the run is one
of them, so a provisional query finds what a segmented one finds, ranked by the bigrams' rarity
instead of by words. Bigrams of two function characters (我对, 了吗) and stopwords (什么, 哪里)
are left out; the bigrams that straddle two words (对花 in 我对花生过敏) stay, since without a
dictionary nothing tells them apart, and mostly match nothing. Other words are kept as they are
for `tokens.keywords` to lower-case and filter like a segmenter's tokens.
"""

from __future__ import annotations

from .stopwords import SINGLE_CHAR_STOPWORDS, STOPWORDS
from .tokens import _TERMS as _RUNS  # CJK runs and other words, split as the index splits them
from .tokens import fts_query, keywords, normalize

__all__ = ["NEAR_DUPLICATE_TERMS", "near_duplicate_query", "provisional_tokens"]

# Terms of a text searched for its near-duplicates. A near-duplicate shares most of the text's
# terms wherever it differs, so a spread sample finds it; the bound keeps a long text's query
# cheap.
NEAR_DUPLICATE_TERMS = 32


def _function_pair(bigram: str) -> bool:
    return bigram in STOPWORDS or (bigram[0] in SINGLE_CHAR_STOPWORDS and bigram[1] in SINGLE_CHAR_STOPWORDS)


def provisional_tokens(text: str) -> list[str]:
    """Dictionary-free tokens of `text`, in order: CJK runs as character bigrams (a single
    character alone), other words whole."""
    tokens: list[str] = []
    for cjk, word in _RUNS.findall(normalize(text)):
        if word:
            tokens.append(word)
        elif len(cjk) == 1:
            tokens.append(cjk)
        else:
            tokens.extend(b for b in (cjk[i : i + 2] for i in range(len(cjk) - 1)) if not _function_pair(b))
    return tokens


def near_duplicate_query(text: str, limit: int = NEAR_DUPLICATE_TERMS) -> str:
    """The full-text query (`tokens.fts_query`'s form) for the memories that may be near-duplicates
    of `text`: up to `limit` of its distinct keywords (Chinese bigrams, other words), spread evenly
    over the text. No dictionary is involved, so a write decides the same whether jieba has loaded
    or not."""
    terms = keywords(provisional_tokens(text), limit=len(text) + 1)
    if len(terms) > limit:
        terms = [terms[i * len(terms) // limit] for i in range(limit)]
    return fts_query(terms)
