"""The multi-stage retriever (SPEC 3): keywords -> candidates -> scoring -> ranking."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple

import anyio

from ..config.config import Config
from ..models import RecallResult, Stage
from ..store.rows import Candidate, MemoryRow, memory_id, utcnow
from ..store.store import Store
from ..text.corrections import Compared, Successor
from ..text.keyword_query import KeywordQuery
from ..text.provisional import provisional_tokens
from ..text.scripts import script_of
from ..text.tokens import char_queries, keyword_query, keywords, normalize, sentences

__all__ = [
    "Scored",
    "TermPlan",
    "below_their_successors",
    "extract_keywords",
    "floor_of",
    "plan_terms",
    "question_text",
    "recall",
    "relevance",
    "score_candidates",
    "segment",
    "semantic_part",
]

_TOPIC_KEYWORDS = 5
_MAX_EMBEDDED_CHARS = 200  # of a query, given to the embedding model (its cost grows with the square of the length)
_FLOOR_MIN_MEMORIES = 20  # the keyword floor applies from this many memories on (see recall)
# Distinct words read from one query: a 2,000-character query has a few hundred; the bound only
# keeps the work linear in the query's length whatever it holds.
_MAX_QUERY_WORDS = 1000

_NO_KEYWORDS = "The query has no searchable words."
_NOTHING_MATCHED = "No memory shares a word with the query."
_BELOW_FLOOR = "Nothing stored is relevant enough to the query."


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate's final score and its parts: keyword, category, recency, frequency,
    confidence, topic boost (plain floats; the pydantic Hit is built for returned hits only)."""

    candidate: Candidate
    score: float
    relevance: float  # the keyword part, blended with the semantic part when there is one
    parts: tuple[float, float | None, float, float, float, float, float]

    def hit(self) -> dict[str, Any]:
        """The fields of a returned `Hit`; `recall` validates all hits with the result in one call
        (cheaper than a model per hit and per breakdown). Timestamps stay ISO text for it to parse."""
        r = self.candidate.row
        keyword, semantic, category, recency, frequency, confidence, boost = self.parts
        return {
            "id": memory_id(r.number),
            "content": r.content,
            "key": r.key,
            "category": r.category,
            "importance": r.importance,
            "confidence": r.confidence,
            "source": r.source,
            "tags": json.loads(r.tags),
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "score": round(self.score, 4),
            "breakdown": {
                "keyword": round(keyword, 4),
                "semantic": None if semantic is None else round(semantic, 4),
                "category": category,
                "recency": round(recency, 4),
                "frequency": round(frequency, 4),
                "confidence": confidence,
                "topic_boost": boost,
            },
        }


# How long a query waits for jieba's dictionary while it loads from its cache (which takes less)
# before it is answered from dictionary-free tokens (text/provisional.py); a dictionary being
# built from scratch (seconds, once after an install) is not waited for.
SEGMENTER_PATIENCE = 0.2


async def segment(store: Store, text: str) -> list[str]:
    """jieba's tokens for a text; while its dictionary is still loading (beyond a short wait) or if
    it failed to load, dictionary-free tokens that the index's character bigrams answer."""
    if await store.segmenter.wait_at_most(SEGMENTER_PATIENCE) != "ready":
        return provisional_tokens(text)
    return store.segmenter.cut(normalize(text))


async def extract_keywords(store: Store, text: str, limit: int) -> list[str]:
    """Stage 1: jieba segmentation, stopwords, short tokens and short numbers dropped."""
    return keywords(await segment(store, text), limit)


def _related(row: MemoryRow, topic_terms: Sequence[str]) -> bool:
    haystack = " ".join((row.content, row.key or "", row.tags)).lower()  # tags as their JSON text
    return any(term in haystack for term in topic_terms)


@dataclass(frozen=True, slots=True)
class TermPlan:
    """The keywords a query searches and the score that means "matches all of it"."""

    queries: list[KeywordQuery]  # the rarest ones present in the store, for the index
    keywords: list[str]  # the searched keywords, in the query's order
    like: list[str]  # keywords for the substring fallback
    full: float  # BM25 of a memory holding the query's `score_terms` strongest terms once each
    memories: int = 0  # memories in the store when the plan was made


def weighted_queries(
    tokens: Sequence[str], topic_terms: Sequence[str], config: Config
) -> tuple[list[str | None], list[KeywordQuery]]:
    """The index queries of a query's words and their keywords (None for single characters).
    The last sentence holding a keyword is the question and weighs 1; earlier sentences are its
    context and weigh `context_weight` (a long query must not do worse than its question alone:
    context shares words with many memories). Topic keywords weigh 1; single Chinese characters
    `char_weight` of their sentence's weight."""
    r = config.recall
    groups = [g for g in sentences(tokens) if keywords(g, 1) or char_queries(g, 1.0)]
    weight: dict[str, float] = {}
    char_weight: dict[str, float] = {}
    for at, group in enumerate(groups):
        w = 1.0 if at == len(groups) - 1 else r.context_weight
        for term in keywords(group, _MAX_QUERY_WORDS):
            weight[term] = max(weight.get(term, 0.0), w)
        for q in char_queries([*keywords(group, _MAX_QUERY_WORDS), *group], r.char_weight * w):
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
    each query). The `query_terms` rarest present terms are searched, so a long context keeps the
    words that single a memory out and leaves the ones every memory has. The keyword part's scale
    is absolute: a term the store lacks still counts in `full` (a question about someone never
    mentioned matches only weakly), as the strongest terms of a long query do, at most
    `score_terms` of them; a weak one-word match therefore shows as weak."""
    r = config.recall
    strength = [q.weight * _idf(df, live) ** r.rarity for q, df in zip(queries, dfs, strict=True)]
    by_strength = sorted(range(len(queries)), key=lambda i: -strength[i])
    kept = sorted([i for i in by_strength if dfs[i] > 0][: r.query_terms])
    strongest = by_strength[: r.score_terms]
    full = sum(strength[i] for i in strongest) * (1 + r.coordination * sum(queries[i].weight for i in strongest))
    return TermPlan(
        queries=[queries[i] for i in kept],
        keywords=[w for i in kept if (w := words[i]) is not None],
        # The substring fallback looks for the strongest keywords, the store's unknown ones too.
        like=[w for i in by_strength if (w := words[i]) is not None][: r.max_keywords],
        full=full,
        memories=live,
    )


def semantic_part(cosine: float, config: Config) -> float:
    """A cosine on the fixed 0-1 scale of `cosine_low`..`cosine_high`, clipped."""
    low, high = config.recall.cosine_low, config.recall.cosine_high
    return min(1.0, max(0.0, (cosine - low) / (high - low))) if high > low else float(cosine >= high)


def floor_of(blended: bool, config: Config, lenient: bool = False) -> float:
    """The relevance a memory needs to be returned: `hybrid_floor` for a relevance blended with
    the semantic part (calibrated on it), `floor` for the keyword part alone (keyword-only recall,
    memories not embedded yet), none for the keyword part alone when `lenient`."""
    if blended:
        return config.recall.hybrid_floor
    return 0.0 if lenient else config.recall.floor


def relevance(keyword: float, semantic: float | None, config: Config) -> float:
    """How well a memory answers the query, 0-1: the keyword part alone, or blended with the
    semantic part (`semantic_share`) when the memory has a vector. The floor reads this."""
    if semantic is None:
        return keyword
    share = config.recall.semantic_share
    return (1 - share) * keyword + share * semantic


def score_candidates(
    candidates: Sequence[Candidate],
    config: Config,
    now: datetime,
    topic_terms: Sequence[str] = (),
    full: float = 1.0,
    cosines: Mapping[int, float] | None = None,
) -> list[Scored]:
    """Stage 3: the weighted sum of SPEC 3.3 with its parts, sorted best first (stage 4).
    `keyword` is the candidate's raw score over `full`, clipped to 1: an absolute scale, never
    the best candidate's (which would show any top hit as a full match). `cosines` (by seq) give
    the semantic part; the relevance blends both and takes the keyword weight of the sum."""
    if not candidates:
        return []
    w = config.recall.weights
    decay = math.log(2) / config.recall.half_life_days
    frequency_scale = math.log(config.recall.frequency_scale + 1)
    scored: list[Scored] = []
    for cand in candidates:
        r = cand.row
        keyword = min(1.0, cand.raw / full) if full > 0 else 0.0
        cosine = cosines.get(r.seq) if cosines is not None else None
        semantic = None if cosine is None else semantic_part(cosine, config)
        relevant = relevance(keyword, semantic, config)
        category = config.recall.category_weight(r.category)
        days = max(0.0, (now - datetime.fromisoformat(r.last_accessed)).total_seconds() / 86400)
        recency = math.exp(-decay * days)
        # A fixed scale, not the most-used candidate's: one memory's uses never move another's part.
        frequency = min(1.0, math.log(r.access_count + 1) / frequency_scale)
        boost = config.recall.topic_boost if topic_terms and _related(r, topic_terms) else 1.0
        total = (
            w.keyword * relevant
            + w.category * category
            + w.recency * recency
            # Uses count in proportion to relevance: a memory used often elsewhere cannot climb
            # a query it barely matches (returned-but-unrelated memories never feed back).
            + w.frequency * frequency * relevant
            + w.confidence * r.confidence
        ) * boost
        parts = (keyword, semantic, category, recency, frequency, r.confidence, boost)
        scored.append(Scored(cand, total, relevant, parts))
    # Ties go to the most recently updated (ISO timestamps sort as text).
    scored.sort(key=lambda s: (s.score, s.candidate.row.updated_at), reverse=True)
    return scored


# How far below its successor a superseded memory is put: enough to show in a score rounded to 4 places.
_SUPERSEDED_GAP = 0.001


def _ranked(scored: Sequence[Scored]) -> list[Scored]:
    # Ties go to the most recently updated (ISO timestamps sort as text).
    return sorted(scored, key=lambda s: (s.score, s.candidate.row.updated_at), reverse=True)


def below_their_successors(scored: Sequence[Scored], limit: int, shown: Callable[[Scored], bool]) -> list[Scored]:
    """`scored` (best first) with each superseded memory among the first `limit` that `shown`
    keeps scored just below the lowest of its successors among all the candidates, best first
    again: a later memory of the same keyed fact (I moved to Berlin under user.city over an
    unkeyed 我住在北京), or a later correction of it (截止日期不是3月1日，而是3月15日 over
    截止日期是3月1日; text/corrections.py says when one corrects another). Whatever its words share
    with the query or the session's topic, a value the user replaced never ranks above what
    replaced it.

    Only what can be returned is compared: the first `limit` shown, again after each round of
    demotions brings others up, so the work grows with `limit`, not with the candidates. Only a
    memory with a keyed fact's key or of category correction can supersede, so a recall without
    one costs one pass over the candidates."""
    successors = [
        (s.candidate.row, found)
        for s in scored
        if (found := Successor.of(s.candidate.row.content, s.candidate.row.key, s.candidate.row.category))
    ]
    if not successors:
        return list(scored)
    by_seq = {s.candidate.row.seq: s for s in scored}
    superseded_by: dict[int, list[int]] = {}
    ranked = list(scored)
    while True:
        fresh = [s for s in [s for s in ranked if shown(s)][:limit] if s.candidate.row.seq not in superseded_by]
        if not fresh:
            return ranked
        for s in fresh:
            r = s.candidate.row
            older = Compared(r.content, r.key)
            superseded_by[r.seq] = [
                row.seq
                for row, successor in successors
                if row.updated_at > r.updated_at and successor.supersedes(older)
            ]
        # From the scores of the scoring, newest first: a successor's own score is final before
        # the older memories it caps are read (a correction can itself be corrected).
        score = {seq: s.score for seq, s in by_seq.items()}
        for seq in sorted(superseded_by, key=lambda q: by_seq[q].candidate.row.updated_at, reverse=True):
            if superseded_by[seq]:
                cap = min(score[c] for c in superseded_by[seq]) - _SUPERSEDED_GAP
                score[seq] = max(0.0, min(score[seq], cap))
        ranked = _ranked([replace(s, score=score[seq]) if score[seq] != s.score else s for seq, s in by_seq.items()])


@dataclass(slots=True)
class _Keywords:
    """What the keyword stages found for a query (stages 1-2)."""

    terms: list[str]
    topic_terms: list[str]
    active: str | None  # a session recalled with that is still going on
    searched: bool  # the query had words to search
    plan: TermPlan
    candidates: list[Candidate]


async def recall(
    store: Store,
    config: Config,
    query: str,
    *,
    limit: int,
    category: str | None = None,
    tags: Sequence[str] | None = None,
    session_id: str | None = None,
    now: datetime | None = None,
    track_access: bool = True,
) -> RecallResult:
    """Run all four stages and record the access of what is returned. In hybrid recall the
    query's embedding is computed in a worker thread while the keyword stages run."""
    now = now or utcnow()
    vectors: list[_QueryVector] = []
    if store.encoder is None or store.vector_model is None:
        found = await _keyword_stages(store, config, query, category, tags, session_id, now, track_access)
    else:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_embed, store, config, query, vectors)
            found = await _keyword_stages(store, config, query, category, tags, session_id, now, track_access)
    # A query without a word to search (only particles, stopwords or punctuation: 了吗, "the")
    # asks nothing: the model still puts its vector near some memory (cosine 0.9 and more for
    # short texts of one script), which would be returned as a strong match.
    if not found.searched:
        return RecallResult(query=query, keywords=found.terms, stage="none", hits=[], note=_NO_KEYWORDS)
    stage: Stage = "keyword"
    plan, candidates = found.plan, found.candidates
    full = plan.full
    cosines: dict[int, float] | None = None
    if vectors:
        # Hybrid: the keyword candidates and the nearest in meaning, each scored on both parts
        # (memories without a vector yet on keywords alone).
        stage = "hybrid"
        # Cosines across scripts are offset to compare with the query's own (index/vectors.py),
        # so an English question reaches Chinese memories and the reverse.
        query_vector, prior = vectors[0], config.recall.cross_language
        found_near = await store.vector_search(
            query_vector.vector, config.recall.semantic_candidates, query_vector.script, prior
        )
        cosines = {near.seq: near.cosine for near in found_near}
        have = {c.row.seq for c in candidates}
        candidates = candidates + await store.candidates([seq for seq in cosines if seq not in have], category, tags)
        missing = [seq for seq in have if seq not in cosines]
        if missing:
            cosines.update(await store.vector_scores(query_vector.vector, missing, query_vector.script, prior))
    if not candidates and plan.like:
        stage = "like"
        candidates = await store.search_like(plan.like, config.recall.candidate_limit, category, tags)
        full = 1.0  # the LIKE stage's raw score is already the share of keywords found
    shown = plan.keywords or found.terms
    if not candidates:
        return RecallResult(query=query, keywords=shown, stage="none", hits=[], note=_NOTHING_MATCHED)
    scored = score_candidates(candidates, config, now, found.topic_terms, full, cosines)
    # No floor on the keyword part while jieba's dictionary loads (a query's bigrams across word
    # boundaries, 我喝 and 么咖, match nothing and make a full match look weak), nor in a store of a
    # few memories: there every matched term is common (a word in 1 memory of 1 has an idf of 0.29,
    # a word the store lacks 1.39), so one unknown word in a query would hide an exact match.
    lenient = store.segmenter.state != "ready" or found.plan.memories < _FLOOR_MIN_MEMORIES

    def relevant(s: Scored) -> bool:
        return s.relevance >= floor_of(s.parts[1] is not None, config, lenient)

    top = [s for s in below_their_successors(scored, limit, relevant) if relevant(s)][:limit]
    if not top:
        return RecallResult(query=query, keywords=shown, stage="none", hits=[], note=_BELOW_FLOOR)
    if track_access:
        # A use is a hit that matched: memories shown beside it do not gain from being shown.
        used = [s.candidate.row.seq for s in top if s.relevance >= config.recall.use_floor]
        store.touch(used, now, found.active)
    return RecallResult.model_validate(
        {"query": query, "keywords": shown, "stage": stage, "hits": [s.hit() for s in top], "note": None}
    )


async def _keyword_stages(
    store: Store,
    config: Config,
    query: str,
    category: str | None,
    tags: Sequence[str] | None,
    session_id: str | None,
    now: datetime,
    track_access: bool,
) -> _Keywords:
    tokens = await segment(store, query)
    terms = keywords(tokens, _MAX_QUERY_WORDS)
    topic_terms: list[str] = []
    active: str | None = None
    if session_id is not None:
        session = await store.session(session_id)
        active = session_id if session is not None else None
        if track_access and active:
            store.touch([], now, active)
        if session is not None and session.current_topic:
            topic_all = await extract_keywords(store, session.current_topic, _TOPIC_KEYWORDS)
            topic_terms = topic_all
            terms = terms + [t for t in topic_all if t not in terms]
    words, queries = weighted_queries(tokens, topic_terms, config)
    plan = TermPlan([], [], [], 0.0)
    if queries:
        live, dfs = await store.document_frequencies(queries)
        plan = plan_terms(queries, words, dfs, live, config)
    limit_c = config.recall.candidate_limit
    candidates = await store.search_index(plan.queries, limit_c, category, tags) if plan.queries else []
    return _Keywords(terms, topic_terms, active, bool(queries), plan, candidates)


_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def question_text(query: str) -> str:
    """A query's last sentence, its question (the context before it is not embedded with it)."""
    parts = [p.strip() for p in _SENTENCE_BREAK.split(query)]
    return next((p for p in reversed(parts) if p), query)


class _QueryVector(NamedTuple):
    """The embedded query and the script group of the text embedded (text/scripts.py)."""

    vector: object
    script: int


async def _embed(store: Store, config: Config, query: str, out: list[_QueryVector]) -> None:
    """The query's vector (none while the semantic stage is off or loading): of its question
    alone by default, as context sentences embedded with it pull the vector away from what is
    asked (measured: embedding the whole query, or the better of both, did worse on long queries)."""
    text = question_text(query) if config.recall.query_embedding == "question" else query
    # A question is short; a long sentence costs the model time that grows with the square of its
    # length (200 characters: 0.2-0.6 s on one core, 500: 2.5 s). Its end is kept: the question
    # comes last.
    embedded = text[-_MAX_EMBEDDED_CHARS:]
    vector = await store.embed_query(embedded)
    if vector is not None:
        out.append(_QueryVector(vector, script_of(embedded)))
