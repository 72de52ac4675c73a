"""The statements of one open transaction. `Store.transaction()` hands out a `Tx`; everything
done through it commits together, full-text index included, or not at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

import anyio

from ..models import Draft, Memory
from .backend import Conn, Copier
from .changeset import Change, Noted
from .draft_values import (
    DRAFT_COLUMNS,
    FTS_ROW,
    MEMORY_ROW,
    IndexFields,
    bulk_rows,
    draft_values,
    insert_fts,
    insert_memories,
    normalized,
)
from .postgres.translate import tsquery
from .profile_scrub import scrub
from .rows import BM25, COLUMNS, HISTORY_COLUMNS, M_COLUMNS, HistoryRow, iso, memory_row, scalar, scalars

__all__ = ["CoreLine", "IndexFields", "Tx"]

# Memories the profile is synthesised from: writing one makes it stale (see profile/profile.py).
PROFILE_CATEGORIES = frozenset({"identity", "preference", "skill", "user_preferences", "coding_style"})
_LOG_KEEP = 100_000  # changes kept in memory_changes, up to _PRUNE_EVERY more between prunes
_PRUNE_EVERY = 100
_SEQS = "SELECT CAST(value AS BIGINT) FROM json_each(?)"  # the seqs of a JSON array
_BATCH = 1000  # rows per multi-row INSERT: 17 parameters a row stays well below SQLite's 32,766


class CoreLine(NamedTuple):
    """A core memory as MEMORY.md lists it: its category, text and day of writing (YYYY-MM-DD)."""

    category: str
    content: str
    day: str


class Tx:
    """Statements inside one open transaction; obtained from `Store.transaction()`.

    Its methods, and the functions of the store's modules that take a `Tx` (store/archive.py,
    store/export_import.py, store/profile_data.py, store/extraction_log.py), are the named
    operations the rest of the package calls; those modules run their statements on `_conn`,
    which nothing outside the store touches."""

    def __init__(self, conn: Conn, namespace: str, index_fields: IndexFields, *, postgres: bool = False) -> None:
        self._conn = conn
        self.postgres = postgres  # which dialect the few backend-specific statements take
        self._ns = namespace
        self._index_fields = index_fields
        self._noted = Noted()

    @property
    def change(self) -> Change | None:
        """What this transaction has changed so far (memories, sessions); None when nothing."""
        return self._noted.change()

    @property
    def namespace(self) -> str:
        return self._ns

    def index_row(self, content: str, key: str | None, tags: Iterable[str], category: str) -> tuple[str, ...]:
        """The four full-text columns of a memory, as `insert` writes them."""
        return self._index_fields(normalized(content), key, tags, category)

    async def log(self, seqs: Sequence[int]) -> None:
        """Record memories that appeared, changed or went away, for every process's index and
        for this process's change listeners (archived ones count as gone, live ones as appeared)."""
        await self._log(seqs)
        rows = list(
            await self._conn.execute_fetchall(
                f"SELECT seq, category, session_id, 0 FROM memories WHERE seq IN ({_SEQS})"
                f" UNION ALL SELECT seq, category, session_id, 1 FROM memory_archive WHERE seq IN ({_SEQS})",
                (json.dumps(list(seqs)),) * 2,
            )
        )
        self._noted.rows((seq, category, session_id) for seq, category, session_id, _ in rows)
        self._noted.listing = True
        self._noted.removed |= any(archived for _, _, _, archived in rows)

    def log_session(self, session_id: str) -> None:
        """Record that a session's working memory changed or ended, for the change listeners."""
        self._noted.sessions.add(session_id)

    # ---- memories ------------------------------------------------------------------------------

    async def profile_forget(self, seqs: Sequence[int]) -> None:
        """Memories that went away (archived) leave the profile too: see store/profile_scrub.py."""
        await scrub(self._conn, self._ns, seqs)

    async def profile_stale(self) -> None:
        """Mark the user profile for re-synthesis on its next read."""
        await self._conn.execute("UPDATE profile SET stale = 1 WHERE namespace = ? AND stale = 0", (self._ns,))

    async def get(self, seq: int) -> Memory | None:
        rows = await self._conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM memories WHERE seq = ? AND +namespace = ?", (seq, self._ns)
        )
        return next((memory_row(r).memory() for r in rows), None)

    async def by_key(self, key: str) -> Memory | None:
        rows = await self._conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND key = ?", (self._ns, key)
        )
        return next((memory_row(r).memory() for r in rows), None)

    async def taken_keys(self, keys: Sequence[str]) -> set[str]:
        """Those of `keys` that a memory already holds."""
        if not keys:
            return set()
        return set(
            await scalars(
                self._conn,
                "SELECT key FROM memories WHERE namespace = ? AND key IN (SELECT value FROM json_each(?))",
                (self._ns, json.dumps(list(keys), ensure_ascii=False)),
            )
        )

    async def hashes(self, digests: Sequence[str]) -> set[str]:
        """Those of `digests` that some memory's content has, whatever its category."""
        return set(
            await scalars(
                self._conn,
                "SELECT DISTINCT content_hash FROM memories WHERE namespace = ?"
                " AND content_hash IN (SELECT value FROM json_each(?))",
                (self._ns, json.dumps(list(digests))),
            )
        )

    async def by_hash(self, category: str, content_hash: str) -> list[Memory]:
        rows = await self._conn.execute_fetchall(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND category = ? AND content_hash = ?",
            (self._ns, category, content_hash),
        )
        return [memory_row(r).memory() for r in rows]

    async def similar_in_category(self, match: str, category: str, limit: int) -> list[Memory]:
        """Best full-text matches within one category: the near-duplicate candidates."""
        if not match:
            return []
        if self.postgres:  # the GIN index over the same terms, ranked by ts_rank
            query = tsquery(match)
            if not query:
                return []
            rows = await self._conn.execute_fetchall(
                f"SELECT {M_COLUMNS} FROM memory_fts f JOIN memories m ON m.seq = f.rowid"
                " WHERE f.terms @@ to_tsquery('simple', ?) AND m.namespace = ? AND m.category = ?"
                " ORDER BY ts_rank(f.terms, to_tsquery('simple', ?)) DESC, m.seq LIMIT ?",
                (query, self._ns, category, query, limit),
            )
            return [memory_row(r).memory() for r in rows]
        rows = await self._conn.execute_fetchall(
            f"SELECT {M_COLUMNS} FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND m.namespace = ? AND m.category = ? ORDER BY {BM25} LIMIT ?",
            (match, self._ns, category, limit),
        )
        return [memory_row(r).memory() for r in rows]

    async def insert(
        self, draft: Draft, content_hash: str, moment: datetime, *, created: datetime | None = None
    ) -> Memory:
        """`created`: when the memory was first written down, if before `moment` (a dated line of
        an imported file); it is then also the last change, and `moment` the last access."""
        now = iso(moment)
        written = iso(created) if created is not None else now
        values = draft_values(draft)
        seq = int(
            await scalar(
                self._conn,
                f"INSERT INTO memories (namespace, {DRAFT_COLUMNS}, content_hash, created_at, updated_at,"
                " last_accessed, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) RETURNING seq",
                (self._ns, *values, content_hash, written, written, now),
            )
        )
        await self._log([seq])
        self._noted.rows([(seq, draft.category, draft.session_id)])
        self._noted.listing = True
        if draft.category in PROFILE_CATEGORIES:
            await self.profile_stale()
        await self._conn.execute(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (?, ?, ?, ?, ?)",
            (seq, *self._index_fields(normalized(draft.content), draft.key, draft.tags, draft.category)),
        )
        return memory_row((seq, *values, written, written, now, 0)).memory()  # the row as written

    async def insert_many(self, drafts: Sequence[Draft], moment: datetime) -> list[int]:
        """Bulk insert; returns the new seqs in order.

        Rows go in batches, one multi-row INSERT per table and batch. SQLite runs each statement in
        the connection's thread with the GIL released, so the next batch's index terms and
        fingerprints are computed here meanwhile (`executemany` would take the GIL back for every
        row, and the two threads would mostly wait for each other). PostgreSQL takes them by COPY
        (the driver would spend longer parsing a statement of a thousand rows than the server
        takes to run it), and the next batch is computed while the server works."""
        if not drafts:
            return []
        now = iso(moment)
        # AUTOINCREMENT continues after the larger of the two; we hold the write lock, so the new
        # rows get the next consecutive seqs.
        first = await self._next_seqs(len(drafts))
        writing: list[asyncio.Future[Any]] = []
        try:
            for start in range(0, len(drafts), _BATCH):
                batch = drafts[start : start + _BATCH]
                memories, fts = bulk_rows(batch, first + start, self._ns, now, self._index_fields)
                if self.postgres:
                    copier = cast(Copier, self._conn)
                    statements = [
                        copier.copy_rows("memories", MEMORY_ROW, memories),
                        copier.copy_rows("memory_fts", FTS_ROW, fts),
                    ]
                else:
                    statements = [
                        self._run(insert_memories(len(batch)), [value for row in memories for value in row]),
                        self._run(insert_fts(len(batch)), [value for row in fts for value in row]),
                    ]
                writing += [asyncio.ensure_future(statement) for statement in statements]
                await asyncio.sleep(0)  # both statements are under way before the next batch is prepared
                while len(writing) > 2:  # at most one batch prepared ahead
                    await writing.pop(0)
            while writing:
                await writing.pop(0)
        finally:
            if writing:  # a statement failed: let the queued ones finish before the rollback
                with anyio.CancelScope(shield=True):
                    await asyncio.gather(*writing, return_exceptions=True)
        last = first + len(drafts) - 1
        await self._conn.execute(
            "INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories WHERE seq BETWEEN ? AND ?",
            (first, last),
        )
        await self._prune_log()
        if any(d.category in PROFILE_CATEGORIES for d in drafts):
            await self.profile_stale()
        self._noted.rows((seq, d.category, d.session_id) for seq, d in enumerate(drafts, first))
        self._noted.listing = True
        return list(range(first, last + 1))

    async def _next_seqs(self, count: int) -> int:
        """The first of `count` consecutive new seqs, taken for the caller's rows (which then give
        their seqs explicitly). Writers take turns (the write lock), so nothing takes any meanwhile."""
        if self.postgres:
            last = await scalar(
                self._conn,
                "SELECT setval(pg_get_serial_sequence('memories', 'seq'),"
                " nextval(pg_get_serial_sequence('memories', 'seq')) + ? - 1)",
                (count,),
            )
            return int(last) - count + 1
        # AUTOINCREMENT continues after the larger of the two.
        top = await scalar(
            self._conn,
            "SELECT max(coalesce((SELECT max(seq) FROM memories), 0),"
            " coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0))",
        )
        return int(top) + 1

    async def _run(self, sql: str, parameters: Sequence[Any]) -> None:
        await self._conn.execute(sql, parameters)

    async def replace(self, seq: int, draft: Draft, content_hash: str, moment: datetime, reason: str) -> Memory:
        """Overwrite a memory's value, keeping the old one in `memory_history`."""
        self._noted.rows(  # the old category and session: their views lose this memory if they change
            await self._conn.execute_fetchall("SELECT seq, category, session_id FROM memories WHERE seq = ?", (seq,))
        )
        await self._conn.execute(
            "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
            " reason, changed_at) SELECT seq, content, key, category, importance, confidence, tags, source, ?, ?"
            " FROM memories WHERE seq = ?",
            (reason, iso(moment), seq),
        )
        marks = ",".join("?" * len(PROFILE_CATEGORIES))
        await self._conn.execute(  # the old or the new value is about who the user is
            "UPDATE profile SET stale = 1 WHERE namespace = ? AND stale = 0 AND (? IN"
            f" ({marks}) OR (SELECT category FROM memories WHERE seq = ?) IN ({marks}))",
            (self._ns, draft.category, *PROFILE_CATEGORIES, seq, *PROFILE_CATEGORIES),
        )
        await self._conn.execute(
            "UPDATE memories SET content = ?, key = ?, category = ?, tier = ?, importance = ?, confidence = ?,"
            " source = ?, tags = ?, session_id = coalesce(?, session_id), client = coalesce(?, client),"
            " content_hash = ?, updated_at = ? WHERE seq = ? AND +namespace = ?",
            (*draft_values(draft), content_hash, iso(moment), seq, self._ns),
        )
        await self._log([seq])
        await self._conn.execute(
            "UPDATE memory_fts SET content = ?, key = ?, tags = ?, category = ? WHERE rowid = ?",
            (*self._index_fields(normalized(draft.content), draft.key, draft.tags, draft.category), seq),
        )
        memory = await self.get(seq)
        assert memory is not None
        self._noted.rows([(seq, memory.category, memory.session_id)])
        return memory

    async def history(self, seq: int) -> list[dict[str, Any]]:
        """A memory's earlier values, oldest first (tags as a list)."""
        rows = await self._conn.execute_fetchall(
            f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq = ? ORDER BY seq", (seq,)
        )
        return [HistoryRow._make(r).value() for r in rows]

    async def drop_history(self, seq: int) -> None:
        """Forget a memory's earlier values (the profile's text keeps none)."""
        await self._conn.execute("DELETE FROM memory_history WHERE memory_seq = ?", (seq,))

    async def core_lines(self) -> list[CoreLine]:
        """The core memories but the profile's, oldest first: what MEMORY.md shows."""
        # Three columns, not whole memories: at 100,000 memories this is the difference between a
        # fraction of a second and several seconds for every read of memory://MEMORY.md.
        rows = await self._conn.execute_fetchall(
            "SELECT category, content, substr(created_at, 1, 10) AS day FROM memories"
            " WHERE namespace = ? AND tier = 'core' AND category != 'profile' ORDER BY created_at, seq",
            (self._ns,),
        )
        return [CoreLine._make(r) for r in rows]

    async def delete(self, seqs: Sequence[int]) -> list[int]:
        """Delete for real: the memory, its history and its index entry, or its archived copy
        ("forget this" leaves nothing behind, in the archive either). Returns the seqs deleted."""
        if not seqs:
            return []
        wanted = ",".join("?" * len(seqs))
        rows = list(
            await self._conn.execute_fetchall(
                f"SELECT seq, category, session_id FROM memories WHERE +namespace = ? AND seq IN ({wanted})",
                (self._ns, *seqs),
            )
        )
        found = [seq for seq, _, _ in rows]
        if found:
            self._noted.rows(rows)
            self._noted.listing = self._noted.removed = True
            marks = ",".join("?" * len(found))
            await self._conn.execute(f"DELETE FROM memory_history WHERE memory_seq IN ({marks})", found)
            await self._conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", found)
            await self._conn.execute(f"DELETE FROM memories WHERE seq IN ({marks})", found)
            await self._log(found)
            await scrub(self._conn, self._ns, found)  # the profile may cite or quote what is gone
        archived = await scalars(
            self._conn, f"SELECT seq FROM memory_archive WHERE +namespace = ? AND seq IN ({wanted})", (self._ns, *seqs)
        )
        if archived:
            self._noted.seqs.update(archived)  # the archive's count in the statistics
            marks = ",".join("?" * len(archived))
            await self._conn.execute(f"DELETE FROM memory_history_archive WHERE memory_seq IN ({marks})", archived)
            await self._conn.execute(f"DELETE FROM memory_archive WHERE seq IN ({marks})", archived)
        return found + archived

    async def _log(self, seqs: Sequence[int]) -> None:
        """Record changed memories for the in-memory indexes of every process (see index/bm25.py)."""
        changes = await scalars(
            self._conn,
            "INSERT INTO memory_changes (namespace, seq) SELECT ?, CAST(value AS BIGINT) FROM json_each(?)"
            " RETURNING change",
            (self._ns, json.dumps(list(seqs))),
        )
        # Pruning once every _PRUNE_EVERY changes spares a round trip to SQLite per write.
        if any(change % _PRUNE_EVERY == 0 for change in changes):
            await self._prune_log()

    async def _prune_log(self) -> None:
        # Keep the log bounded; a process that falls further behind rebuilds its index instead.
        await self._conn.execute(
            "DELETE FROM memory_changes WHERE change <= (SELECT max(change) FROM memory_changes) - ?", (_LOG_KEEP,)
        )

    async def touch(self, counts: Mapping[int, int], at: str, sessions: Iterable[str] = ()) -> None:
        """Add `counts[seq]` accesses to each memory and set its last access time (ISO 8601); the
        sessions recalled with count as active at that time."""
        await self._conn.executemany(
            "UPDATE memories SET access_count = access_count + ?, last_accessed = ? WHERE seq = ? AND +namespace = ?",
            [(n, at, seq, self._ns) for seq, n in counts.items()],
        )
        if sessions:
            await self._conn.execute(
                "UPDATE sessions SET updated_at = max(updated_at, ?) WHERE namespace = ?"
                " AND session_id IN (SELECT value FROM json_each(?))",
                (at, self._ns, json.dumps(sorted(sessions), ensure_ascii=False)),
            )

    async def touch_session(self, session_id: str, moment: datetime) -> None:
        self._noted.sessions.add(session_id)
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

    async def update_session(
        self, session_id: str, moment: datetime, *, topic: str | None, emotion: str | None, variables: str | None
    ) -> None:
        """One conversational turn: the turn count goes up; topic, emotion and the context
        variables (a JSON object, already merged) change when given."""
        await self.touch_session(session_id, moment)
        await self._conn.execute(
            "UPDATE sessions SET turn_count = turn_count + 1, current_topic = coalesce(?, current_topic),"
            " last_emotion = coalesce(?, last_emotion), context_variables = coalesce(?, context_variables)"
            " WHERE namespace = ? AND session_id = ?",
            (topic, emotion, variables, self._ns, session_id),
        )

    async def session_variables(self, session_id: str) -> dict[str, Any]:
        variables = await scalar(
            self._conn,
            "SELECT context_variables FROM sessions WHERE namespace = ? AND session_id = ?",
            (self._ns, session_id),
        )
        return json.loads(variables) if variables is not None else {}
