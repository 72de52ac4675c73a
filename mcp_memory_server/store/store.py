"""The store: migrations, reads, searches and atomic write transactions over the configured
backend (store/backend.py), with the full-text index kept in sync inside the same transaction as every
write and the in-memory BM25 index kept in step with every process's writes."""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import anyio

from ..config.config import Config
from ..errors import StoreError
from ..models import Cleaned, CleanedMemory, Memory, SessionState, Stats
from ..text.keyword_query import KeywordQuery
from ..text.segmenter import Segmenter
from ..text.tokens import INDEX_VERSION, index_text, like_pattern
from . import key_slots, profile_scrub
from .access_counts import Accesses
from .backend import Backend, CommitUnknown, Conn
from .changeset import Change, decode, encode, tell
from .ledger import Request
from .live_index import LiveIndex
from .live_vectors import LiveVectors
from .request_ops import RequestOps
from .rows import (
    ORDER_COLUMNS,
    Candidate,
    MemoryRow,
    Page,
    SessionRow,
    iso,
    memory_id,
    memory_row,
    preview,
    scalar,
    utcnow,
)
from .sqlite.backend import SqliteBackend
from .tx import Tx
from .vector_ops import QueryEncoder, VectorOps

__all__ = ["QueryEncoder", "Store"]

log = logging.getLogger(__name__)
_NO_LOCK = contextlib.nullcontext()
# memory://stats tells what automatic cleanup archived in this many days, the newest few by name.
_CLEANED_DAYS = 30
_CLEANED_SHOWN = 10


def _backend(config: Config) -> Backend:
    if config.db_url is not None:
        from .postgres.backend import PgBackend  # the postgres extra; SQLite users never load it

        return PgBackend(config.db_url, config.busy_timeout_ms)
    return SqliteBackend(config.db_path, config.busy_timeout_ms)


class Store(VectorOps, RequestOps):
    """The memories of one namespace, in the configured database (an SQLite file by default, or
    PostgreSQL). Open with `async with Store(config, segmenter) as store`."""

    def __init__(self, config: Config, segmenter: Segmenter, namespace: str | None = None) -> None:
        self.config = config
        self.segmenter = segmenter
        self.namespace = config.namespace if namespace is None else namespace
        self._db = _backend(config)
        self._sql = self._db.statements
        self._open = False
        # One unit of work at a time: a transaction must not see another coroutine's statements
        # run inside it (SQLite: one connection), and the in-memory index syncs one at a time.
        self._lock = anyio.Lock()
        # The in-memory index is brought up to date (and searched) by one search at a time.
        self._index_lock = anyio.Lock()
        self._live = LiveIndex(config, self.namespace, self._sql)
        # The vectors of the semantic stage's model, once a model is in use (`use_vectors`).
        self._vectors = LiveVectors(self.namespace, self._sql)
        self._vector_lock = anyio.Lock()
        self.encoder: QueryEncoder | None = None
        self._query_vectors: OrderedDict[tuple[str, str], object] = OrderedDict()  # (model, text) -> vector
        self._accesses = Accesses(
            self._lock, self._write_touches, lambda: self._open, reads_alongside=self._db.reads_alongside
        )
        # Told what each commit changed (this process's writes), in the writer's call: see `tell`.
        self.on_change: list[Callable[[Change], None]] = []
        # Which store announced a change (other processes', on PostgreSQL, are heard too).
        self._origin = uuid.uuid4().hex
        self._db.hear(self._heard)

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _heard(self, payload: str) -> None:
        """Another store's commit (another process on PostgreSQL): told to this one's listeners."""
        heard = decode(payload)
        if heard is not None and heard[0] != self._origin and heard[1] == self.namespace:
            tell(self.on_change, heard[2])

    async def open(self) -> None:
        await self._db.open()
        self._open = True
        try:
            await self._migrate()
            await self._ensure_index()
        except self._db.errors as exc:
            await self.close()
            raise StoreError(f"cannot open the memory database at {self._db.location()}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._open:
            await self.flush()
            self._open = False
            await self._db.close()

    async def _migrate(self) -> None:
        async with self._db.write() as conn:  # several processes may start at once
            await conn.execute(self._sql.migrations_table)
        for version, name, statements in self._db.migrations:
            async with self._db.write() as conn:
                # Another process may have applied it while we waited for the write lock.
                if await scalar(conn, self._sql.migration_applied, (version,)) is not None:
                    continue
                for statement in statements:
                    await conn.execute(statement)
                if version == key_slots.MIGRATION:
                    await key_slots.merge_key_slots(conn, self._sql, self._tx_in)
                if version == profile_scrub.MIGRATION:
                    await profile_scrub.drop_profile_memories(conn, self._sql)
                if version == 1:
                    await conn.execute(self._sql.index_version_first, (str(INDEX_VERSION),))
                await conn.execute(self._sql.migration_record, (version, name, iso(utcnow())))
                log.info("applied database migration %d: %s", version, name)

    async def schema_version(self) -> int:
        async with self._read() as conn:
            version = await scalar(conn, self._sql.schema_version)
        return int(version) if version is not None else 0

    @asynccontextmanager
    async def transaction(self, request: Request | None = None) -> AsyncIterator[Tx]:
        """One atomic write: everything done through the `Tx` commits together or not at all;
        after the commit, the `on_change` listeners learn what changed.

        With a `request` (a call carrying a request_id, see store/ledger.py) the ledger is read
        first: a retry of a stored call finds its first answer in `tx.replayed(...)`, and the
        caller returns it without writing; the same id with other arguments raises InvalidInput.
        Otherwise the caller gives its answer to `tx.answer(...)` before the block ends, and the
        ledger keeps it in this transaction.

        A failure before COMMIT was sent rolled everything back: StoreError, safe to retry. When
        the connection is lost with COMMIT in flight (PostgreSQL), a call with a request_id is
        settled by reading the ledger again on a new connection (its row is there if and only if
        the write committed); without one, or when the database cannot be reached in time,
        WriteOutcomeUnknown."""
        async with self._lock:
            try:
                async with self._db.write() as conn:
                    tx = self._tx(conn)
                    if request is not None:
                        await self._request_begins(tx, request)
                    yield tx
                    if request is not None:
                        await self._request_ends(tx, request)
                    if (change := tx.change) is not None:  # delivered at commit, where it can be
                        await self._sql.announce(conn, encode(change, self.namespace, self._origin))
            except CommitUnknown as lost:
                await self._settle_lost_commit(tx, request, lost)
            except self._db.errors as exc:
                raise StoreError(f"the write failed and was rolled back: {exc}") from exc
        if (change := tx.change) is not None:
            tell(self.on_change, change)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Tx]:
        """Reads that see one state of the database, whatever other processes commit meanwhile
        (an export), without holding up writers."""
        async with self._lock if not self._db.reads_alongside else _NO_LOCK:
            try:
                async with self._db.snapshot() as conn:
                    yield self._tx(conn)
            except self._db.errors as exc:
                raise StoreError(f"reading the memory database failed: {exc}") from exc

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[Conn]:
        """A connection for reads. SQLite's one connection is the store's lock's; on PostgreSQL each
        read has a pooled connection of its own, so reads run alongside each other and writes."""
        async with self._lock if not self._db.reads_alongside else _NO_LOCK:
            try:
                async with self._db.read() as conn:
                    yield conn
            except self._db.errors as exc:
                raise StoreError(f"reading the memory database failed: {exc}") from exc

    async def _ensure_index(self) -> None:
        """Rebuild the full-text index when it was built by another version of `index_text`."""
        async with self._read() as conn:
            built_by = await scalar(conn, self._sql.index_version)
        if built_by != str(INDEX_VERSION):
            async with self._db.write() as conn:
                await conn.execute(self._sql.fts_clear)
                rows = list(await conn.execute_fetchall(self._sql.fts_sources))
                await conn.executemany(
                    self._sql.fts_insert,
                    [
                        (seq, *self._index_fields(content, key, json.loads(tags), category))
                        for seq, content, key, tags, category in rows
                    ],
                )
                await conn.execute(self._sql.index_version_set, (str(INDEX_VERSION),))
                # Other processes' in-memory indexes re-read everything.
                await conn.execute(self._sql.log_everything)
            log.info("rebuilt the full-text index for %d memories", len(rows))

    def _tx(self, conn: Conn) -> Tx:
        return Tx(conn, self._sql, self.namespace, self._index_fields)

    def _tx_in(self, conn: Conn, namespace: str) -> Tx:
        """A transaction view in any namespace: for migrations, which change every namespace."""
        return Tx(conn, self._sql, namespace, self._index_fields)

    @staticmethod
    def _index_fields(content: str, key: str | None, tags: Iterable[str], category: str) -> tuple[str, ...]:
        return (
            index_text(content),
            index_text(key) if key else "",
            index_text(" ".join(tags)) if tags else "",
            category,
        )

    # ---- reads -------------------------------------------------------------------------------

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[Tx]:
        """Reads through the `Tx` interface, outside any transaction."""
        async with self._read() as conn:
            yield self._tx(conn)

    async def get(self, number: int) -> Memory | None:
        """This namespace's live memory `number` (its id's, `parse_id`); None when there is none. The
        accesses recorded and not yet written are written first: a memory shown right after the
        recall that returned it shows that recall in its access count."""
        await self.flush()
        async with self._read() as conn:
            return await self._tx(conn).get(number)

    async def history(self, number: int) -> list[dict[str, Any]]:
        async with self._read() as conn:
            return await self._tx(conn).history(number)

    async def search_index(
        self,
        queries: Sequence[KeywordQuery],
        limit: int,
        category: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[Candidate]:
        """Candidates by BM25 from the in-memory index; `raw` is the BM25 score (higher is better).

        One database round trip in the common case: the index is searched as it stands, and the
        query fetching the candidates' rows also reads the newest change number. Only when another
        write has landed since the index was brought up to date is it synced and searched again."""
        where, args = self._sql.filters(category, tags)
        # Filters are applied to the rows, so a filtered search ranks a wider pool first.
        pool = limit if not where else max(limit * 10, 500)
        async with self._index_lock, self._accesses.reading(), self._read() as conn:
            index = self._live.index or await self._live.sync(conn, None)
            for _ in range(3):
                c = self.config
                ranked = index.search(
                    queries,
                    pool,
                    feedback_docs=c.recall.feedback_docs,
                    feedback_terms=c.recall.feedback_terms,
                    feedback_weight=c.recall.feedback_weight,
                    coordination=c.recall.coordination,
                    rarity=c.recall.rarity,
                )
                sql, params = self._sql.search_rows(self.namespace, [seq for seq, _ in ranked], where, args)
                peeked = self._db.peek(sql, params)
                changes, found_rows = _changes_and_memories(
                    peeked if peeked is not None else list(await conn.execute_fetchall(sql, params))
                )
                if changes[0] == self._live.change:
                    break
                index = await self._live.sync(conn, changes)
            by_seq = {row.seq: self._accesses.with_pending(row) for row in found_rows}
        found = [Candidate(by_seq[seq], score) for seq, score in ranked if seq in by_seq]
        return found[:limit]

    async def candidates(
        self, seqs: Sequence[int], category: str | None = None, tags: Sequence[str] | None = None
    ) -> list[Candidate]:
        """The memories of `seqs` that pass the filters, as candidates without a keyword score (the
        semantic stage's neighbours that the keyword index did not find), in the order given."""
        if not seqs:
            return []
        where, args = self._sql.filters(category, tags)
        async with self._accesses.reading(), self._read() as conn:
            sql, params = self._sql.search_rows(self.namespace, list(seqs), where, args)
            peeked = self._db.peek(sql, params)  # on the loop's thread, as search_index reads
            _, rows = _changes_and_memories(
                peeked if peeked is not None else list(await conn.execute_fetchall(sql, params))
            )
            by_seq = {row.seq: self._accesses.with_pending(row) for row in rows}
        return [Candidate(by_seq[seq], 0.0) for seq in seqs if seq in by_seq]

    async def document_frequencies(self, queries: Sequence[KeywordQuery]) -> Rarity:
        """How many memories the in-memory index holds and how many hold each query (recall
        chooses and weights a query's terms by their rarity), with every committed write applied."""
        async with self._index_lock, self._read() as conn:
            index = await self._live.sync(conn, None)
            return Rarity(len(index), index.document_frequencies(queries))

    async def warm(self) -> None:
        """Build the in-memory index ahead of the first recall (the server calls this at start)."""
        async with self._index_lock, self._read() as conn:
            if self._live.index is None:
                await self._live.sync(conn, None)

    async def search_like(
        self, terms: Sequence[str], limit: int, category: str | None = None, tags: Sequence[str] | None = None
    ) -> list[Candidate]:
        """Substring fallback; `raw` is the share of terms found in content or key. On PostgreSQL
        the trigram indexes find the rows that hold any of the terms (LIKE is ILIKE there)."""
        if not terms:
            return []
        where, args = self._sql.filters(category, tags)
        patterns = [p for t in terms for p in (like_pattern(t), like_pattern(t))]
        async with self._accesses.reading(), self._read() as conn:
            rows = await conn.execute_fetchall(
                self._sql.search_like(len(terms), where),
                (*patterns, self.namespace, *args, *patterns, limit),
            )
            return [
                Candidate(self._accesses.with_pending(row), float(found) / len(terms))
                for row, found in map(_memory_and_extra, rows)
            ]

    async def list_page(
        self,
        *,
        category: str | None,
        tier: str | None,
        tags: Sequence[str] | None,
        order_by: str,
        limit: int,
        after: tuple[Any, int] | None,
        session_id: str | None = None,
    ) -> Page:
        column = ORDER_COLUMNS[order_by]
        where, args = self._sql.filters(category, tags)
        for name, value in (("tier", tier), ("session_id", session_id)):
            if value is not None:
                where += self._sql.equals(name)
                args.append(value)
        keyset_args = [after[0], after[0], after[1]] if after is not None else []
        async with self._read() as conn:
            total = await scalar(conn, self._sql.list_count(where), (self.namespace, *args))
            rows = await conn.execute_fetchall(
                self._sql.list_rows(column, where, after is not None),
                (self.namespace, *args, *keyset_args, limit + 1),
            )
        page = [_memory_and_extra(r) for r in rows]
        more = len(page) > limit
        page = page[:limit]
        # The sort value and the number: a cursor holds nothing of the database's own keys.
        last = (page[-1][1], page[-1][0].number) if more and page else None
        return Page(total=int(total or 0), items=[row.memory() for row, _ in page], last=last)

    async def session(self, session_id: str) -> SessionState | None:
        async with self._read() as conn:
            rows = await conn.execute_fetchall(self._sql.session, (self.namespace, session_id))
        return next((SessionRow._make(r).state() for r in rows), None)

    async def stats(self) -> Stats:
        ns, sql = self.namespace, self._sql
        async with self._read() as conn:
            by_category: dict[str, int] = dict(await conn.execute_fetchall(sql.count_by_category, (ns,)))
            by_tier: dict[str, int] = dict(await conn.execute_fetchall(sql.count_by_tier, (ns,)))
            oldest = await scalar(conn, sql.oldest, (ns,))
            newest = await scalar(conn, sql.newest, (ns,))
            sessions = await scalar(conn, sql.session_count, (ns,))
            archived = await scalar(conn, sql.archive_count, (ns,))
            version = await scalar(conn, sql.schema_version)
            since = iso(utcnow() - timedelta(days=_CLEANED_DAYS))
            cleaned_count = await scalar(conn, sql.cleaned_count, (ns, since))
            latest = await conn.execute_fetchall(sql.cleaned_latest, (ns, since, _CLEANED_SHOWN))
        size = await self._db.size()
        return Stats(
            total=sum(by_category.values()),
            archived=int(archived or 0),
            by_category=by_category,
            by_tier=by_tier,
            sessions=int(sessions or 0),
            db_path=self._db.location(),
            db_bytes=size,
            schema_version=int(version) if version is not None else 0,
            oldest=datetime.fromisoformat(oldest) if oldest else None,
            newest=datetime.fromisoformat(newest) if newest else None,
            segmenter=self.segmenter.state,
            cleaned=Cleaned(
                days=_CLEANED_DAYS,
                count=int(cleaned_count or 0),
                latest=[
                    CleanedMemory(id=memory_id(n), preview=preview(c), archived_at=at, reason=reason)
                    for n, c, at, reason in latest
                ],
            ),
        )

    # ---- access tracking (store/access_counts.py) ----------------------------------------------------------

    def touch(self, seqs: Sequence[int], moment: datetime, session_id: str | None = None) -> None:
        """Access tracking after recall: written in the background (see store/access_counts.py); `flush()`
        writes now and `close()` flushes."""
        self._accesses.record(seqs, moment, session_id)

    async def flush(self) -> None:
        """Write every access recorded so far."""
        await self._accesses.flush()

    async def _write_touches(self, counts: Mapping[int, int], at: str, sessions: set[str]) -> None:
        """One batch of accesses in a transaction of its own; the caller holds the lock."""
        try:
            async with self._db.write() as conn:
                await self._tx(conn).touch(counts, at, sessions)
        except self._db.errors as exc:
            raise StoreError(f"the write failed and was rolled back: {exc}") from exc


class Rarity(NamedTuple):
    """How many memories the keyword index holds, and how many hold each query keyword."""

    memories: int
    counts: list[int]


_WIDTH = len(MemoryRow._fields)


def _memory_and_extra(row: Sequence[Any]) -> tuple[MemoryRow, Any]:
    """A row of `SELECT {M_COLUMNS}, <one more value>`: the memory, and the value after it."""
    return memory_row(row[:_WIDTH]), row[_WIDTH]


def _changes_and_memories(rows: Sequence[Sequence[Any]]) -> tuple[tuple[int, int], list[MemoryRow]]:
    """The rows of a search's `SELECT c.newest, c.oldest, m.*`: the change log's newest and oldest
    change numbers, and the memories found (none: one row of NULLs after the two numbers)."""
    newest, oldest = rows[0][0] or 0, rows[0][1] or 0
    return (newest, oldest), [memory_row(r[2:]) for r in rows if r[2] is not None]
