"""Memories' embedding vectors, quantised, searched in process.

A vector is stored (in the database and here) as int8 codes with one float32 scale per vector:
`encode` and `decode` are the only places that know the layout. `VectorIndex` holds the vectors of
one model and answers cosine similarity for a query vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["VectorIndex", "decode", "encode"]


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
        self.model_id = model_id
        self.dim = dim
        self._rows: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, seq: object) -> bool:
        return seq in self._rows

    def add_many(self, items: Iterable[tuple[int, bytes]]) -> None:
        """Add or replace vectors given as (seq, blob from `encode`)."""
        for seq, blob in items:
            self._rows[seq] = decode(blob, self.dim)

    def remove(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self._rows.pop(seq, None)

    def search(self, query: Any, limit: int) -> list[tuple[int, float]]:
        """The `limit` memories most similar to the (L2-normalised) query, as (seq, cosine), best first."""
        if not self._rows or limit <= 0:
            return []
        seqs = list(self._rows)
        matrix = np.stack([self._rows[s] for s in seqs])
        scores = matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(seqs[i], float(scores[i])) for i in order.tolist()]

    def scores(self, query: Any, seqs: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of the query to each of `seqs` that has a vector."""
        q = np.asarray(query, dtype=np.float32)
        return {s: float(self._rows[s] @ q) for s in seqs if s in self._rows}
