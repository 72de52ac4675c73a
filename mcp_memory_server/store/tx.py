"""The statements of one open transaction. `Store.transaction()` hands out a `Tx`; everything
done through it commits together, full-text index included, or not at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import anyio
from pydantic import BaseModel

from ..models import Draft, Memory, SessionState
from . import extraction_log, ledger
from .backend import Conn
from .changeset import Change, Noted
from .draft_values import IndexFields, bulk_rows, draft_values, normalized
from .ledger import Request
from .profile_scrub import scrub
from .rows import HistoryRow, SessionRow, iso, memory_row, scalar, scalars
from .statements import Statements

__all__ = ["CoreLine", "IndexFields", "Tx"]

# Memories the profile is synthesised from: writing one makes it stale (see profile/profile.py).
PROFILE_CATEGORIES = frozenset({"identity", "preference", "skill", "user_preferences", "coding_style"})
_LOG_KEEP = 100_000  # changes kept in memory_changes, up to _PRUNE_EVERY more between prunes
_PRUNE_EVERY = 100
_BATCH = 1000  # rows per multi-row INSERT: 17 parameters a row stays well below SQLite's 32,766
M = TypeVar("M", bound=BaseModel)


class CoreLine(NamedTuple):
    """A core memory as MEMORY.md lists it: its category, text, day of writing (YYYY-MM-DD) and
    number (its id is `mem_<number>`; None for a line not drawn from the store)."""

    category: str
    content: str
    day: str
    number: int | None = None


class Tx:
    """Statements inside one open transaction; obtained from `Store.transaction()`.

    Its methods, and the functions of the store's modules that take a `Tx` (store/archive.py,
    store/export_import.py, store/profile_data.py, store/extraction_log.py), are the named
    operations the rest of the package calls; those modules run the backend's statements (`_sql`)
    on `_conn`, which nothing outside the store touches.

    A memory named from outside (an id a client gave, `parse_id`) is named by its `number`, which
    only counts within this namespace: every method taking a number looks it up in this
    namespace. `seq`, the database's key, is handed out only inside rows (`MemoryRow.seq`,
    candidates, the archive's selections) and taken back only from them."""

    def __init__(self, conn: Conn, statements: Statements, namespace: str, index_fields: IndexFields) -> None:
        self._conn = conn
        self._sql = statements
        self._ns = namespace
        self._index_fields = index_fields
        self._noted = Noted()
        # A call that carries a request_id (see store/ledger.py): its first answer, when this is a
        # retry; and the answer it gives now, kept in the ledger by this transaction.
        self.request: Request | None = None
        self.replay: str | None = None
        self.answered: str | None = None

    def replayed(self, model: type[M]) -> M | None:
        """The first answer to this call's request_id when the call is a retry of one already
        stored: the caller answers with it and writes nothing. None otherwise."""
        return model.model_validate_json(self.replay) if self.replay is not None else None

    def answer(self, result: BaseModel) -> None:
        """The call's answer, for the request ledger to keep with the write; a call without a
        request_id keeps none (nothing is serialised)."""
        if self.request is not None:
            self.answered = result.model_dump_json()

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
        """Record memories (by seq) that appeared, changed or went away, for every process's index
        and for this process's change listeners (archived ones count as gone, live ones as
        appeared)."""
        await self._log(seqs)
        rows = list(await self._conn.execute_fetchall(self._sql.log_rows, (self._sql.array(seqs),) * 2))
        self._noted.rows((number, category, session_id) for number, category, session_id, _ in rows)
        self._noted.listing = True
        self._noted.removed |= any(archived for _, _, _, archived in rows)

    def log_session(self, session_id: str) -> None:
        """Record that a session's working memory changed or ended, for the change listeners."""
        self._noted.sessions.add(session_id)

    # ---- memories ------------------------------------------------------------------------------

    async def profile_forget(self, numbers: Sequence[int]) -> None:
        """Memories that went away (archived) leave the profile too: see store/profile_scrub.py."""
        await scrub(self._conn, self._sql, self._ns, numbers)

    async def profile_stale(self) -> None:
        """Mark the user profile for re-synthesis on its next read."""
        await self._conn.execute(self._sql.profile_stale, (self._ns,))

    async def get(self, number: int) -> Memory | None:
        """The live memory of this namespace with that number (its id: `parse_id`)."""
        rows = await self._conn.execute_fetchall(self._sql.get, (self._ns, number))
        return next((memory_row(r).memory() for r in rows), None)

    async def by_key(self, key: str) -> Memory | None:
        rows = await self._conn.execute_fetchall(self._sql.by_key, (self._ns, key))
        return next((memory_row(r).memory() for r in rows), None)

    async def taken_keys(self, keys: Sequence[str]) -> set[str]:
        """Those of `keys` that a memory already holds."""
        if not keys:
            return set()
        return set(await scalars(self._conn, self._sql.taken_keys, (self._ns, self._sql.array(keys))))

    async def hashes(self, digests: Sequence[str]) -> set[str]:
        """Those of `digests` that some memory's content has, whatever its category."""
        return set(await scalars(self._conn, self._sql.hashes, (self._ns, self._sql.array(digests))))

    async def by_hash(self, category: str, content_hash: str) -> list[Memory]:
        rows = await self._conn.execute_fetchall(self._sql.by_hash, (self._ns, category, content_hash))
        return [memory_row(r).memory() for r in rows]

    async def similar_in_category(self, match: str, category: str, limit: int) -> list[Memory]:
        """Best full-text matches within one category: the near-duplicate candidates."""
        if not match:
            return []
        rows = await self._sql.similar(self._conn, match, self._ns, category, limit)
        return [memory_row(r).memory() for r in rows]

    async def insert(
        self, draft: Draft, content_hash: str, moment: datetime, *, created: datetime | None = None
    ) -> Memory:
        """`created`: when the memory was first written down, if before `moment` (a dated line of
        an imported file); it is then also the last change, and `moment` the last access."""
        now = iso(moment)
        written = iso(created) if created is not None else now
        values = draft_values(draft)
        seq, number = await self._sql.insert_memory(
            self._conn, (self._ns, *values, content_hash, written, written, now)
        )
        await self._log([seq])
        self._noted.rows([(number, draft.category, draft.session_id)])
        self._noted.listing = True
        if draft.category in PROFILE_CATEGORIES:
            await self.profile_stale()
        await self._conn.execute(
            self._sql.fts_insert,
            (seq, *self._index_fields(normalized(draft.content), draft.key, draft.tags, draft.category)),
        )
        return memory_row((seq, number, *values, written, written, now, 0)).memory()  # the row as written

    async def insert_many(self, drafts: Sequence[Draft], moment: datetime) -> list[int]:
        """Bulk insert; returns the new memories' numbers in order.

        Rows go in batches, one multi-row INSERT per table and batch. SQLite runs each statement in
        the connection's thread with the GIL released, so the next batch's index terms and
        fingerprints are computed here meanwhile (`executemany` would take the GIL back for every
        row, and the two threads would mostly wait for each other). PostgreSQL takes them by COPY
        (the driver would spend longer parsing a statement of a thousand rows than the server
        takes to run it), and the next batch is computed while the server works."""
        if not drafts:
            return []
        now = iso(moment)
        # We hold the write lock, so the new rows get the next consecutive seqs and numbers.
        first = await self._sql.next_seqs(self._conn, len(drafts))
        first_number = await self._sql.take_numbers(self._conn, self._ns, len(drafts))
        writing: list[asyncio.Future[Any]] = []
        try:
            for start in range(0, len(drafts), _BATCH):
                batch = drafts[start : start + _BATCH]
                memories, fts = bulk_rows(batch, first + start, first_number + start, self._ns, now, self._index_fields)
                writing += map(asyncio.ensure_future, self._sql.write_batch(self._conn, memories, fts))
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
        await self._conn.execute(self._sql.log_range, (first, last))
        await self._sql.after_bulk(self._conn, len(drafts))
        await self._prune_log()
        if any(d.category in PROFILE_CATEGORIES for d in drafts):
            await self.profile_stale()
        numbers = range(first_number, first_number + len(drafts))
        self._noted.rows((number, d.category, d.session_id) for number, d in zip(numbers, drafts, strict=True))
        self._noted.listing = True
        return list(numbers)

    async def replace(self, number: int, draft: Draft, content_hash: str, moment: datetime, reason: str) -> Memory:
        """Overwrite the value of this namespace's memory `number`, keeping the old one in
        `memory_history`. It counts as a use of the memory (one more access, last accessed now),
        so cleanup never takes a memory just updated for an unused one."""
        found = list(await self._conn.execute_fetchall(self._sql.categories_of, (self._ns, number)))
        if not found:
            raise LookupError(f"no live memory has the number {number} here")  # the caller read it in this transaction
        seq = found[0][0]
        # The old category and session: their views lose this memory if they change.
        self._noted.rows((n, category, session) for _, n, category, session in found)
        await self._conn.execute(self._sql.keep_history, (reason, iso(moment), seq))
        profile = self._sql.array(sorted(PROFILE_CATEGORIES))
        await self._conn.execute(  # the old or the new value is about who the user is
            self._sql.profile_stale_if, (self._ns, draft.category, profile, seq, profile)
        )
        await self._conn.execute(
            self._sql.update_memory, (*draft_values(draft), content_hash, iso(moment), iso(moment), seq, self._ns)
        )
        await self._log([seq])
        await self._conn.execute(
            self._sql.fts_update,
            (*self._index_fields(normalized(draft.content), draft.key, draft.tags, draft.category), seq),
        )
        memory = await self.get(number)
        assert memory is not None
        self._noted.rows([(number, memory.category, memory.session_id)])
        return memory

    async def history(self, number: int) -> list[dict[str, Any]]:
        """The earlier values of this namespace's memory `number`, oldest first (tags as a list)."""
        rows = await self._conn.execute_fetchall(self._sql.history, (self._ns, number))
        return [HistoryRow._make(r).value() for r in rows]

    async def drop_history(self, number: int) -> None:
        """Forget the earlier values of memory `number` (the profile's text keeps none)."""
        await self._conn.execute(self._sql.drop_history, (self._ns, number))

    async def core_lines(self) -> list[CoreLine]:
        """The core memories but the profile's, oldest first: what MEMORY.md shows."""
        # Three columns, not whole memories: at 100,000 memories this is the difference between a
        # fraction of a second and several seconds for every read of memory://MEMORY.md.
        rows = await self._conn.execute_fetchall(self._sql.core_lines, (self._ns,))
        return [CoreLine._make(r) for r in rows]

    async def delete(self, numbers: Sequence[int], *, forgotten: bool = True) -> list[int]:
        """Delete for real this namespace's memories of `numbers`: the memory, its history and its
        index entry, or its archived copy, and, when they are `forgotten` (the user's or a model's
        wish, not the sieve retiring its own note), their text in the extraction log and in the
        answers kept for retries ("forget this" leaves nothing behind). Returns the numbers deleted."""
        if not numbers:
            return []
        sql, wanted = self._sql, self._sql.array(numbers)
        if forgotten:
            # First, while their texts (history and archived copies included) can still be read.
            # Every run of the log and every kept answer is read: not for the sieve's every turn.
            texts = await extraction_log.texts_of(self._conn, sql, self._ns, numbers)
            await extraction_log.forget(self._conn, sql, self._ns, numbers, texts)
            await ledger.forget(self._conn, sql, self._ns, texts)
        rows = list(await self._conn.execute_fetchall(sql.live_of, (self._ns, wanted)))
        found = [seq for seq, _, _, _ in rows]
        gone = [number for _, number, _, _ in rows]
        if found:
            self._noted.rows((number, category, session) for _, number, category, session in rows)
            self._noted.listing = self._noted.removed = True
            for statement in (sql.delete_history, sql.delete_fts, sql.delete_memories):
                await self._conn.execute(statement, (sql.array(found),))
            await self._log(found)
            await scrub(self._conn, sql, self._ns, gone)  # the profile may cite or quote what is gone
        archived = list(await self._conn.execute_fetchall(sql.archived_of, (self._ns, wanted)))
        if archived:
            self._noted.numbers.update(number for _, number in archived)  # the archive's count in the statistics
            for statement in (sql.delete_archived_history, sql.delete_archived):
                await self._conn.execute(statement, (sql.array(seq for seq, _ in archived),))
        return gone + [number for _, number in archived]

    async def _log(self, seqs: Sequence[int]) -> None:
        """Record changed memories for the in-memory indexes of every process (see index/bm25.py)."""
        changes = await scalars(self._conn, self._sql.log_seqs, (self._ns, self._sql.array(seqs)))
        # Pruning once every _PRUNE_EVERY changes spares a round trip to SQLite per write.
        if any(change % _PRUNE_EVERY == 0 for change in changes):
            await self._prune_log()

    async def _prune_log(self) -> None:
        # Keep the log bounded; a process that falls further behind rebuilds its index instead.
        await self._conn.execute(self._sql.prune_log, (_LOG_KEEP,))

    async def touch(self, counts: Mapping[int, int], at: str, sessions: Iterable[str] = ()) -> None:
        """Add `counts[seq]` accesses to each memory and set its last access time (ISO 8601); the
        sessions recalled with count as active at that time."""
        await self._conn.executemany(self._sql.touch, [(n, at, seq, self._ns) for seq, n in counts.items()])
        if sessions:
            await self._conn.execute(self._sql.touch_sessions, (at, self._ns, self._sql.array(sorted(sessions))))

    async def touch_session(self, session_id: str, moment: datetime) -> None:
        self._noted.sessions.add(session_id)
        now = iso(moment)
        await self._conn.execute(self._sql.touch_session, (self._ns, session_id, now, now))

    async def set_topic(self, session_id: str, topic: str | None, moment: datetime) -> None:
        await self.touch_session(session_id, moment)
        await self._conn.execute(self._sql.set_topic, (topic, self._ns, session_id))

    async def update_session(
        self, session_id: str, moment: datetime, *, topic: str | None, emotion: str | None, variables: str | None
    ) -> None:
        """One conversational turn: the turn count goes up; topic, emotion and the context
        variables (a JSON object, already merged) change when given."""
        await self.touch_session(session_id, moment)
        await self._conn.execute(self._sql.update_session, (topic, emotion, variables, self._ns, session_id))

    async def session(self, session_id: str) -> SessionState | None:
        rows = await self._conn.execute_fetchall(self._sql.session, (self._ns, session_id))
        return next((SessionRow._make(r).state() for r in rows), None)

    async def session_variables(self, session_id: str) -> dict[str, Any]:
        variables = await scalar(self._conn, self._sql.session_variables, (self._ns, session_id))
        return json.loads(variables) if variables is not None else {}
