"""The statements of one open transaction. `Store.transaction()` hands out a `Tx`; everything
done through it commits together, full-text index included, or not at all."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from .models import Draft, Memory
from .rows import BM25, COLUMNS, M_COLUMNS, iso, row_to_memory

__all__ = ["IndexFields", "Tx"]

# (content, key, tags, category) -> the four pre-segmented FTS columns
IndexFields = Callable[[str, "str | None", Iterable[str], str], tuple[str, ...]]

_LOG_KEEP = 100_000
_DRAFT_COLUMNS = "content, key, category, tier, importance, confidence, source, tags, session_id, client"


def _draft_values(draft: Draft) -> tuple[Any, ...]:
    """A draft's values in the order of `_DRAFT_COLUMNS`."""
    return (
        draft.content,
        draft.key,
        draft.category,
        draft.tier,
        draft.importance,
        draft.confidence,
        draft.source,
        json.dumps(list(draft.tags), ensure_ascii=False),
        draft.session_id,
        draft.client,
    )


class Tx:
    """Statements inside one open transaction; obtained from `Store.transaction()`."""

    def __init__(self, conn: aiosqlite.Connection, namespace: str, index_fields: IndexFields) -> None:
        self._conn = conn
        self._ns = namespace
        self._index_fields = index_fields

    async def get(self, seq: int) -> Memory | None:
        row = await (
            await self._conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE seq = ? AND +namespace = ?", (seq, self._ns)
            )
        ).fetchone()
        return row_to_memory(row) if row else None

    async def by_key(self, key: str) -> Memory | None:
        row = await (
            await self._conn.execute(f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND key = ?", (self._ns, key))
        ).fetchone()
        return row_to_memory(row) if row else None

    async def by_hash(self, category: str, content_hash: str) -> list[Memory]:
        rows = await self._conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND category = ? AND content_hash = ?",
            (self._ns, category, content_hash),
        )
        return [row_to_memory(r) for r in rows]

    async def similar_in_category(self, match: str, category: str, limit: int) -> list[Memory]:
        """Best full-text matches within one category: the near-duplicate candidates."""
        if not match:
            return []
        rows = await self._conn.execute_fetchall(
            f"SELECT {M_COLUMNS} FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND m.namespace = ? AND m.category = ? ORDER BY {BM25} LIMIT ?",
            (match, self._ns, category, limit),
        )
        return [row_to_memory(r) for r in rows]

    async def insert(self, draft: Draft, content_hash: str, moment: datetime) -> Memory:
        now = iso(moment)
        cursor = await self._conn.execute(
            f"INSERT INTO memories (namespace, {_DRAFT_COLUMNS}, content_hash, created_at, updated_at, last_accessed,"
            " access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (self._ns, *_draft_values(draft), content_hash, now, now, now),
        )
        seq = cursor.lastrowid
        assert seq is not None
        await self._log([seq])
        await self._conn.execute(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (?, ?, ?, ?, ?)",
            (seq, *self._index_fields(draft.content, draft.key, draft.tags, draft.category)),
        )
        memory = await self.get(seq)
        assert memory is not None
        return memory

    async def insert_many(self, drafts: Sequence[Draft], hashes: Sequence[str], moment: datetime) -> list[int]:
        """Bulk insert in one statement per table; returns the new seqs in order."""
        if not drafts:
            return []
        now = iso(moment)
        row = await (await self._conn.execute("SELECT max(seq) FROM memories")).fetchone()
        seq_row = await (await self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'")).fetchone()
        # AUTOINCREMENT continues after the larger of the two; we hold the write lock, so the new
        # rows get the next consecutive seqs.
        first = max(row[0] or 0 if row else 0, seq_row[0] if seq_row else 0) + 1
        seqs = list(range(first, first + len(drafts)))
        await self._conn.executemany(
            f"INSERT INTO memories (seq, namespace, {_DRAFT_COLUMNS}, content_hash, created_at, updated_at,"
            " last_accessed, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            [
                (seq, self._ns, *_draft_values(d), h, now, now, now)
                for seq, d, h in zip(seqs, drafts, hashes, strict=True)
            ],
        )
        await self._conn.executemany(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (?, ?, ?, ?, ?)",
            [
                (seq, *self._index_fields(d.content, d.key, d.tags, d.category))
                for seq, d in zip(seqs, drafts, strict=True)
            ],
        )
        await self._log(seqs)
        return seqs

    async def replace(self, seq: int, draft: Draft, content_hash: str, moment: datetime, reason: str) -> Memory:
        """Overwrite a memory's value, keeping the old one in `memory_history`."""
        await self._conn.execute(
            "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
            " reason, changed_at) SELECT seq, content, key, category, importance, confidence, tags, source, ?, ?"
            " FROM memories WHERE seq = ?",
            (reason, iso(moment), seq),
        )
        await self._conn.execute(
            "UPDATE memories SET content = ?, key = ?, category = ?, tier = ?, importance = ?, confidence = ?,"
            " source = ?, tags = ?, session_id = coalesce(?, session_id), client = coalesce(?, client),"
            " content_hash = ?, updated_at = ? WHERE seq = ? AND +namespace = ?",
            (*_draft_values(draft), content_hash, iso(moment), seq, self._ns),
        )
        await self._log([seq])
        await self._conn.execute(
            "UPDATE memory_fts SET content = ?, key = ?, tags = ?, category = ? WHERE rowid = ?",
            (*self._index_fields(draft.content, draft.key, draft.tags, draft.category), seq),
        )
        memory = await self.get(seq)
        assert memory is not None
        return memory

    async def history(self, seq: int) -> list[dict[str, Any]]:
        rows = await self._conn.execute_fetchall(
            "SELECT content, key, category, importance, confidence, tags, source, reason, changed_at"
            " FROM memory_history WHERE memory_seq = ? ORDER BY seq",
            (seq,),
        )
        names = ("content", "key", "category", "importance", "confidence", "tags", "source", "reason", "changed_at")
        return [dict(zip(names, r, strict=True)) | {"tags": json.loads(r[5])} for r in rows]

    async def delete(self, seqs: Sequence[int]) -> list[int]:
        """Delete for real: the memory, its history and its index entry. Returns the seqs deleted."""
        if not seqs:
            return []
        marks = ",".join("?" * len(seqs))
        rows = await self._conn.execute_fetchall(
            f"SELECT seq FROM memories WHERE +namespace = ? AND seq IN ({marks})", (self._ns, *seqs)
        )
        found = [r[0] for r in rows]
        if found:
            marks = ",".join("?" * len(found))
            await self._conn.execute(f"DELETE FROM memory_history WHERE memory_seq IN ({marks})", found)
            await self._conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", found)
            await self._conn.execute(f"DELETE FROM memories WHERE seq IN ({marks})", found)
            await self._log(found)
        return found

    async def _log(self, seqs: Sequence[int]) -> None:
        """Record changed memories for the in-memory indexes of every process (see bm25.py)."""
        await self._conn.executemany(
            "INSERT INTO memory_changes (namespace, seq) VALUES (?, ?)", [(self._ns, s) for s in seqs]
        )
        # Keep the log bounded; a process that falls further behind rebuilds its index instead.
        await self._conn.execute(
            "DELETE FROM memory_changes WHERE change <= (SELECT max(change) FROM memory_changes) - ?", (_LOG_KEEP,)
        )

    async def touch(self, counts: Mapping[int, int], at: str) -> None:
        """Add `counts[seq]` accesses to each memory and set its last access time (ISO 8601)."""
        await self._conn.executemany(
            "UPDATE memories SET access_count = access_count + ?, last_accessed = ? WHERE seq = ? AND +namespace = ?",
            [(n, at, seq, self._ns) for seq, n in counts.items()],
        )

    async def touch_session(self, session_id: str, moment: datetime) -> None:
        now = iso(moment)
        await self._conn.execute(
            "INSERT INTO sessions (namespace, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (namespace, session_id) DO UPDATE SET updated_at = excluded.updated_at",
            (self._ns, session_id, now, now),
        )

    async def set_topic(self, session_id: str, topic: str | None, moment: datetime) -> None:
        await self.touch_session(session_id, moment)
        await self._conn.execute(
            "UPDATE sessions SET current_topic = ? WHERE namespace = ? AND session_id = ?",
            (topic, self._ns, session_id),
        )
