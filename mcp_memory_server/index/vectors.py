"""Memories' embedding vectors, quantised, searched in process.

A vector is stored (in the database and here) as int8 codes with one float32 scale per vector:
`encode` and `decode` are the only places that know the layout. `VectorIndex` holds the vectors of
one model and answers cosine similarity for a query vector.

How the index is laid out and searched (numbers in BENCHMARKS.md, "Semantic stage"):

- One contiguous int8 matrix of codes, a float32 scale per row and the row's seq, grown by half
  again when full; a dict maps seq to row. A removed row is filled with the last row, so the rows
  stay dense with no tombstones to skip or compact; the arrays shrink when three quarters are unused.
  100k vectors of 384 values take 42 MiB with the coarse pass's bits (float32: 146 MiB).
- Up to `EXACT_ROWS` vectors, search is exact: `np.einsum` multiplies the int8 codes with the
  float32 query, widening them a buffer at a time (numpy has no int8 matrix product). Not `@`:
  that is OpenBLAS, whose second thread waits for a core on a busy 2-core machine and turned a
  0.2 ms product into 13-30 ms in measurements; einsum stays on the calling thread.
- Above that, a coarse pass picks candidates and only they are scored exactly. Each vector also
  keeps one bit per dimension: on which side it lies of each of `dim` random orthogonal
  hyperplanes through the collection's mean vector; the query's bits are its sides of the same
  hyperplanes through the origin. The rows whose bits differ least from the query's (Hamming
  distance, `np.bitwise_count` over uint64 words) are rescored from their int8 codes. Measured on
  real multilingual-e5 vectors at 100k (recall@10 against exact float32 search, 2,000 candidates
  rescored in float32): signs of the raw values 0.90, centred on the mean 0.965, centred and
  rotated with the query uncentred 0.977-0.986 by the rotation's seed; as kept (int8 rescoring), 0.966. Centring
  matters because these models' vectors share a large common component (their mean has norm
  0.9); the query stays uncentred because the ranking is by q.x = q.(x - mean) + a constant.
- Across scripts (text/scripts.py): each vector belongs to a script group (Latin, CJK, or a mix
  of both), and the index keeps every group's sum of vectors. A multilingual model scores texts
  in the query's own script higher than equally relevant texts in another: a Chinese question's
  cosine to the right English memory was 0.81 at the median while unrelated Chinese memories
  reached 0.89, so the English memory was never among the nearest 50. Given the query's group, a
  search adds to each other group's cosines the difference of the query's mean cosine with its
  own group and with that group (q.mean_own - q.mean_other): what a memory scores above the
  typical memory of its script is compared across scripts. That difference was 0.10 at the median
  for Chinese questions and 0.00 for English ones. The fixed `prior` (between Latin and CJK, half
  of it between either and a mix) is the least offset: a question and its answer in two
  languages score lower than in one whatever the means say (measured on hand-written pairs, 0.07).
  With few memories in a group the mean says little, so the offset leans towards the prior
  (weighted as `PRIOR_WEIGHT` memories). Above `EXACT_ROWS` the coarse pass picks candidates in
  each group, so another script's memories are rescored too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..text.scripts import script_distance

__all__ = ["CANDIDATES", "EXACT_ROWS", "GROUPS", "PRIOR_WEIGHT", "VectorIndex", "decode", "encode"]

# Up to this many vectors a search scores every one exactly (about 0.2 us of CPU per vector at 384
# dimensions: 2 ms at 10k, when the coarse pass and rescoring take about as long).
EXACT_ROWS = 10_000
# Candidates the coarse pass hands to exact rescoring: at least this many, and 40 per hit asked
# for; recall@10 against exact search stays above 0.95 on real multilingual-e5 vectors at 100k.
CANDIDATES = 2_000
# The coarse pass's hyperplanes are drawn from a fixed seed, so every process builds the same ones.
_SEED = 1
# Script groups (text/scripts.py: LATIN 0, CJK 1, MIXED 2): a vector's group is below this.
GROUPS = 3
# How many memories of a group its mean cosine needs to count as much as the fixed prior offset.
PRIOR_WEIGHT = 20
_PER_HIT = 40
_CHUNK = 4_096  # rows copied or decoded at a time: temporary arrays of a few MB
_FIRST_CAPACITY = 1_024


def encode(vectors: Any) -> list[bytes]:
    """Each row of a float32 (n, dim) array as bytes: dim int8 codes, then its float32 scale."""
    matrix = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(matrix).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    codes = np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8)
    return [codes[i].tobytes() + scale[i : i + 1].astype("<f4").tobytes() for i in range(len(matrix))]


def decode(blob: bytes, dim: int) -> Any:
    """The float32 vector `encode` wrote; ValueError when the blob does not hold `dim` values."""
    if len(blob) != dim + 4:
        raise ValueError(f"a vector of {dim} dimensions takes {dim + 4} bytes, not {len(blob)}")
    codes = np.frombuffer(blob, dtype=np.int8, count=dim).astype(np.float32)
    return codes * np.frombuffer(blob, dtype="<f4", offset=dim)[0]


class VectorIndex:
    """The vectors of one model by memory seq. Not thread-safe: the store calls it from the event
    loop only."""

    def __init__(self, model_id: str, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"a vector index needs a positive dimension, not {dim}")
        self.model_id = model_id
        self.dim = dim
        self._words = -(-dim // 64)  # uint64 words of sign bits per vector
        self._row: dict[int, int] = {}
        self._n = 0
        self._codes = np.zeros((0, dim), dtype=np.int8)
        self._scales = np.zeros(0, dtype=np.float32)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._groups = np.zeros(0, dtype=np.int8)
        # Each script group's sum of vectors and count, kept as vectors come and go (float64, so
        # that additions and removals do not drift).
        self._sums = np.zeros((GROUPS, dim), dtype=np.float64)
        self._counts = np.zeros(GROUPS, dtype=np.int64)
        # The coarse pass's sign bits, one array of words per bit position (word w of every vector
        # is contiguous, so the pass reads each array straight through); built when the index first
        # outgrows EXACT_ROWS and kept from then on. `_center` is the mean vector they are taken
        # around, fixed when they are built. The scratch arrays are reused by every search.
        self._bits: Any = None
        self._center: Any = None
        self._planes: Any = None
        self._scratch: tuple[Any, Any, Any] | None = None

    def __len__(self) -> int:
        return self._n

    def __contains__(self, seq: object) -> bool:
        return seq in self._row

    @property
    def nbytes(self) -> int:
        """The bytes its arrays hold (the seq map aside)."""
        extra = [] if self._bits is None else [self._bits, *(self._scratch or ())]
        return int(sum(a.nbytes for a in (self._codes, self._scales, self._seqs, self._groups, *extra)))

    def add_many(self, items: Iterable[tuple[int, bytes, int]]) -> None:
        """Add or replace vectors given as (seq, blob from `encode`, script group). A blob of the
        wrong size or a group outside 0..GROUPS-1 is a ValueError and nothing is added."""
        width = self.dim + 4
        latest: dict[int, tuple[bytes, int]] = {}  # the last of several vectors for one seq wins
        for seq, blob, group in items:
            if len(blob) != width:
                raise ValueError(
                    f"the vector of memory {seq} takes {len(blob)} bytes, not {width} ({self.dim} dimensions)"
                )
            if not 0 <= group < GROUPS:
                raise ValueError(f"the vector of memory {seq} has script group {group}, not 0 to {GROUPS - 1}")
            latest[int(seq)] = (blob, int(group))
        replaced = [self._row[seq] for seq in latest if seq in self._row]
        if replaced:
            self._subtract(np.asarray(replaced, dtype=np.int64))
        fresh = [seq for seq in latest if seq not in self._row]
        self._reserve(self._n + len(fresh))
        for seq in fresh:
            self._row[seq] = self._n
            self._seqs[self._n] = seq
            self._n += 1
        pairs = list(latest.items())
        # A chunk at a time, so that a store loading 100k vectors at once needs 2 MB of temporary
        # arrays rather than two copies of all of them (which stayed in the process's RSS).
        for start in range(0, len(pairs), _CHUNK):
            part = pairs[start : start + _CHUNK]
            raw = np.frombuffer(b"".join(blob for _, (blob, _) in part), dtype=np.uint8).reshape(len(part), width)
            rows = np.fromiter((self._row[seq] for seq, _ in part), dtype=np.int64, count=len(part))
            self._codes[rows] = raw[:, : self.dim].view(np.int8)
            self._scales[rows] = np.ascontiguousarray(raw[:, self.dim :]).view("<f4").reshape(-1)
            self._groups[rows] = np.fromiter((group for _, (_, group) in part), dtype=np.int8, count=len(part))
            self._add_to_sums(rows, 1)
            if self._bits is not None:
                self._bits[:, rows] = self._sign_bits(rows)
        if self._bits is None and self._n > EXACT_ROWS:
            self._build_bits()

    def remove(self, seqs: Iterable[int]) -> None:
        gone = list(dict.fromkeys(seq for seq in seqs if seq in self._row))
        if gone:  # out of their groups' sums at once, before any row moves
            self._subtract(np.fromiter((self._row[seq] for seq in gone), dtype=np.int64, count=len(gone)))
        for seq in gone:
            row = self._row.pop(seq)
            last = self._n - 1
            if row != last:  # the last row fills the hole, so the rows stay dense
                moved = int(self._seqs[last])
                self._codes[row] = self._codes[last]
                self._scales[row] = self._scales[last]
                self._groups[row] = self._groups[last]
                self._seqs[row] = moved
                if self._bits is not None:
                    self._bits[:, row] = self._bits[:, last]
                self._row[moved] = row
            self._n = last
        if len(self._seqs) > _FIRST_CAPACITY and self._n < len(self._seqs) // 4:
            self._resize(max(_FIRST_CAPACITY, 2 * self._n))

    def search(self, query: Any, limit: int, script: int | None = None, prior: float = 0.0) -> list[tuple[int, float]]:
        """The `limit` memories most similar to the (L2-normalised) query, as (seq, cosine), best
        first. Given the query's script group, the cosines of other groups' vectors are offset
        (see the module's docstring; `prior` is the offset a group of no memories gets)."""
        q = self._query(query)
        if not self._n or limit <= 0:
            return []
        offsets = self._offsets(q, script, prior)
        if self._bits is None or self._n <= EXACT_ROWS:
            scores = np.einsum("ij,j->i", self._codes[: self._n], q) * self._scales[: self._n]
            if offsets is not None:
                scores += offsets[self._groups[: self._n]]
            rows = _top(scores, limit)
            return [(int(self._seqs[r]), float(scores[r])) for r in rows]
        count = max(CANDIDATES, _PER_HIT * limit)
        candidates = self._coarse(q, count, per_group=offsets is not None)
        scores = self._exact_rows(q, candidates)
        if offsets is not None:
            scores += offsets[self._groups[candidates]]
        best = _top(scores, limit)
        return [(int(self._seqs[candidates[i]]), float(scores[i])) for i in best]

    def scores(
        self, query: Any, seqs: Sequence[int], script: int | None = None, prior: float = 0.0
    ) -> dict[int, float]:
        """Cosine similarity of the query to each of `seqs` that has a vector, offset across script
        groups as `search` does."""
        q = self._query(query)
        known = [s for s in seqs if s in self._row]
        if not known:
            return {}
        rows = np.fromiter((self._row[s] for s in known), dtype=np.int64, count=len(known))
        values = self._exact_rows(q, rows)
        offsets = self._offsets(q, script, prior)
        if offsets is not None:
            values += offsets[self._groups[rows]]
        return {s: float(v) for s, v in zip(known, values.tolist(), strict=True)}

    def mean_score(self, query: Any, script: int | None = None, prior: float = 0.0) -> float:
        """The query's mean cosine with every vector of the index, offsets across scripts applied
        as `search` applies them: what it scores against the store at large (exact, from the
        groups' sums, whatever the index's size). 0 for an empty index."""
        if not self._n:
            return 0.0
        q = self._query(query)
        sums = np.einsum("gj,j->g", self._sums, q.astype(np.float64))
        offsets = self._offsets(q, script, prior)
        if offsets is not None:
            sums += offsets.astype(np.float64) * self._counts
        return float(sums.sum() / max(int(self._counts.sum()), 1))

    def groups_of(self, seqs: Sequence[int]) -> dict[int, int]:
        """The script group of each of `seqs` that has a vector."""
        return {s: int(self._groups[self._row[s]]) for s in seqs if s in self._row}

    def offsets(self, query: Any, script: int, prior: float = 0.0) -> list[float]:
        """What `search` adds to the cosines of each script group's vectors for this query."""
        found = self._offsets(self._query(query), script, prior)
        return [0.0] * GROUPS if found is None else [float(v) for v in found]

    # ---- internals -----------------------------------------------------------------------------

    def _query(self, query: Any) -> Any:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"a query vector of {q.shape[0]} dimensions for an index of {self.dim} ({self.model_id})")
        return q

    def _offsets(self, q: Any, script: int | None, prior: float) -> Any:
        """Per group, what to add to its cosines (float32, GROUPS long), or None when there is
        nothing to offset (no query group, or no vector outside it)."""
        if script is None:
            return None
        if not 0 <= script < GROUPS:
            raise ValueError(f"script group {script} is not 0 to {GROUPS - 1}")
        others = [g for g in range(GROUPS) if g != script and self._counts[g] > 0]
        if not others:
            return None
        own = int(self._counts[script])
        means = np.einsum("gj,j->g", self._sums, q.astype(np.float64)) / np.maximum(self._counts, 1)
        out = np.zeros(GROUPS, dtype=np.float32)
        for g in others:
            weight = min(own, int(self._counts[g]))
            measured = float(means[script] - means[g]) if own else 0.0
            expected = prior * script_distance(script, g)
            out[g] = max(expected, (weight * measured + PRIOR_WEIGHT * expected) / (weight + PRIOR_WEIGHT))
        return out

    def _add_to_sums(self, rows: Any, sign: int) -> None:
        vectors = self._codes[rows].astype(np.float64) * self._scales[rows, None]
        groups = self._groups[rows]
        for g in range(GROUPS):
            mine = groups == g
            n = int(np.count_nonzero(mine))
            if n:
                self._sums[g] += sign * vectors[mine].sum(axis=0)
                self._counts[g] += sign * n

    def _subtract(self, rows: Any) -> None:
        self._add_to_sums(rows, -1)
        self._sums[self._counts == 0] = 0.0  # an emptied group holds exact zeros, not rounding residue

    def _exact_rows(self, q: Any, rows: Any) -> Any:
        return np.einsum("ij,j->i", self._codes[rows], q) * self._scales[rows]

    def _coarse(self, q: Any, count: int, per_group: bool = False) -> Any:
        """The rows whose sign bits differ least from the query's, `count` of them (unordered), or
        `count` of each script group's rows when `per_group`."""
        if count >= self._n:
            return np.arange(self._n)
        query_bits = self._pack(np.einsum("ij,j->i", self._planes, q)[None, :] > 0)[:, 0]
        assert self._scratch is not None
        word, ones, distance = (a[: self._n] for a in self._scratch)
        # Whole columns at once: measured faster than cache-sized blocks at 100k rows.
        for k in range(self._words):
            np.bitwise_xor(self._bits[k, : self._n], query_bits[k], out=word)
            np.bitwise_count(word, out=ones)
            if k:
                np.add(distance, ones, out=distance)
            else:
                np.copyto(distance, ones)
        if not per_group or np.count_nonzero(self._counts) < 2:
            return self._closest(distance, count)
        groups = self._groups[: self._n]
        picked = []
        for g in range(GROUPS):
            rows = np.flatnonzero(groups == g)
            if len(rows):
                picked.append(rows if len(rows) <= count else rows[self._closest(distance[rows], count)])
        return np.concatenate(picked)

    def _closest(self, distance: Any, count: int) -> Any:
        """Indices of the `count` smallest distances (unordered). By counting (distances are small
        integers): half the time of np.argpartition at 100k; ties at the cut go to the earlier rows."""
        cut = int(np.searchsorted(np.cumsum(np.bincount(distance, minlength=self.dim + 1)), count))
        below = np.flatnonzero(distance < cut)
        return np.concatenate([below, np.flatnonzero(distance == cut)[: count - len(below)]])

    def _pack(self, above: Any) -> Any:
        """Sign bits of (n, dim) booleans as (words, n) uint64."""
        bits = np.packbits(above, axis=1)
        pad = self._words * 8 - bits.shape[1]
        if pad:
            bits = np.pad(bits, ((0, 0), (0, pad)))
        return np.ascontiguousarray(bits).view(np.uint64).T

    def _sign_bits(self, rows: Any) -> Any:
        vectors = self._codes[rows].astype(np.float32) * self._scales[rows, None] - self._center
        return self._pack(vectors @ self._planes.T > 0)

    def _build_bits(self) -> None:
        total = np.zeros(self.dim, dtype=np.float64)
        for start in range(0, self._n, _CHUNK):
            stop = min(start + _CHUNK, self._n)
            total += (self._codes[start:stop].astype(np.float32) * self._scales[start:stop, None]).sum(axis=0)
        self._center = (total / self._n).astype(np.float32)
        self._planes = _rotation(self.dim)
        self._bits = np.zeros((self._words, len(self._seqs)), dtype=np.uint64)
        self._scratch = _scratch(len(self._seqs))
        for start in range(0, self._n, _CHUNK):
            rows = np.arange(start, min(start + _CHUNK, self._n))
            self._bits[:, rows] = self._sign_bits(rows)

    def _reserve(self, needed: int) -> None:
        # Half again as much room as now, or exactly what a large batch needs (the vectors a store
        # loads at start arrive in one batch and fit without slack); amortised O(1) per vector.
        if needed > len(self._seqs):
            self._resize(max(_FIRST_CAPACITY, needed, len(self._seqs) * 3 // 2))

    def _resize(self, capacity: int) -> None:
        n = self._n
        codes = np.zeros((capacity, self.dim), dtype=np.int8)
        codes[:n] = self._codes[:n]
        scales = np.zeros(capacity, dtype=np.float32)
        scales[:n] = self._scales[:n]
        seqs = np.zeros(capacity, dtype=np.int64)
        seqs[:n] = self._seqs[:n]
        groups = np.zeros(capacity, dtype=np.int8)
        groups[:n] = self._groups[:n]
        self._codes, self._scales, self._seqs, self._groups = codes, scales, seqs, groups
        if self._bits is not None:
            bits = np.zeros((self._words, capacity), dtype=np.uint64)
            bits[:, :n] = self._bits[:, :n]
            self._bits = bits
            self._scratch = _scratch(capacity)


def _scratch(capacity: int) -> tuple[Any, Any, Any]:
    """The coarse pass's working arrays, one entry per row: a word of sign bits, its bit count,
    and the distance (11 bytes a row, allocated once rather than on every search)."""
    return np.empty(capacity, dtype=np.uint64), np.empty(capacity, dtype=np.uint8), np.empty(capacity, dtype=np.uint16)


def _rotation(dim: int) -> Any:
    """A random orthogonal (dim, dim) matrix, the same in every process: the product of `dim`
    reflections through random hyperplanes. Built with elementwise numpy only: LAPACK's QR runs
    on OpenBLAS threads, which on a busy 2-core machine took up to 2 s instead of 25 ms."""
    rng = np.random.default_rng(_SEED)
    matrix = np.eye(dim)
    for _ in range(dim):
        v = rng.standard_normal(dim)
        v /= np.sqrt(np.einsum("i,i->", v, v))
        matrix -= 2.0 * np.outer(np.einsum("ij,j->i", matrix, v), v)
    return matrix.astype(np.float32)


def _top(scores: Any, limit: int) -> Any:
    """Indices of the `limit` highest scores, best first (ties in index order)."""
    if limit < len(scores):
        part = np.argpartition(-scores, limit - 1)[:limit]
        return part[np.lexsort((part, -scores[part]))]
    return np.argsort(-scores, kind="stable")
