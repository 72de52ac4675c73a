"""Recall (SPEC 3): plan the query, find candidates by keywords and by meaning, score them
(fusion.py: how a memory is scored), decide whether the query has an answer and which hits are
part of it (relevance.py), put replaced values below what replaced them (supersession.py), and
record the use of what is returned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import anyio

from ..config.config import Config
from ..models import RecallResult, Stage
from ..store.rows import Candidate, utcnow
from ..store.store import Store
from ..text.scripts import script_of
from ..text.tokens import keywords
from .fusion import Scored, Semantic, score_candidates
from .plan import MAX_QUERY_WORDS, TermPlan, embedded_texts, extract_keywords, plan_terms, segment, weighted_queries
from .relevance import answered, calibrated, passes
from .supersession import below_their_successors

__all__ = ["recall"]

_TOPIC_KEYWORDS = 5

_NO_KEYWORDS = "The query has no searchable words."
_NOTHING_MATCHED = "No memory shares a word with the query."
_BELOW_FLOOR = "Nothing stored is relevant enough to the query."
_NOT_ANSWERED = "No memory is close enough to the query in words or meaning: the store seems to hold no answer."


@dataclass(slots=True)
class _Keywords:
    """What the keyword stages found for a query."""

    terms: list[str]
    topic_terms: list[str]
    active: str | None  # a session recalled with that is still going on
    searched: bool  # the query had words to search
    plan: TermPlan
    candidates: list[Candidate]


class _QueryVector(NamedTuple):
    """The embedded query and the script group of the text embedded (text/scripts.py)."""

    vector: object
    script: int


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
    """Every stage, and the access of what is returned recorded. With the semantic stage the
    query's embedding is computed in a worker thread while the keyword stages run."""
    now = now or utcnow()
    vectors: list[_QueryVector] = []
    if store.encoder is None or store.vector_model is None:
        found = await _keyword_stages(store, config, query, category, tags, session_id, now, track_access)
    else:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_embed, store, query, vectors)
            found = await _keyword_stages(store, config, query, category, tags, session_id, now, track_access)
    # A query without a word to search (only particles, stopwords or punctuation: 了吗, "the")
    # asks nothing: the model still puts its vector near some memory, which would look like a match.
    if not found.searched:
        return RecallResult(query=query, keywords=found.terms, stage="none", hits=[], note=_NO_KEYWORDS)
    stage: Stage = "keyword"
    plan, candidates = found.plan, found.candidates
    full = plan.full
    semantic: Semantic | None = None
    best_cosine: float | None = None
    best_group: int | None = None
    if vectors:
        # Hybrid: the keyword candidates and the nearest in meaning, each scored on both parts
        # (memories without a vector yet on keywords alone); of two query vectors (a long query's
        # question and its recent context) each memory takes the better cosine.
        stage = "hybrid"
        have = [c.row.seq for c in candidates]
        cosines: dict[int, float] = {}
        groups: dict[int, int] = {}
        nearest: list[int] = []
        mean = -1.0
        for qv in vectors:
            near = await store.vector_neighbours(
                qv.vector, config.recall.semantic_candidates, have, qv.script, config.recall.cross_language
            )
            for seq, cosine in [*near.nearest, *near.scores.items()]:
                cosines[seq] = max(cosine, cosines.get(seq, -1.0))
            groups |= near.groups
            nearest += [n.seq for n in near.nearest]
            mean = max(mean, near.mean)
        if nearest:
            best_seq = max(nearest, key=lambda seq: cosines[seq])
            best_cosine, best_group = cosines[best_seq], groups.get(best_seq)
            semantic = Semantic(cosines, groups, mean, vectors[0].script, calibrated(store.vector_model))
            known = set(have)
            extra = [seq for seq in dict.fromkeys(nearest) if seq not in known]
            candidates = candidates + await store.candidates(extra, category, tags)
    if not candidates and plan.like:
        stage = "like"
        candidates = await store.search_like(plan.like, config.recall.candidate_limit, category, tags)
        full = 1.0  # the LIKE stage's raw score is already the share of keywords found
    shown = plan.keywords or found.terms
    if not candidates:
        return RecallResult(query=query, keywords=shown, stage="none", hits=[], note=_NOTHING_MATCHED)
    scored = score_candidates(candidates, config, now, found.topic_terms, full, semantic)
    unanswered = not answered(scored, semantic, best_cosine, best_group)
    if unanswered:
        # The bar weighs the model's evidence, which a memory not embedded yet (just written or
        # restored) does not have: such a memory is judged on its keywords alone, as without the stage.
        judged = semantic.cosines if semantic is not None else {}
        scored = [s for s in scored if s.candidate.row.seq not in judged]
        if not scored:
            return RecallResult(query=query, keywords=shown, stage="none", hits=[], note=_NOT_ANSWERED)
    # No keyword floor while jieba's dictionary loads: a query's bigrams across word boundaries
    # (我喝 and 么咖) match nothing and make a full match look weak.
    lenient = store.segmenter.state != "ready"

    def relevant(s: Scored) -> bool:
        return passes(s, config, lenient)

    top = [s for s in below_their_successors(scored, limit, relevant) if relevant(s)][:limit]
    if not top:
        note = _NOT_ANSWERED if unanswered else _BELOW_FLOOR
        return RecallResult(query=query, keywords=shown, stage="none", hits=[], note=note)
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
    terms = keywords(tokens, MAX_QUERY_WORDS)
    topic_terms: list[str] = []
    active: str | None = None
    if session_id is not None:
        session = await store.session(session_id)
        active = session_id if session is not None else None
        if track_access and active:
            store.touch([], now, active)
        if session is not None and session.current_topic:
            topic_terms = await extract_keywords(store, session.current_topic, _TOPIC_KEYWORDS)
            terms = terms + [t for t in topic_terms if t not in terms]
    words, queries = weighted_queries(tokens, topic_terms, config)
    plan = TermPlan([], [], [], 0.0)
    if queries:
        live, dfs = await store.document_frequencies(queries)
        plan = plan_terms(queries, words, dfs, live, config)
    limit_c = config.recall.candidate_limit
    candidates = await store.search_index(plan.queries, limit_c, category, tags) if plan.queries else []
    return _Keywords(terms, topic_terms, active, bool(queries), plan, candidates)


async def _embed(store: Store, query: str, out: list[_QueryVector]) -> None:
    """The query's vectors (none while the semantic stage is off or loading)."""
    for text in embedded_texts(query):
        vector = await store.embed_query(text)
        if vector is None:
            return
        out.append(_QueryVector(vector, script_of(text)))
