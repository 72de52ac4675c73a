"""How a memory is scored: the keyword part and the semantic part, each on a scale made for this
query, blended into the memory's relevance, then the final score of SPEC 3.3.

The two parts (docs/retrieval.md says why each was chosen and what was measured):

- keyword: the memory's BM25 over what a memory matching the query's strongest terms once each
  would score (`TermPlan.full`), clipped to 1. That scale is absolute already: a weak one-word
  match shows as weak, whatever else the store holds.
- semantic: how far the memory's cosine stands above what the query scores against the store at
  large (its mean cosine over every stored vector), over how far the best candidate stands above
  it, clipped to 0-1. The model's cosines carry no fixed meaning (unrelated Chinese texts score
  0.85, related English ones 0.80), so no fixed band can say how close is close; the best match
  of this query and the store's own level can.

relevance = keyword_share × keyword + (1 − keyword_share) × semantic. A part that cannot judge a
memory does not vote on it: a memory without a vector yet has the keyword part alone, and one the
keyword part cannot read (no term of the query, and written in the other script: an English
memory for a Chinese question) the semantic part alone. A Chinese question shares characters with
many Chinese memories and none with the English memory that answers it; counting that as a
keyword score of 0 put every such answer below unrelated Chinese ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..config.config import Config
from ..store.rows import Candidate, MemoryRow, memory_id
from ..text.scripts import script_distance

__all__ = ["Evidence", "Scored", "Semantic", "evidence_of", "score_candidates"]


@dataclass(frozen=True, slots=True)
class Semantic:
    """What the query's vector says: each candidate's cosine and script group, the query's mean
    cosine over the whole store, and the query's script group."""

    cosines: Mapping[int, float]  # seq -> cosine (offset across scripts, index/vectors.py)
    groups: Mapping[int, int]  # seq -> script group
    mean: float
    script: int
    calibrated: bool = True  # the relevance decision's bar was fitted on this model (relevance.py)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One candidate's two parts as they enter the blend, and its relevance. `gap` is the cosine
    minus the store's mean (None without a vector), from which the semantic part is taken."""

    keyword: float
    semantic: float | None
    gap: float | None
    relevance: float


def evidence_of(
    candidates: Sequence[Candidate], full: float, semantic: Semantic | None, config: Config
) -> list[Evidence]:
    """Each candidate's parts and relevance, in the candidates' order."""
    share = config.recall.keyword_share
    keyword = [min(1.0, c.raw / full) if full > 0 else 0.0 for c in candidates]
    if semantic is None:
        return [Evidence(k, None, None, k) for k in keyword]
    gaps = [None if (cos := semantic.cosines.get(c.row.seq)) is None else cos - semantic.mean for c in candidates]
    best = max((g for g in gaps if g is not None), default=0.0)
    out: list[Evidence] = []
    for cand, k, gap in zip(candidates, keyword, gaps, strict=True):
        if gap is None:
            out.append(Evidence(k, None, None, k))
            continue
        # The best candidate's part is 1 by definition, also where nothing stands above the
        # store's mean (a store of one memory, whose mean is its own cosine).
        d = 1.0 if gap >= best else min(1.0, max(0.0, gap / best)) if best > 0 else 0.0
        blind = (
            cand.raw <= 0 and script_distance(semantic.groups.get(cand.row.seq, semantic.script), semantic.script) >= 1
        )
        out.append(Evidence(k, d, gap, d if blind else share * k + (1 - share) * d))
    return out


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate's final score and its parts: keyword, semantic, category, recency, frequency,
    confidence, topic boost (plain floats; the pydantic Hit is built for returned hits only)."""

    candidate: Candidate
    score: float
    relevance: float  # the keyword and semantic parts blended
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


def _related(row: MemoryRow, topic_terms: Sequence[str]) -> bool:
    haystack = " ".join((row.content, row.key or "", row.tags)).lower()  # tags as their JSON text
    return any(term in haystack for term in topic_terms)


def score_candidates(
    candidates: Sequence[Candidate],
    config: Config,
    now: datetime,
    topic_terms: Sequence[str] = (),
    full: float = 1.0,
    semantic: Semantic | None = None,
) -> list[Scored]:
    """The weighted sum of SPEC 3.3 with its parts, sorted best first: the relevance takes the
    keyword weight of the sum; uses count in proportion to it."""
    if not candidates:
        return []
    w = config.recall.weights
    decay = math.log(2) / config.recall.half_life_days
    frequency_scale = math.log(config.recall.frequency_scale + 1)
    scored: list[Scored] = []
    for cand, ev in zip(candidates, evidence_of(candidates, full, semantic, config), strict=True):
        r = cand.row
        category = config.recall.category_weight(r.category)
        days = max(0.0, (now - datetime.fromisoformat(r.last_accessed)).total_seconds() / 86400)
        recency = math.exp(-decay * days)
        # A fixed scale, not the most-used candidate's: one memory's uses never move another's part.
        frequency = min(1.0, math.log(r.access_count + 1) / frequency_scale)
        boost = config.recall.topic_boost if topic_terms and _related(r, topic_terms) else 1.0
        total = (
            w.keyword * ev.relevance
            + w.category * category
            + w.recency * recency
            # A memory used often elsewhere cannot climb a query it barely matches.
            + w.frequency * frequency * ev.relevance
            + w.confidence * r.confidence
        ) * boost
        parts = (ev.keyword, ev.semantic, category, recency, frequency, r.confidence, boost)
        scored.append(Scored(cand, total, ev.relevance, parts))
    # Ties go to the most recently updated (ISO timestamps sort as text), then to the newest
    # memory (its id): an order that does not depend on how the database returned the rows.
    scored.sort(key=lambda s: (s.score, s.candidate.row.updated_at, s.candidate.row.number), reverse=True)
    return scored
