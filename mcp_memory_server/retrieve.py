"""The multi-stage retriever (SPEC 3): keywords -> candidates -> scoring -> ranking."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .config import Config
from .models import Breakdown, Hit, Memory, RecallResult, Stage
from .rows import Candidate, parse_id, utcnow
from .store import Store
from .tokens import fts_query, keywords, normalize

__all__ = ["Scored", "extract_keywords", "recall", "score_candidates"]

_TOPIC_KEYWORDS = 5


@dataclass(frozen=True)
class Scored:
    memory: Memory
    score: float
    breakdown: Breakdown


async def extract_keywords(store: Store, text: str, limit: int) -> list[str]:
    """Stage 1: jieba segmentation, stopwords, short tokens and short numbers dropped."""
    await store.segmenter.wait()
    return keywords(store.segmenter.cut(normalize(text)), limit)


def _related(memory: Memory, topic_terms: Sequence[str]) -> bool:
    haystack = " ".join((memory.content, memory.key or "", " ".join(memory.tags))).lower()
    return any(term in haystack for term in topic_terms)


def score_candidates(
    candidates: Sequence[Candidate], config: Config, now: datetime, topic_terms: Sequence[str] = ()
) -> list[Scored]:
    """Stage 3: the weighted sum of SPEC 3.3 with its parts, sorted best first (stage 4)."""
    if not candidates:
        return []
    w = config.weights
    best_raw = max(c.raw for c in candidates)
    max_access = max(c.memory.access_count for c in candidates)
    decay = math.log(2) / config.half_life_days
    scored: list[Scored] = []
    for cand in candidates:
        m = cand.memory
        keyword = cand.raw / best_raw if best_raw > 0 else 0.0
        category = config.category_weight(m.category)
        days = max(0.0, (now - m.last_accessed).total_seconds() / 86400)
        recency = math.exp(-decay * days)
        frequency = 0.5 if max_access <= 1 else math.log(m.access_count + 1) / math.log(max_access + 1)
        boost = config.topic_boost if topic_terms and _related(m, topic_terms) else 1.0
        total = (
            w.keyword * keyword
            + w.category * category
            + w.recency * recency
            + w.frequency * frequency
            + w.confidence * m.confidence
        ) * boost
        scored.append(
            Scored(
                m,
                total,
                Breakdown(
                    keyword=round(keyword, 4),
                    category=category,
                    recency=round(recency, 4),
                    frequency=round(frequency, 4),
                    confidence=m.confidence,
                    topic_boost=boost,
                ),
            )
        )
    scored.sort(key=lambda s: (s.score, s.memory.updated_at), reverse=True)
    return scored


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
    """Run all four stages and record the access of what is returned."""
    now = now or utcnow()
    terms = await extract_keywords(store, query, config.max_keywords)
    topic_terms: list[str] = []
    if session_id is not None:
        session = await store.session(session_id)
        if session is not None and session.current_topic:
            topic_all = await extract_keywords(store, session.current_topic, _TOPIC_KEYWORDS)
            topic_terms = topic_all
            terms = terms + [t for t in topic_all if t not in terms]
    if not terms:
        return RecallResult(query=query, keywords=[], stage="none", hits=[])

    stage: Stage = "fts"
    candidates = await store.search_fts(fts_query(terms), config.candidate_limit, category, tags)
    if not candidates:
        stage = "like"
        candidates = await store.search_like(terms, config.candidate_limit, category, tags)
    if not candidates:
        return RecallResult(query=query, keywords=terms, stage="none", hits=[])

    top = score_candidates(candidates, config, now, topic_terms)[:limit]
    if track_access:
        await store.touch([s for s in (parse_id(x.memory.id) for x in top) if s is not None], now)
    hits = [
        Hit(
            id=s.memory.id,
            content=s.memory.content,
            category=s.memory.category,
            key=s.memory.key,
            tags=s.memory.tags,
            importance=s.memory.importance,
            confidence=s.memory.confidence,
            source=s.memory.source,
            created_at=s.memory.created_at,
            updated_at=s.memory.updated_at,
            score=round(s.score, 4),
            breakdown=s.breakdown,
        )
        for s in top
    ]
    return RecallResult(query=query, keywords=terms, stage=stage, hits=hits)
