"""The store's in-memory vector index (index/vectors.py), kept in step with `memory_vectors`.

It holds the current vectors of one model only: a vector of another model, or one computed from
content its memory no longer has, is never loaded, so two models' scores are never compared and a
vector never describes old text. Like the BM25 index (store/live_index.py) it follows every
process's writes: a memory's change (the change log) makes it re-read that memory's vector, and
a batch of vectors written by any process carries a `written` number above every earlier one, so
a sync reads only what is new since it looked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio.to_thread

from .backend import Conn
from .rows import scalars
from .statements import Statements

if TYPE_CHECKING:
    from ..index.vectors import VectorIndex

__all__ = ["LiveVectors", "Nearest", "Neighbours", "PendingText", "VectorBounds", "VectorProgress"]

_BUILD_CHUNK = 2000
_CHANGED_CHUNK = 500


class PendingText(NamedTuple):
    """A memory without a current vector: what the embedding worker embeds and writes back."""

    seq: int
    content: str
    content_hash: str


class Nearest(NamedTuple):
    """A memory found by vector search: its seq and the cosine of its vector with the query's."""

    seq: int
    cosine: float


class Neighbours(NamedTuple):
    """What one query's vector says of the store (VectorOps.vector_neighbours)."""

    nearest: list[Nearest]  # the nearest memories, best first
    scores: dict[int, float]  # seq -> cosine of the other memories asked about that have a vector
    groups: dict[int, int]  # seq -> script group (text/scripts.py) of every memory above
    mean: float  # the query's mean cosine with every vector of the store


class VectorProgress(NamedTuple):
    """How many live memories of a namespace have a current vector of a model, of how many."""

    embedded: int
    total: int


class VectorBounds(NamedTuple):
    """The change log's newest and oldest change and the newest batch of vectors written."""

    change: int
    oldest: int
    written: int

    @classmethod
    def of(cls, row: Sequence[Any]) -> VectorBounds:
        return cls(int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))


class LiveVectors:
    """One namespace's vector index for one model, and the change and `written` numbers it reflects."""

    def __init__(self, namespace: str, statements: Statements) -> None:
        self._sql = statements
        self._namespace = namespace
        self.model: tuple[str, int] | None = None
        self.index: VectorIndex | None = None
        self.seen = VectorBounds(0, 0, 0)

    def use(self, model_id: str, dim: int) -> None:
        """Hold the vectors of this model from now on (another model's index is dropped at once)."""
        if self.model != (model_id, dim):
            self.model = (model_id, dim)
            self.index = None

    async def sync(self, conn: Conn, bounds: VectorBounds) -> VectorIndex | None:
        """The index brought up to date with everything committed up to `bounds` (just read)."""
        if self.model is None:
            return None
        index = self.index
        if index is None or bounds.oldest > self.seen.change + 1:  # never built, or the log was pruned past us
            self.index = None  # a stale index is never searched, even if the build below fails
            index = await self._build(conn, *self.model)
        else:
            await self._apply(conn, index, bounds)
        self.index = index
        self.seen = bounds
        return index

    async def _apply(self, conn: Conn, index: VectorIndex, bounds: VectorBounds) -> None:
        model, _ = self.model or ("", 0)
        ns = self._namespace
        if bounds.change > self.seen.change:  # memories changed or went away: their vectors are re-read
            changed = await scalars(conn, self._sql.changed_since, (self.seen.change, ns))
            for start in range(0, len(changed), _CHANGED_CHUNK):
                chunk = changed[start : start + _CHANGED_CHUNK]
                index.remove(chunk)
                rows = await conn.execute_fetchall(self._sql.vectors_of, (ns, model, self._sql.array(chunk)))
                index.add_many((int(seq), bytes(blob), int(script)) for seq, blob, script in rows)
        if bounds.written > self.seen.written:
            rows = await conn.execute_fetchall(self._sql.vectors_written_since, (ns, model, self.seen.written))
            index.add_many((int(seq), bytes(blob), int(script)) for seq, blob, script in rows)

    async def _build(self, conn: Conn, model: str, dim: int) -> VectorIndex:
        """Every current vector of the model, read in chunks and decoded in a worker thread."""
        index = await anyio.to_thread.run_sync(_new_index, model, dim)
        last = 0
        while True:
            rows = await conn.execute_fetchall(self._sql.vectors_after, (self._namespace, model, last, _BUILD_CHUNK))
            if not rows:
                break
            items = [(int(seq), bytes(blob), int(script)) for seq, blob, script in rows]
            last = items[-1][0]
            del rows
            await anyio.to_thread.run_sync(index.add_many, items)
        return index


def _new_index(model: str, dim: int) -> VectorIndex:
    """An empty index; its module (numpy) is imported in the worker thread, not at start-up."""
    from ..index.vectors import VectorIndex

    return VectorIndex(model, dim)
