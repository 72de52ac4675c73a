"""Query planning: which words a query searches, how much each weighs, and which text of it the
embedding model reads.

A query is segmented by jieba; its last sentence that holds a keyword is the question (weight 1)
and the sentences before it are its context (`context_weight`): a stretch of conversation cues by
its last turn most of all. Of all its keywords, the `query_terms` rarest in the store are searched,
so a long context keeps the words that single a memory out. The keyword part's scale is absolute
(`TermPlan.full`): a term the store lacks still counts, so a weak one-word match shows as weak."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..config.config import Config
from ..store.store import Store
from ..text.keyword_query import KeywordQuery
from ..text.provisional import provisional_tokens
from ..text.tokens import char_queries, keyword_query, keywords, normalize, sentences

__all__ = [
    "MAX_QUERY_WORDS",
    "SEGMENTER_PATIENCE",
    "TermPlan",
    "embedded_texts",
    "extract_keywords",
    "plan_terms",
    "question_text",
    "segment",
    "weighted_queries",
]

# Distinct words read from one query: a 2,000-character query has a few hundred; the bound only
# keeps the work linear in the query's length whatever it holds.
MAX_QUERY_WORDS = 1000
# How long a query waits for jieba's dictionary while it loads from its cache (which takes less)
# before it is answered from dictionary-free tokens (text/provisional.py); a dictionary being
# built from scratch (seconds, once after an install) is not waited for.
SEGMENTER_PATIENCE = 0.2
# Of a query, the characters the embedding model reads: its cost grows with the square of the
# length (30 characters 24 ms, 200 77 ms, 500 190 ms, 1,500 830 ms on one idle 2-core machine).
_MAX_EMBEDDED_CHARS = 200
_MAX_CONTEXT_CHARS = 500


async def segment(store: Store, text: str) -> list[str]:
    """jieba's tokens for a text; while its dictionary is still loading (beyond a short wait) or if
    it failed to load, dictionary-free tokens that the index's character bigrams answer."""
    if await store.segmenter.wait_at_most(SEGMENTER_PATIENCE) != "ready":
        return provisional_tokens(text)
    return store.segmenter.cut(normalize(text))


async def extract_keywords(store: Store, text: str, limit: int) -> list[str]:
    """jieba segmentation, stopwords, short tokens and short numbers dropped."""
    return keywords(await segment(store, text), limit)


@dataclass(frozen=True, slots=True)
class TermPlan:
    """The keywords a query searches and the score that means "matches all of it"."""

    queries: list[KeywordQuery]  # the rarest ones present in the store, for the index
    keywords: list[str]  # the searched keywords, in the query's order
    like: list[str]  # keywords for the substring fallback
    full: float  # BM25 of a memory holding the query's `score_terms` strongest terms once each


def weighted_queries(
    tokens: Sequence[str], topic_terms: Sequence[str], config: Config
) -> tuple[list[str | None], list[KeywordQuery]]:
    """The index queries of a query's words and their keywords (None for single characters).
    The last sentence holding a keyword is the question and weighs 1; earlier sentences are its
    context and weigh `context_weight`. Topic keywords weigh 1; single Chinese characters
    `char_weight` of their sentence's weight."""
    r = config.recall
    groups = [g for g in sentences(tokens) if keywords(g, 1) or char_queries(g, 1.0)]
    weight: dict[str, float] = {}
    char_weight: dict[str, float] = {}
    for at, group in enumerate(groups):
        w = 1.0 if at == len(groups) - 1 else r.context_weight
        for term in keywords(group, MAX_QUERY_WORDS):
            weight[term] = max(weight.get(term, 0.0), w)
        for q in char_queries([*keywords(group, MAX_QUERY_WORDS), *group], r.char_weight * w):
            char_weight[q.terms[0]] = max(char_weight.get(q.terms[0], 0.0), q.weight)
    for term in topic_terms:
        weight[term] = 1.0
    words: list[str | None] = []
    queries: list[KeywordQuery] = []
    for term, w in weight.items():
        found = keyword_query(term)
        if found is not None and w > 0:
            words.append(term)
            queries.append(replace(found, weight=w))
    for ch, w in char_weight.items():
        if w > 0:
            words.append(None)
            queries.append(KeywordQuery((ch,), weight=w))
    return words, queries


def _idf(df: int, live: int) -> float:
    return math.log(1 + (live - df + 0.5) / (df + 0.5))


def plan_terms(
    queries: Sequence[KeywordQuery], words: Sequence[str | None], dfs: Sequence[int], live: int, config: Config
) -> TermPlan:
    """Choose and weigh a query's terms by their rarity in the store (`dfs`: memories holding
    each query). The `query_terms` rarest present terms are searched. The keyword part's scale
    is absolute: a term the store lacks still counts in `full` (as a term of one memory would),
    as the strongest terms of a long query do, at most `score_terms` of them."""
    r = config.recall
    strength = [q.weight * _idf(df, live) ** r.rarity for q, df in zip(queries, dfs, strict=True)]
    by_strength = sorted(range(len(queries)), key=lambda i: -strength[i])
    kept = sorted([i for i in by_strength if dfs[i] > 0][: r.query_terms])
    strongest = by_strength[: r.score_terms]
    # A term the store lacks counts on the scale as the rarest term it could hold (one memory's):
    # in a store of a few memories an absent word's idf is five times a present one's (1.39
    # against 0.29 in a store of one), and one unknown word would make an exact match look weak.
    scale = [q.weight * _idf(max(df, 1), max(live, 1)) ** r.rarity for q, df in zip(queries, dfs, strict=True)]
    full = sum(scale[i] for i in strongest) * (1 + r.coordination * sum(queries[i].weight for i in strongest))
    return TermPlan(
        queries=[queries[i] for i in kept],
        keywords=[w for i in kept if (w := words[i]) is not None],
        # The substring fallback looks for the strongest keywords, the store's unknown ones too.
        like=[w for i in by_strength if (w := words[i]) is not None][: r.max_keywords],
        full=full,
    )


_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def question_text(query: str) -> str:
    """A query's last sentence, its question (the context before it is not embedded with it)."""
    parts = [p.strip() for p in _SENTENCE_BREAK.split(query)]
    return next((p for p in reversed(parts) if p), query)


def embedded_texts(query: str) -> list[str]:
    """What the embedding model reads of a query: its last sentence (at most 200 characters, its
    end: the question comes last), and, for a longer query, also its last 500 characters: in a
    stretch of conversation the turns before the last are the cue (measured on hand-written
    Chinese dialogues, dense R@5 .212 for the last sentence against .487 for the whole), while
    after unrelated text the question alone is (benchmarks/retrieval_lab.py). Each memory takes
    the better of the two cosines."""
    question = question_text(query)[-_MAX_EMBEDDED_CHARS:]
    tail = query.strip()[-_MAX_CONTEXT_CHARS:]
    return [question] if tail == question or not tail else [question, tail]
