"""The store's in-memory BM25 index, kept in step with the database.

Every write appends the memories it changed to `memory_changes` in the same transaction; before a
search the store compares the newest change number with the one this index has seen and, when
another connection (or process) has written since, re-reads only the changed memories' terms
(or, when they are many, rebuilds the index: that is faster, and compact again)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread

from ..config.config import Config
from .backend import Conn
from .rows import scalars
from .statements import Statements

if TYPE_CHECKING:
    from ..index.bm25 import Bm25Index

__all__ = ["LiveIndex"]

_BUILD_CHUNK = 500


class LiveIndex:
    """One namespace's BM25 index and the change number it reflects."""

    def __init__(self, config: Config, namespace: str, statements: Statements) -> None:
        self._config = config
        self._sql = statements
        self._namespace = namespace
        self.index: Bm25Index | None = None
        self.change = 0

    async def sync(self, conn: Conn, changes: tuple[int, int] | None) -> Bm25Index:
        """The in-memory index, brought up to date with every change committed since it was read.
        `changes` is (newest, oldest) change number when the caller has just read them."""
        if changes is None:
            for newest, oldest in await conn.execute_fetchall(self._sql.changes_bounds):
                changes = (newest or 0, oldest or 0)
        assert changes is not None  # the statement reads one row
        newest, oldest = changes
        index = self.index
        changed: list[int] = []
        if index is not None and oldest > self.change + 1:
            index = None  # the log was pruned past what we have seen: start again
        elif index is not None and newest > self.change:
            changed = await scalars(conn, self._sql.changed_since, (self.change, self._namespace))
        if index is not None and index.needs_compaction(len(changed)):
            index = None  # rebuilding is cheaper, and gives compact postings again
        if index is None:
            if self.index is not None:  # freed before the new one is built, whoever holds it
                self.index.clear()
                self.index = None
            index = await self._build(conn)
        else:
            await self._apply(conn, index, changed)
        self.index = index
        self.change = newest
        return index

    async def _apply(self, conn: Conn, index: Bm25Index, changed: list[int]) -> None:
        """Re-read the changed memories' terms (the deleted ones are gone)."""
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            rows = await conn.execute_fetchall(self._sql.terms_of, (self._namespace, self._sql.array(chunk)))
            current = {seq: f"{content} {key} {tags}" for seq, content, key, tags in rows}
            for seq in chunk:
                if seq not in current:
                    index.remove(seq)
            index.add_many([(seq, current[seq]) for seq in chunk if seq in current])

    async def _build(self, conn: Conn) -> Bm25Index:
        """Read every memory's terms in chunks (holding them all as Python strings at once would
        cost gigabytes at 100,000 memories) and index each chunk in a worker thread, so the event
        loop keeps answering other requests meanwhile."""
        index = await anyio.to_thread.run_sync(_new_index, self._config)
        last = 0
        while True:
            rows = await conn.execute_fetchall(self._sql.terms_after, (self._namespace, last, _BUILD_CHUNK))
            if not rows:
                break
            items = [(seq, f"{content} {key} {tags}") for seq, content, key, tags in rows]
            last, _ = items[-1]
            del rows
            await anyio.to_thread.run_sync(index.add_many, items)
            del items
        await anyio.to_thread.run_sync(index.freeze)
        return index


def _new_index(config: Config) -> Bm25Index:
    """An empty index. Its module (and numpy, about 100 ms to import) is loaded here, in the
    worker thread that builds the index, not when the server starts: `initialize` does not need it."""
    from ..index.bm25 import Bm25Index

    return Bm25Index(config.recall.bm25_k1, config.recall.bm25_b, config.recall.bm25_b_cjk)
