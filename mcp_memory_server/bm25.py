"""An in-memory BM25 index over the memories' full-text terms.

SQLite FTS5 computes BM25 for every row matching any OR-ed term, which costs 3.5 ms per query at
10,000 memories and 14 ms at 100,000 (BENCHMARKS.md). This index keeps the same terms in numpy
postings, scores a query in well under a millisecond at 10,000, and lets us tune BM25's k1 and b.
The FTS5 table stays the durable copy of the terms: this index is rebuilt from it, and follows
later writes (from this process or any other) through the store's change log.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Bm25Index", "KeywordQuery"]

_MAX_PREFIX_TERMS = 64


@dataclass(frozen=True)
class KeywordQuery:
    """One keyword in index terms: all `terms` must occur (a Chinese word's bigrams); with
    `prefix`, its single term also matches longer terms (pyth -> python). `weight` scales its
    contribution (single Chinese characters count for less than words)."""

    terms: tuple[str, ...]
    prefix: bool = False
    weight: float = 1.0


class Bm25Index:
    """Postings per term (doc numbers and term frequencies) with a forward index for feedback.
    Doc numbers are internal; `seqs[doc]` is the memory. Replaced or deleted docs are marked dead
    and dropped at the next compaction."""

    def __init__(self, k1: float = 0.9, b: float = 0.4) -> None:
        self.k1 = k1
        self.b = b
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._docs: list[array[int]] = []  # per term: doc numbers
        self._tfs: list[array[int]] = []  # per term: term frequencies, capped at 255 (one byte each)
        self._sizes = array("i")  # per term: postings, dead ones included (a cheap document frequency)
        self._seqs = array("q")
        self._lengths = array("f")
        self._alive = bytearray()
        # Per doc, its distinct term ids: one flat array and each doc's start in it (one small
        # array per doc would cost 64 bytes of overhead each, 6 MB at 100,000 memories).
        self._forward = array("i")
        self._forward_start = array("q", [0])
        self._doc_of: dict[int, int] = {}  # seq -> live doc number
        self._sorted_terms: list[str] | None = None
        self._live_length: float = 0.0
        self._norm: Any = None  # BM25 length normalisation per doc, until the next change

    def __len__(self) -> int:
        return len(self._doc_of)

    @property
    def dead(self) -> int:
        return len(self._seqs) - len(self._doc_of)

    def add(self, seq: int, terms: Sequence[str]) -> None:
        """Index a memory's terms, replacing what was indexed for it before."""
        self.remove(seq)
        self._norm = None
        doc = len(self._seqs)
        self._seqs.append(seq)
        self._lengths.append(float(len(terms)))
        self._alive.append(1)
        self._doc_of[seq] = doc
        self._live_length += len(terms)
        for term, count in Counter(terms).items():
            tid = self._term_ids.get(term)
            if tid is None:
                tid = len(self._terms)
                self._term_ids[term] = tid
                self._terms.append(term)
                self._docs.append(array("i"))
                self._tfs.append(array("B"))
                self._sizes.append(0)
                if self._sorted_terms is not None:
                    # kept sorted as terms arrive: re-sorting the whole vocabulary after a write
                    # would put 50 ms on the next prefix query at 100,000 memories
                    bisect.insort(self._sorted_terms, term)
            self._docs[tid].append(doc)
            self._tfs[tid].append(min(count, 255))
            self._sizes[tid] += 1
            self._forward.append(tid)
        self._forward_start.append(len(self._forward))

    def remove(self, seq: int) -> None:
        doc = self._doc_of.pop(seq, None)
        if doc is not None:
            self._norm = None
            self._alive[doc] = 0
            self._live_length -= self._lengths[doc]

    def needs_compaction(self) -> bool:
        return self.dead > 1000 and self.dead > len(self._doc_of) // 4

    def _postings(self, term: str, alive: Any) -> tuple[Any, Any] | None:
        tid = self._term_ids.get(term)
        if tid is None:
            return None
        docs = np.frombuffer(self._docs[tid], dtype=np.int32)
        tfs = np.frombuffer(self._tfs[tid], dtype=np.uint8).astype(np.float32)
        if alive is None:
            return docs, tfs
        keep = alive[docs]
        return (docs, tfs) if keep.all() else (docs[keep], tfs[keep])

    def _prefixed(self, prefix: str) -> list[str]:
        if self._sorted_terms is None:
            self._sorted_terms = sorted(self._terms)
        start = bisect.bisect_left(self._sorted_terms, prefix)
        found: list[str] = []
        for term in self._sorted_terms[start : start + _MAX_PREFIX_TERMS]:
            if not term.startswith(prefix):
                break
            found.append(term)
        return found

    def _match(self, query: KeywordQuery, alive: Any) -> tuple[Any, Any] | None:
        """Docs matching one keyword and its frequency in each (a phrase counts its rarest term)."""
        if query.prefix and len(query.terms) == 1:
            parts = [p for p in (self._postings(t, alive) for t in self._prefixed(query.terms[0])) if p is not None]
            if not parts:
                return None
            if len(parts) == 1:
                return parts[0]
            docs = np.concatenate([p[0] for p in parts])
            tfs = np.concatenate([p[1] for p in parts])
            unique, inverse = np.unique(docs, return_inverse=True)
            return unique, np.bincount(inverse, weights=tfs).astype(np.float32)
        result: tuple[Any, Any] | None = None
        for term in query.terms:
            found = self._postings(term, alive)
            if found is None:
                return None
            if result is None:
                result = found
                continue
            common, left, right = np.intersect1d(result[0], found[0], assume_unique=True, return_indices=True)
            if common.size == 0:
                return None
            result = (common, np.minimum(result[1][left], found[1][right]))
        return result

    def search(
        self,
        queries: Sequence[KeywordQuery],
        limit: int,
        *,
        feedback_docs: int = 3,
        feedback_terms: int = 10,
        feedback_weight: float = 0.2,
        coordination: float = 0.1,
    ) -> list[tuple[int, float]]:
        """Best `limit` memories as (seq, score), best first. Scores are BM25 summed over the
        keywords, times (1 + coordination x keywords matched), plus pseudo-relevance feedback:
        the most distinctive terms of the top `feedback_docs` documents, weighted down."""
        live = len(self._doc_of)
        if live == 0 or not queries:
            return []
        # Without dead documents no posting needs filtering.
        alive = np.frombuffer(self._alive, dtype=np.uint8).view(bool) if self.dead else None
        if self._norm is None:
            lengths = np.frombuffer(self._lengths, dtype=np.float32)
            average = max(self._live_length / live, 1.0)
            self._norm = (self.k1 * (1 - self.b + self.b * lengths / average)).astype(np.float32)
        norm = self._norm
        scores = np.zeros(len(self._seqs), dtype=np.float32)
        matched = np.zeros(len(self._seqs), dtype=np.float32)
        for query in queries:
            found = self._match(query, alive)
            if found is None:
                continue
            docs, tfs = found
            idf = query.weight * math.log(1 + (live - docs.size + 0.5) / (docs.size + 0.5))
            scores[docs] += idf * tfs * (self.k1 + 1) / (tfs + norm[docs])
            matched[docs] += query.weight
        if coordination:
            scores *= 1 + coordination * matched
        if feedback_docs and feedback_terms:
            self._feedback(scores, alive, norm, live, queries, feedback_docs, feedback_terms, feedback_weight)
        return self._top(scores, limit)

    def _feedback(
        self,
        scores: Any,
        alive: Any,
        norm: Any,
        live: int,
        queries: Sequence[KeywordQuery],
        docs: int,
        terms: int,
        weight: float,
    ) -> None:
        top = self._top(scores, docs)
        if not top:
            return
        forward = np.frombuffer(self._forward, dtype=np.int32)
        starts = self._forward_start
        tids = np.concatenate([forward[starts[self._doc_of[seq]] : starts[self._doc_of[seq] + 1]] for seq, _ in top])
        unique, counts = np.unique(tids, return_counts=True)
        sizes = np.frombuffer(self._sizes, dtype=np.int32)[unique].astype(np.float32)
        # A term seen in several top documents, and rare elsewhere, says most about the topic.
        value = counts * np.log(1 + (live - sizes + 0.5) / (sizes + 0.5))
        value[sizes < 2] = 0
        used = {self._term_ids[t] for q in queries for t in q.terms if t in self._term_ids}
        extra = np.zeros_like(scores)
        added = 0
        for position in np.argsort(-value)[: terms + len(used)]:
            tid = int(unique[position])
            if value[position] <= 0:
                break
            if tid in used:
                continue
            found = self._postings(self._terms[tid], alive)
            if found is None:
                continue
            docs_, tfs = found
            idf = math.log(1 + (live - docs_.size + 0.5) / (docs_.size + 0.5))
            extra[docs_] += idf * tfs * (self.k1 + 1) / (tfs + norm[docs_])
            added += 1
            if added >= terms:
                break
        scores += weight * extra

    def _top(self, scores: Any, limit: int) -> list[tuple[int, float]]:
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > limit:
            part = np.argpartition(-scores[candidates], limit - 1)[:limit]
            candidates = candidates[part]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [(int(self._seqs[d]), float(scores[d])) for d in order]

    def add_many(self, items: Iterable[tuple[int, Sequence[str]]]) -> None:
        for seq, terms in items:
            self.add(seq, terms)
