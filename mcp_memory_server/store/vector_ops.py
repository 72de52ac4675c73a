"""The store's part for the semantic stage: embedding vectors written by the background worker
and searched by recall, through the in-memory index of store/live_vectors.py. `Store` takes these
methods from `VectorOps`; they use its connection, lock and statements."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..errors import StoreError
from ..text.scripts import script_of
from .backend import Backend, Conn
from .live_vectors import LiveVectors, Nearest, Neighbours, PendingText, VectorBounds, VectorProgress
from .rows import scalar, scalars
from .statements import Statements

__all__ = ["QUERY_VECTORS", "QueryEncoder", "VectorOps"]

# Query vectors kept per namespace (384 float32 values each with the bundled model: 96 KB in all).
QUERY_VECTORS = 64


class QueryEncoder(Protocol):
    """What embeds a recall's query for the store's vector search: the semantic stage
    (memory/embedding.py), attached by whoever runs it."""

    async def encode_query(self, text: str) -> tuple[str, object] | None:
        """(model id, the query's L2-normalised float32 vector), or None while no model is loaded."""
        ...


class VectorOps:
    """The vector methods of `Store` (see store/store.py for the attributes they use)."""

    if TYPE_CHECKING:
        namespace: str
        encoder: QueryEncoder | None
        _db: Backend
        _sql: Statements
        _lock: anyio.Lock
        _vectors: LiveVectors
        _vector_lock: anyio.Lock
        _query_vectors: OrderedDict[tuple[str, str], object]

        def _read(self) -> AbstractAsyncContextManager[Conn]: ...

    def use_vectors(self, model_id: str, dim: int) -> None:
        """Search the vectors of this model from now on (the semantic stage calls it once its model
        has loaded). Vectors of any other model are never loaded or compared."""
        self._vectors.use(model_id, dim)

    @property
    def vector_model(self) -> str | None:
        """The model whose vectors `vector_search` compares, or None before one is in use."""
        return self._vectors.model[0] if self._vectors.model is not None else None

    async def embed_query(self, text: str) -> object | None:
        """The query's vector for `vector_search` (float32, L2-normalised), computed in a worker
        thread by the attached encoder; None when the semantic stage is off, its model has not
        loaded (or failed to), or this store searches another model's vectors. Recall then stays
        keyword-only."""
        encoder = self.encoder
        if encoder is None or self._vectors.model is None:
            return None
        model = self._vectors.model[0]
        cached = self._query_vectors.get((model, text))
        if cached is not None:
            self._query_vectors.move_to_end((model, text))
            return cached
        encoded = await encoder.encode_query(text)
        if encoded is None or encoded[0] != model:
            return None
        vector: object = encoded[1]
        # A repeated query (a client asking again, a hook sending the same turn) is answered from
        # this namespace's own few recent query vectors: never another namespace's, whose queries
        # a cache hit's speed would otherwise reveal.
        self._query_vectors[(model, text)] = vector
        if len(self._query_vectors) > QUERY_VECTORS:
            self._query_vectors.popitem(last=False)
        return vector

    async def vector_search(
        self, query_vector: Any, limit: int, script: int | None = None, prior: float = 0.0
    ) -> list[Nearest]:
        """The `limit` memories of this namespace whose current vectors (of the model in use,
        computed from their present content) are nearest `query_vector`, as `Nearest` (seq,
        cosine) tuples, best first. Given the query's script group (text/scripts.py), other
        scripts' cosines are offset to compare with its own (index/vectors.py; `prior` for a
        group of few memories). Memories not embedded yet are absent; [] when no model is in use.
        The index follows every process's writes (one short read when nothing changed), as the
        keyword index does."""
        async with self._vector_lock:
            index = await self._synced_vectors()
            found = index.search(query_vector, limit, script, prior) if index is not None else []
        return [Nearest(seq, cosine) for seq, cosine in found]

    async def vector_neighbours(
        self, query_vector: Any, limit: int, also: Sequence[int] = (), script: int | None = None, prior: float = 0.0
    ) -> Neighbours:
        """In one pass under the vector lock, what recall's semantic part needs: the `limit`
        nearest memories (as `vector_search`), the cosines of the memories of `also` that have a
        current vector, every one's script group, and the query's mean cosine over all the
        store's vectors (offsets applied): what it scores against the store at large."""
        async with self._vector_lock:
            index = await self._synced_vectors()
            if index is None:
                return Neighbours([], {}, {}, 0.0)
            nearest = [Nearest(seq, cosine) for seq, cosine in index.search(query_vector, limit, script, prior)]
            near = {n.seq for n in nearest}
            scores = index.scores(query_vector, [seq for seq in also if seq not in near], script, prior)
            groups = index.groups_of([*near, *scores])
            mean = index.mean_score(query_vector, script, prior)
        return Neighbours(nearest, scores, groups, mean)

    async def vector_scores(
        self, query_vector: Any, seqs: Sequence[int], script: int | None = None, prior: float = 0.0
    ) -> dict[int, float]:
        """The cosine of `query_vector` with each of `seqs` that has a current vector, offset
        across scripts as `vector_search` does (the others are left out: recall scores them by
        keywords alone)."""
        async with self._vector_lock:
            index = await self._synced_vectors()
            return index.scores(query_vector, seqs, script, prior) if index is not None else {}

    async def vector_count(self) -> int:
        """How many memories the in-memory vector index holds (current vectors of the model in use)."""
        async with self._vector_lock:
            index = await self._synced_vectors()
            return len(index) if index is not None else 0

    async def _synced_vectors(self) -> Any:
        if self._vectors.model is None:
            return None
        async with self._read() as conn:
            peeked = self._db.peek(self._sql.vector_bounds, ())
            rows = peeked if peeked is not None else list(await conn.execute_fetchall(self._sql.vector_bounds))
            bounds = VectorBounds.of(rows[0])
            if self._vectors.index is not None and bounds == self._vectors.seen:
                return self._vectors.index
            return await self._vectors.sync(conn, bounds)

    async def vector_bounds(self) -> VectorBounds:
        """The change log's newest and oldest change and the newest batch of vectors written:
        what the embedding worker compares to learn whether anything was written since it looked."""
        async with self._read() as conn:
            rows = list(await conn.execute_fetchall(self._sql.vector_bounds))
        return VectorBounds.of(rows[0])

    async def changed_since(self, change: int) -> list[int]:
        """Seqs of this namespace's memories written, changed or deleted after `change`."""
        async with self._read() as conn:
            return await scalars(conn, self._sql.changed_since, (change, self.namespace))

    async def pending_vectors(self, model_id: str, after: int, limit: int) -> list[PendingText]:
        """Up to `limit` memories after seq `after`, in seq order, without a current vector of the
        model (none yet, another model's, or one of content they no longer have)."""
        async with self._read() as conn:
            rows = await conn.execute_fetchall(self._sql.vectors_pending, (self.namespace, after, model_id, limit))
        return [PendingText._make(r) for r in rows]

    async def pending_vectors_of(self, model_id: str, seqs: Sequence[int]) -> list[PendingText]:
        """Those of `seqs` that are live memories without a current vector of the model."""
        if not seqs:
            return []
        async with self._read() as conn:
            rows = await conn.execute_fetchall(
                self._sql.vectors_pending_of, (self.namespace, self._sql.array(seqs), model_id)
            )
        return [PendingText._make(r) for r in rows]

    async def vector_progress(self, model_id: str) -> VectorProgress:
        """(memories with a current vector of the model, live memories) in this namespace."""
        async with self._read() as conn:
            embedded = await scalar(conn, self._sql.vectors_current, (self.namespace, model_id))
            total = await scalar(conn, self._sql.live_count, (self.namespace,))
        return VectorProgress(int(embedded or 0), int(total or 0))

    async def write_vectors(self, model_id: str, texts: Sequence[PendingText], vectors: Any) -> int:
        """Store the vectors of memories as read by `pending_vectors` (seq, content, content_hash),
        one row of `vectors` (float32, shape (len(texts), dim), L2-normalised) each, quantised by
        index/vectors.encode, with the script group of the text, in one short transaction; each
        replaces its memory's earlier vector of any model. A memory deleted, archived or changed
        since its text was read gets none (its row decides, inside the statement), so a vector
        never describes old content. Idempotent: several processes may write the same vector.
        Returns how many were stored. No model runs here: the vectors were computed before."""
        if not texts:
            return 0
        from ..index.vectors import encode  # numpy: loaded with the semantic stage, not at start-up

        blobs = encode(vectors)
        if len(blobs) != len(texts):
            raise StoreError(f"{len(texts)} memories were given {len(blobs)} vectors")
        dim = len(blobs[0]) - 4
        scripts = [script_of(t.content) for t in texts]  # before the lock: no text work under it
        async with self._lock:
            try:
                async with self._db.write() as conn:
                    written = int(await scalar(conn, self._sql.vector_written_next))
                    stored = 0
                    for text, blob, script in zip(texts, blobs, scripts, strict=True):
                        values = (model_id, dim, blob, written, script, text.seq, text.content_hash)
                        cursor = await conn.execute(self._sql.vector_upsert, values)
                        stored += max(cursor.rowcount, 0)
            except self._db.errors as exc:
                raise StoreError(f"writing vectors failed and was rolled back: {exc}") from exc
        return stored
