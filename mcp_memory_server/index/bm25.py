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
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text.keyword_query import KeywordQuery
from .postings import Forward, Postings
from .vocabulary import Vocabulary

__all__ = ["Bm25Index", "KeywordQuery"]

_MAX_PREFIX_TERMS = 64


class Bm25Index:
    """Postings per term (doc numbers and term frequencies) with a forward index for feedback.
    Doc numbers are internal; `seqs[doc]` is the memory. Replaced or deleted docs are marked dead
    and dropped at the next compaction.

    Documents added before `freeze` (the bulk build; the first search freezes) go into compact
    postings (`postings.Postings`); later ones into small arrays per term, until there are
    enough of them for the store to rebuild the index (`needs_compaction`)."""

    def __init__(self, k1: float = 0.9, b: float = 0.4, b_cjk: float | None = None) -> None:
        self.k1 = k1
        self.b = b
        self.b_cjk = b if b_cjk is None else b_cjk
        self.clear()

    def clear(self) -> None:
        """Drop every document, freeing the memory even while something still refers to the index."""
        self._vocabulary = Vocabulary()
        self._forward = Forward()
        self._base: Postings | None = None
        self._tail: dict[int, tuple[array[int], array[int]]] = {}  # after the base: tid -> docs, tfs
        self._tail_docs = 0
        self._sizes = array("i")  # per term: postings, dead ones included (a cheap document frequency)
        self._seqs = array("q")
        self._lengths = array("f")
        self._cjk_share = array("f")  # per doc: the share of its terms that are CJK
        self._alive = bytearray()
        # seq -> doc: docs 0 to `_rising` have rising seqs (the bulk build reads memories in seq
        # order) and are found by bisection in `_seqs`; later docs are in `_doc_of`.
        self._rising = 0
        self._doc_of: dict[int, int] = {}
        self._live = 0
        self._live_length: float = 0.0
        self._norm: Any = None  # BM25 length normalisation per doc, until the next change

    def __len__(self) -> int:
        return self._live

    @property
    def dead(self) -> int:
        return len(self._seqs) - self._live

    def add(self, seq: int, text: str) -> None:
        """Index a memory's terms (separated by whitespace), replacing what was indexed for it."""
        self.add_many([(seq, text)])

    def add_many(self, items: Sequence[tuple[int, str]]) -> None:
        """Index memories given as (seq, their terms separated by whitespace), replacing what was
        indexed for them before."""
        if not items:
            return
        self._norm = None
        batch = self._vocabulary.analyse([text for _, text in items])
        first = len(self._seqs)
        self._seqs.extend(seq for seq, _ in items)
        self._lengths.extend(batch.lengths.tolist())
        self._cjk_share.extend((batch.cjk / np.maximum(batch.lengths, 1)).tolist())
        self._alive.extend(b"\x01" * len(items))
        self._live_length += float(batch.lengths.sum())
        for doc, (seq, _) in enumerate(items, first):
            self.remove(seq)
            if doc == self._rising and (doc == 0 or seq > self._seqs[doc - 1]):
                self._rising += 1
            else:
                self._doc_of[seq] = doc
            self._live += 1
        self._forward.append(batch.distinct, batch.tids, batch.tfs)
        if self._base is not None:
            self._add_to_tail(first, batch)

    def _add_to_tail(self, first: int, batch: Any) -> None:
        if len(self._sizes) < len(self._vocabulary):
            self._sizes.frombytes(bytes(4 * (len(self._vocabulary) - len(self._sizes))))
        docs = np.repeat(np.arange(first, first + len(batch.distinct)), batch.distinct).tolist()
        for doc, tid, tf in zip(docs, batch.tids.tolist(), batch.tfs.tolist(), strict=True):
            found = self._tail.get(tid)
            if found is None:
                found = self._tail[tid] = (array("i"), array("B"))
            found[0].append(doc)
            found[1].append(tf)
            self._sizes[tid] += 1
        self._tail_docs += len(batch.distinct)

    def freeze(self) -> None:
        """Build the compact postings of every document added so far (the first search does)."""
        if self._base is None:
            self._base = Postings.build(self._forward, len(self._vocabulary))
            self._sizes = array("i", self._base.counts.tobytes())

    def remove(self, seq: int) -> None:
        doc = self._doc_of.pop(seq, None)
        if doc is None:
            at = bisect.bisect_left(self._seqs, seq, 0, self._rising)
            doc = at if at < self._rising and self._seqs[at] == seq and self._alive[at] else None
        if doc is not None:
            self._norm = None
            self._alive[doc] = 0
            self._live -= 1
            self._live_length -= self._lengths[doc]

    def needs_compaction(self, incoming: int = 0) -> bool:
        """Many dead documents, or many added (or about to be: `incoming`) since the compact
        postings were built."""
        return any(n > 1000 and n > self._live // 4 for n in (self.dead, self._tail_docs + incoming))

    def document_frequencies(self, queries: Sequence[KeywordQuery]) -> list[int]:
        """How many memories hold each keyword: the rarity recall chooses and weights query terms
        by. Cheap (one vocabulary lookup per term, no postings read); an upper bound where a phrase's
        terms occur apart or where replaced documents are not yet compacted."""
        self.freeze()
        vocabulary, sizes, live = self._vocabulary, self._sizes, self._live
        out: list[int] = []
        for query in queries:
            if query.prefix and len(query.terms) == 1:
                count = sum(sizes[t] for t in vocabulary.prefixed(query.terms[0], _MAX_PREFIX_TERMS))
            else:
                count = live
                for term in query.terms:
                    tid = vocabulary.get(term)
                    count = min(count, sizes[tid]) if tid is not None and tid < len(sizes) else 0
            out.append(min(count, live))
        return out

    def _postings(self, tid: int | None, alive: Any) -> tuple[Any, Any] | None:
        if tid is None:
            return None
        base = self._base
        assert base is not None
        if tid < base.terms:
            docs, tfs = base.get(tid)
        else:
            docs, tfs = _EMPTY_DOCS, _EMPTY_TFS
        tail = self._tail.get(tid)
        if tail is not None:
            docs = np.concatenate([docs, np.frombuffer(tail[0], dtype=np.int32)])
            tfs = np.concatenate([tfs, np.frombuffer(tail[1], dtype=np.uint8)])
        tfs = tfs.astype(np.float32)
        if alive is None:
            return docs, tfs
        keep = alive[docs]
        return (docs, tfs) if keep.all() else (docs[keep], tfs[keep])

    def _match(self, query: KeywordQuery, alive: Any) -> tuple[Any, Any] | None:
        """Docs matching one keyword and its frequency in each (a phrase counts its rarest term)."""
        vocabulary = self._vocabulary
        if query.prefix and len(query.terms) == 1:
            tids = vocabulary.prefixed(query.terms[0], _MAX_PREFIX_TERMS)
            parts = [p for p in (self._postings(t, alive) for t in tids) if p is not None]
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
            posting = self._postings(vocabulary.get(term), alive)
            if posting is None:
                return None
            if result is None:
                result = posting
                continue
            common, left, right = np.intersect1d(result[0], posting[0], assume_unique=True, return_indices=True)
            if common.size == 0:
                return None
            result = (common, np.minimum(result[1][left], posting[1][right]))
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
        rarity: float = 1.0,
    ) -> list[tuple[int, float]]:
        """Best `limit` memories as (seq, score), best first. Scores are BM25 summed over the
        keywords, times (1 + coordination x keywords matched), plus pseudo-relevance feedback:
        the most distinctive terms of the top `feedback_docs` documents, weighted down, added to
        the memories that match a keyword (feedback alone never makes a memory a candidate). Each
        keyword's idf is raised to the power `rarity`: above 1, a rare word outweighs several
        common ones (a long query's generic words cannot outvote the one name it shares)."""
        live = self._live
        if live == 0 or not queries:
            return []
        self.freeze()
        # Without dead documents no posting needs filtering.
        alive = np.frombuffer(self._alive, dtype=np.uint8).view(bool) if self.dead else None
        if self._norm is None:
            self._norm = self._length_norm(live)
        norm = self._norm
        scores = np.zeros(len(self._seqs), dtype=np.float32)
        matched = np.zeros(len(self._seqs), dtype=np.float32)
        for query in queries:
            found = self._match(query, alive)
            if found is None:
                continue
            docs, tfs = found
            idf = query.weight * math.log(1 + (live - docs.size + 0.5) / (docs.size + 0.5)) ** rarity
            scores[docs] += idf * tfs * (self.k1 + 1) / (tfs + norm[docs])
            matched[docs] += query.weight
        if coordination:
            scores *= 1 + coordination * matched
        if feedback_docs and feedback_terms:
            self._feedback(scores, matched, alive, norm, live, queries, feedback_docs, feedback_terms, feedback_weight)
        return self._top(scores, limit)

    def _length_norm(self, live: int) -> Any:
        """k1 x BM25's length normalisation per doc. Chinese text is indexed as overlapping
        character bigrams and single characters, so a long Chinese text matches a query's
        characters by chance far more often than a long English one matches its words: CJK text
        gets the stronger normalisation `b_cjk`, mixed text a blend by its share of CJK terms."""
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        share = np.frombuffer(self._cjk_share, dtype=np.float32)
        b = self.b + (self.b_cjk - self.b) * share
        average = max(self._live_length / live, 1.0)
        return (self.k1 * (1 - b + b * lengths / average)).astype(np.float32)

    def _feedback(
        self,
        scores: Any,
        matched: Any,
        alive: Any,
        norm: Any,
        live: int,
        queries: Sequence[KeywordQuery],
        docs: int,
        terms: int,
        weight: float,
    ) -> None:
        top = self._top_docs(scores, docs)
        if not top.size:
            return
        tids = np.concatenate([self._forward.get(doc) for doc in top.tolist()])
        unique, counts = np.unique(tids, return_counts=True)
        sizes = np.frombuffer(self._sizes, dtype=np.int32)[unique].astype(np.float32)
        # A term seen in several top documents, and rare elsewhere, says most about the topic.
        value = counts * np.log(1 + (live - sizes + 0.5) / (sizes + 0.5))
        value[sizes < 2] = 0
        vocabulary = self._vocabulary
        used = {tid for q in queries for t in q.terms if (tid := vocabulary.get(t)) is not None}
        extra = np.zeros_like(scores)
        added = 0
        for position in np.argsort(-value)[: terms + len(used)]:
            tid = int(unique[position])
            if value[position] <= 0:
                break
            if tid in used:
                continue
            found = self._postings(tid, alive)
            if found is None:
                continue
            docs_, tfs = found
            idf = math.log(1 + (live - docs_.size + 0.5) / (docs_.size + 0.5))
            extra[docs_] += idf * tfs * (self.k1 + 1) / (tfs + norm[docs_])
            added += 1
            if added >= terms:
                break
        # Feedback reorders what the query's own words found; it never brings in a memory that
        # holds none of them (a word common in the store would otherwise match everything).
        scores += weight * np.where(matched > 0, extra, 0.0)

    def _top(self, scores: Any, limit: int) -> list[tuple[int, float]]:
        return [(self._seqs[d], float(scores[d])) for d in self._top_docs(scores, limit).tolist()]

    @staticmethod
    def _top_docs(scores: Any, limit: int) -> Any:
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > limit:
            part = np.argpartition(-scores[candidates], limit - 1)[:limit]
            candidates = candidates[part]
        return candidates[np.argsort(-scores[candidates], kind="stable")]


_EMPTY_DOCS = np.zeros(0, dtype=np.int64)
_EMPTY_TFS = np.zeros(0, dtype=np.uint8)
