"""The multi-stage retriever (SPEC 3): keywords -> candidates -> scoring -> ranking."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..config.config import Config
from ..models import RecallResult, Stage
from ..store.rows import Candidate, MemoryRow, memory_id, utcnow
from ..store.store import Store
from ..text.provisional import provisional_tokens
from ..text.tokens import char_queries, keyword_query, keywords, normalize

__all__ = ["Scored", "extract_keywords", "recall", "score_candidates", "segment"]

_TOPIC_KEYWORDS = 5


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate's final score and its parts: keyword, category, recency, frequency,
    confidence, topic boost (plain floats; the pydantic Hit is built for returned hits only)."""

    candidate: Candidate
    score: float
    parts: tuple[float, float, float, float, float, float]

    def hit(self) -> dict[str, Any]:
        """The fields of a returned `Hit`; `recall` validates all hits with the result in one call
        (cheaper than a model per hit and per breakdown). Timestamps stay ISO text for it to parse."""
        r = self.candidate.row
        keyword, category, recency, frequency, confidence, boost = self.parts
        return {
            "id": memory_id(r.seq),
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


def score_candidates(
    candidates: Sequence[Candidate], config: Config, now: datetime, topic_terms: Sequence[str] = ()
) -> list[Scored]:
    """Stage 3: the weighted sum of SPEC 3.3 with its parts, sorted best first (stage 4)."""
    if not candidates:
        return []
    w = config.recall.weights
    best_raw = max(c.raw for c in candidates)
    max_access = max(c.row.access_count for c in candidates)
    decay = math.log(2) / config.recall.half_life_days
    scored: list[Scored] = []
    for cand in candidates:
        r = cand.row
        keyword = cand.raw / best_raw if best_raw > 0 else 0.0
        category = config.recall.category_weight(r.category)
        days = max(0.0, (now - datetime.fromisoformat(r.last_accessed)).total_seconds() / 86400)
        recency = math.exp(-decay * days)
        frequency = 0.5 if max_access <= 1 else math.log(r.access_count + 1) / math.log(max_access + 1)
        boost = config.recall.topic_boost if topic_terms and _related(r, topic_terms) else 1.0
        total = (
            w.keyword * keyword
            + w.category * category
            + w.recency * recency
            + w.frequency * frequency
            + w.confidence * r.confidence
        ) * boost
        scored.append(Scored(cand, total, (keyword, category, recency, frequency, r.confidence, boost)))
    # Ties go to the most recently updated (ISO timestamps sort as text).
    scored.sort(key=lambda s: (s.score, s.candidate.row.updated_at), reverse=True)
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
    tokens = await segment(store, query)
    terms = keywords(tokens, config.recall.max_keywords)
    topic_terms: list[str] = []
    active: str | None = None  # a session recalled with is still going on
    if session_id is not None:
        session = await store.session(session_id)
        active = session_id if session is not None else None
        if track_access and active:
            store.touch([], now, active)
        if session is not None and session.current_topic:
            topic_all = await extract_keywords(store, session.current_topic, _TOPIC_KEYWORDS)
            topic_terms = topic_all
            terms = terms + [t for t in topic_all if t not in terms]
    stage: Stage = "fts"
    queries = [q for q in (keyword_query(t) for t in terms) if q is not None]
    # The characters of every content word, one-character words (住, 喝) included.
    queries += char_queries([*terms, *tokens], config.recall.char_weight)
    if not queries:
        return RecallResult(query=query, keywords=terms, stage="none", hits=[])
    candidates = await store.search_index(queries, config.recall.candidate_limit, category, tags)
    if not candidates and terms:
        stage = "like"
        candidates = await store.search_like(terms, config.recall.candidate_limit, category, tags)
    if not candidates:
        return RecallResult(query=query, keywords=terms, stage="none", hits=[])

    top = score_candidates(candidates, config, now, topic_terms)[:limit]
    if track_access:
        store.touch([s.candidate.row.seq for s in top], now, active)
    return RecallResult.model_validate(
        {"query": query, "keywords": terms, "stage": stage, "hits": [s.hit() for s in top]}
    )
