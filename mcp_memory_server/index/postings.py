"""Storage for the BM25 index: documents' terms (the forward index) and postings per term.

Everything lives in a few numpy arrays rather than in one small array per term: at 100,000
memories there are 8 million (document, term) pairs, and a small array per term costs 64 bytes
of overhead and scatters the heap as it grows.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["Forward", "Postings"]

_BLOCK_BITS = 16


class Forward:
    """Per document, its distinct term ids (for feedback) and, until the postings are built, their
    frequencies. Each document's ids are sorted and stored as one-byte gaps; gaps of 255 and over
    are 255 there and the gap itself is kept aside (about a tenth of them). Stored in chunks, so
    that growing never copies (and briefly doubles) one big array; small additions gather in an
    open chunk."""

    _OPEN_LIMIT = 1 << 16

    def __init__(self) -> None:
        self._starts = array("q", [0])  # per doc, offset of its first entry
        self._big_starts = array("q", [0])  # per doc, offset of its first gap kept aside
        self._chunks: list[tuple[Any, Any, Any]] = []  # gaps (uint8), big gaps (int32), tfs (uint8)
        self._chunk_docs: list[int] = []  # first doc of each chunk
        self._open = (array("B"), array("i"), array("B"))
        self._open_doc = 0
        self.keep_tfs = True

    def __len__(self) -> int:
        return len(self._starts) - 1

    def append(self, distinct: Any, tids: Any, tfs: Any) -> None:
        """Add documents with `distinct` entries each; their term ids (ascending within each
        document) and frequencies concatenated."""
        first = len(self)
        ends = np.cumsum(distinct)
        gaps = tids.astype(np.int64)
        gaps[1:] -= gaps[:-1].copy()
        heads = (ends - distinct)[distinct > 0]
        gaps[heads] = tids[heads]
        big = gaps >= 255
        doc_of = np.repeat(np.arange(len(distinct)), distinct)
        self._starts.extend((ends + self._starts[-1]).tolist())
        bigs_per_doc = np.bincount(doc_of[big], minlength=len(distinct))
        self._big_starts.extend((np.cumsum(bigs_per_doc) + self._big_starts[-1]).tolist())
        small = np.where(big, 255, gaps).astype(np.uint8)
        bigs = gaps[big].astype(np.int32)
        tfs = np.ascontiguousarray(tfs, dtype=np.uint8) if self.keep_tfs else np.zeros(0, dtype=np.uint8)
        if len(tids) + len(self._open[0]) <= self._OPEN_LIMIT:
            if not self._open[0]:
                self._open_doc = first
            for part, values in zip(self._open, (small, bigs, tfs), strict=True):
                part.frombytes(values.tobytes())
            return
        self._close()
        self._chunks.append((small, bigs, tfs))
        self._chunk_docs.append(first)

    def _close(self) -> None:
        if self._open[0]:
            gaps, bigs, tfs = self._open
            self._chunks.append(
                (
                    np.frombuffer(gaps, dtype=np.uint8).copy(),
                    np.frombuffer(bigs, dtype=np.int32).copy(),
                    np.frombuffer(tfs, dtype=np.uint8).copy(),
                )
            )
            self._chunk_docs.append(self._open_doc)
            self._open = (array("B"), array("i"), array("B"))

    def _chunk_of(self, doc: int) -> tuple[Any, Any, int]:
        """The chunk holding `doc`: gaps, big gaps and its first doc."""
        if self._open[0] and doc >= self._open_doc:
            gaps, bigs, _ = self._open
            return np.frombuffer(gaps, dtype=np.uint8), np.frombuffer(bigs, dtype=np.int32), self._open_doc
        n = bisect.bisect_right(self._chunk_docs, doc) - 1
        return self._chunks[n][0], self._chunks[n][1], self._chunk_docs[n]

    def get(self, doc: int) -> Any:
        """The document's distinct term ids, ascending."""
        start, end = self._starts[doc], self._starts[doc + 1]
        if start == end:
            return np.zeros(0, dtype=np.int64)
        gaps, bigs, first = self._chunk_of(doc)
        base, big_base = self._starts[first], self._big_starts[first]
        values = gaps[start - base : end - base].astype(np.int64)
        big_start, big_end = self._big_starts[doc], self._big_starts[doc + 1]
        if big_end > big_start:
            values[values == 255] = bigs[big_start - big_base : big_end - big_base]
        return np.cumsum(values)

    def drain(self, keep: bool = False) -> Iterator[tuple[Any, Any, Any]]:
        """Per chunk (document of each entry, term ids, frequencies), in document order; unless
        `keep`, the frequencies leave the forward index as they are handed out."""
        self._close()
        if not keep:
            self.keep_tfs = False
        starts = np.frombuffer(self._starts, dtype=np.int64)
        bounds = [*self._chunk_docs, len(self)]
        for n, (gaps, bigs, tfs) in enumerate(self._chunks):
            first, last = bounds[n], bounds[n + 1]
            distinct = np.diff(starts[first : last + 1])
            values = gaps.astype(np.int64)
            values[values == 255] = bigs
            total = np.cumsum(values)
            heads = (np.cumsum(distinct) - distinct)[distinct > 0]
            before = np.zeros(len(heads), dtype=np.int64)
            before[1:] = total[heads[1:] - 1]
            tids = (total - np.repeat(before, distinct[distinct > 0])).astype(np.int32)
            docs = np.repeat(np.arange(first, last, dtype=np.int32), distinct)
            if not keep:
                self._chunks[n] = (gaps, bigs, None)
            yield docs, tids, tfs


class Postings:
    """Per term, the documents it occurs in (ascending) and its frequency in each, in one array
    each (compressed sparse rows), built once from the forward index.

    Documents are numbered in blocks of 65,536: the arrays hold a document's number within its
    block (two bytes instead of four), and `splits[b - 1][term]` says how many of the term's
    postings come before block b. `get` turns them back into 64-bit document numbers, which
    numpy indexes with faster than 32-bit ones."""

    def __init__(self, starts: Any, low: Any, tfs: Any, splits: list[Any]) -> None:
        self.starts = array("q", starts.tobytes())  # scalar reads from an array are fast
        self.counts = np.diff(starts).astype(np.int32)
        self.low = low
        self.tfs = tfs
        self.splits = [array("i", split.astype(np.int32).tobytes()) for split in splits]
        self.terms = len(starts) - 1

    def get(self, tid: int) -> tuple[Any, Any]:
        """The term's documents (int64) and frequencies (uint8)."""
        start, end = self.starts[tid], self.starts[tid + 1]
        docs = self.low[start:end].astype(np.int64)
        block, since = 0, 0  # the block of the postings from `since` on
        for later, split in enumerate(self.splits, 1):
            cut = split[tid]
            if cut >= end - start:
                break
            if block:
                docs[since:cut] += block << _BLOCK_BITS
            block, since = later, cut
        if block:
            docs[since:] += block << _BLOCK_BITS
        return docs, self.tfs[start:end]

    @classmethod
    def build(cls, forward: Forward, terms: int) -> Postings:
        """Transpose the forward index, whose term frequencies it takes over."""
        counts = np.zeros(terms, dtype=np.int64)
        for _, tids, _ in forward.drain(keep=True):
            counts += np.bincount(tids, minlength=terms)
        starts = np.zeros(terms + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        del counts
        low = np.empty(int(starts[-1]), dtype=np.uint16)
        freqs = np.empty(int(starts[-1]), dtype=np.uint8)
        fill = starts[:-1].copy()
        splits: list[Any] = []
        for docs, tids, tfs in forward.drain():
            blocks = docs >> _BLOCK_BITS
            for part in np.split(np.arange(len(docs)), np.flatnonzero(np.diff(blocks)) + 1):
                if not part.size:
                    continue
                while len(splits) < blocks[part[0]]:  # the first posting in a new block
                    splits.append(fill - starts[:-1])
                # A stable sort by term keeps each term's documents in ascending order.
                order = part[np.argsort(tids[part], kind="stable")]
                sorted_tids = tids[order]
                rank = np.arange(len(order)) - np.searchsorted(sorted_tids, sorted_tids, side="left")
                where = fill[sorted_tids] + rank
                low[where] = docs[order] & ((1 << _BLOCK_BITS) - 1)
                freqs[where] = tfs[order]
                fill += np.bincount(sorted_tids, minlength=terms)
        return cls(starts, low, freqs, splits)
