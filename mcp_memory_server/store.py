"""The only module that speaks SQL: one aiosqlite connection per process, migrations, CRUD and
the full-text index, which is kept in sync inside the same transaction as every write."""

from __future__ import annotations

import json
import logging
import random
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import aiosqlite
import anyio
import anyio.to_thread

from .changeset import Change, tell
from .config import Config
from .errors import StoreError
from .keyword_query import KeywordQuery
from .live_index import LiveIndex
from .models import Memory, SessionState, Stats
from .rows import M_COLUMNS, ORDER_COLUMNS, Candidate, Page, filters, iso, row_to_memory, utcnow
from .schema import MIGRATIONS
from .segmenter import Segmenter
from .tokens import INDEX_VERSION, index_text, like_pattern
from .tracking import Accesses
from .tx import Tx

__all__ = ["Store"]

_BEGIN_ATTEMPTS = 8


async def _unstoppable(conn: aiosqlite.Connection, statement: str) -> None:
    """BEGIN, COMMIT or ROLLBACK, waited for even when the caller is cancelled: the connection's
    thread runs a statement once it is queued, so a BEGIN whose wait was cancelled would leave a
    transaction open that nothing ends, and every later write would fail with "cannot start a
    transaction within a transaction". A BEGIN waits at most the busy timeout."""
    with anyio.CancelScope(shield=True):
        await conn.execute(statement)


log = logging.getLogger(__name__)


class Store:
    """Memories in one SQLite file. Open with `async with Store(config, segmenter) as store`."""

    def __init__(self, config: Config, segmenter: Segmenter, namespace: str | None = None) -> None:
        self.config = config
        self.segmenter = segmenter
        self.namespace = config.namespace if namespace is None else namespace
        self._conn: aiosqlite.Connection | None = None
        self._peeker: sqlite3.Connection | None = None  # see `_peek`
        # One unit of work at a time on the connection: a transaction must not see another
        # coroutine's statements run inside it.
        self._lock = anyio.Lock()
        self._live = LiveIndex(config, self.namespace)
        self._accesses = Accesses(self._lock, self._write_touches, lambda: self._conn is not None)
        # Told what each commit changed (this process's writes), in the writer's call: see `tell`.
        self.on_change: list[Callable[[Change], None]] = []

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn

    async def open(self) -> None:
        path = self.config.db_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # timeout = SQLite's busy timeout: another process holding the write lock makes us
            # wait up to this long instead of failing with "database is locked".
            self._conn = await aiosqlite.connect(path, timeout=self.config.busy_timeout_ms / 1000, isolation_level=None)
            # WAL: readers never block the writer and the writer never blocks readers, which is
            # what several clients on one file need. synchronous=NORMAL is durable across process
            # crashes in WAL mode; only an OS crash can lose the last commits.
            for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON", "temp_store = MEMORY"):
                await self._conn.execute(f"PRAGMA {pragma}")
            await self._migrate()
            await self._ensure_index()
            self._peeker = sqlite3.connect(path, timeout=0, isolation_level=None)
            self._peeker.execute("PRAGMA query_only = ON")
        except (sqlite3.Error, OSError) as exc:
            await self.close()
            raise StoreError(f"cannot open the memory database at {path}: {exc}") from exc

    async def close(self) -> None:
        if self._peeker is not None:
            self._peeker.close()
            self._peeker = None
        if self._conn is not None:
            await self.flush()
            conn, self._conn = self._conn, None
            await conn.close()

    async def _migrate(self) -> None:
        conn = self.conn
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for version, name, statements in MIGRATIONS:
            async with self._begin():
                # Another process may have applied it while we waited for the write lock.
                row = await (
                    await conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,))
                ).fetchone()
                if row is not None:
                    continue
                for statement in statements:
                    await conn.execute(statement)
                if version == 1:
                    await conn.execute("INSERT INTO meta VALUES ('index_version', ?)", (str(INDEX_VERSION),))
                await conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, iso(utcnow())))
                log.info("applied database migration %d: %s", version, name)

    async def schema_version(self) -> int:
        async with self._lock:
            row = await (await self.conn.execute("SELECT max(version) FROM schema_migrations")).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    @asynccontextmanager
    async def _begin(self) -> AsyncIterator[None]:
        """BEGIN IMMEDIATE (take the write lock up front), retried if another process holds it
        past the busy timeout; COMMIT on success, ROLLBACK on any error."""
        conn = self.conn
        for attempt in range(_BEGIN_ATTEMPTS):
            try:
                await _unstoppable(conn, "BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if attempt == _BEGIN_ATTEMPTS - 1:
                    raise StoreError(
                        "the memory database stayed locked by another process; nothing was written"
                    ) from exc
                await anyio.sleep(0.05 * (attempt + 1) + random.random() * 0.05)
        try:
            yield
        except BaseException:
            await _unstoppable(conn, "ROLLBACK")
            raise
        await _unstoppable(conn, "COMMIT")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        """One atomic write: everything done through the `Tx` commits together or not at all;
        after the commit, the `on_change` listeners learn what changed."""
        async with self._lock:
            tx = self._tx()
            try:
                async with self._begin():
                    yield tx
            except sqlite3.Error as exc:
                raise StoreError(f"the write failed and was rolled back: {exc}") from exc
        if (change := tx.change) is not None:
            tell(self.on_change, change)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Tx]:
        """Reads that see one state of the database, whatever other processes commit meanwhile
        (an export): a deferred transaction, which in WAL mode takes no lock that writers wait on."""
        async with self._read() as conn:
            await _unstoppable(conn, "BEGIN")
            try:
                yield self._tx()
            finally:
                await _unstoppable(conn, "COMMIT")  # it wrote nothing: ending it cannot fail for want of a lock

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            try:
                yield self.conn
            except sqlite3.Error as exc:
                raise StoreError(f"reading the memory database failed: {exc}") from exc

    async def _ensure_index(self) -> None:
        """Rebuild the full-text index when it was built by another version of `index_text`."""
        conn = self.conn
        row = await (await conn.execute("SELECT value FROM meta WHERE name = 'index_version'")).fetchone()
        if row is None or row[0] != str(INDEX_VERSION):
            async with self._begin():
                await conn.execute("DELETE FROM memory_fts")
                rows = list(await conn.execute_fetchall("SELECT seq, content, key, tags, category FROM memories"))
                await conn.executemany(
                    "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (?, ?, ?, ?, ?)",
                    [(r[0], *self._index_fields(r[1], r[2], json.loads(r[3]), r[4])) for r in rows],
                )
                await conn.execute("INSERT OR REPLACE INTO meta VALUES ('index_version', ?)", (str(INDEX_VERSION),))
                # Other processes' in-memory indexes re-read everything.
                await conn.execute("INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories")
            log.info("rebuilt the full-text index for %d memories", len(rows))

    def _tx(self) -> Tx:
        return Tx(self.conn, self.namespace, self._index_fields)

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
        async with self._read():
            yield self._tx()

    async def get(self, seq: int) -> Memory | None:
        async with self._read():
            return await self._tx().get(seq)

    async def history(self, seq: int) -> list[dict[str, Any]]:
        async with self._read():
            return await self._tx().history(seq)

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
        where, args = filters(category, tags)
        # Filters are applied to the rows, so a filtered search ranks a wider pool first.
        pool = limit if not where else max(limit * 10, 500)
        async with self._read() as conn:
            index = self._live.index or await self._live.sync(conn, None)
            for _ in range(3):
                c = self.config
                ranked = index.search(
                    queries,
                    pool,
                    feedback_docs=c.feedback_docs,
                    feedback_terms=c.feedback_terms,
                    feedback_weight=c.feedback_weight,
                    coordination=c.coordination,
                )
                marks = ",".join("?" * len(ranked))
                sql = (
                    "SELECT c.newest, c.oldest, m.* FROM (SELECT (SELECT max(change) FROM memory_changes) AS newest,"
                    " (SELECT min(change) FROM memory_changes) AS oldest) AS c"
                    f" LEFT JOIN (SELECT {M_COLUMNS} FROM memories m WHERE +m.namespace = ?"
                    f" AND m.seq IN ({marks}){where}) AS m ON 1"
                )
                params = (self.namespace, *(seq for seq, _ in ranked), *args)
                peeked = self._peek(sql, params)
                rows = peeked if peeked is not None else list(await conn.execute_fetchall(sql, params))
                if (rows[0][0] or 0) == self._live.change:
                    break
                index = await self._live.sync(conn, (rows[0][0] or 0, rows[0][1] or 0))
        by_seq = {r[2]: self._accesses.with_pending(r[2:]) for r in rows if r[2] is not None}
        found = [Candidate(by_seq[seq], score) for seq, score in ranked if seq in by_seq]
        return found[:limit]

    def _peek(self, sql: str, params: Sequence[Any]) -> list[Any] | None:
        """A short read on the event loop's own thread, through a second, read-only connection:
        the worker thread's two hand-offs cost more than the query (0.4 against 0.3 ms for a
        recall's 50 candidates). In WAL mode a reader never waits for a writer; when SQLite
        still reports the file busy (a checkpoint or a recovery), None sends the caller to the
        worker thread, which can wait without stalling the loop."""
        try:
            return self._peeker.execute(sql, params).fetchall() if self._peeker else None
        except sqlite3.OperationalError as exc:
            log.debug("read on the worker thread instead: %s", exc)
            return None

    async def warm(self) -> None:
        """Build the in-memory index ahead of the first recall (the server calls this at start)."""
        async with self._read() as conn:
            if self._live.index is None:
                await self._live.sync(conn, None)

    async def search_like(
        self, terms: Sequence[str], limit: int, category: str | None = None, tags: Sequence[str] | None = None
    ) -> list[Candidate]:
        """Substring fallback; `raw` is the share of terms found in content or key."""
        if not terms:
            return []
        where, args = filters(category, tags)
        hit = " + ".join("((m.content LIKE ? ESCAPE '\\') OR (coalesce(m.key, '') LIKE ? ESCAPE '\\'))" for _ in terms)
        patterns = [p for t in terms for p in (like_pattern(t), like_pattern(t))]
        async with self._read() as conn:
            rows = await conn.execute_fetchall(
                f"SELECT * FROM (SELECT {M_COLUMNS}, ({hit}) AS found FROM memories m "
                f"WHERE m.namespace = ?{where}) WHERE found > 0 ORDER BY found DESC, updated_at DESC LIMIT ?",
                (*patterns, self.namespace, *args, limit),
            )
        return [Candidate(self._accesses.with_pending(r), float(r[15]) / len(terms)) for r in rows]

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
        where, args = filters(category, tags)
        for name, value in (("tier", tier), ("session_id", session_id)):
            if value is not None:
                where += f" AND m.{name} = ?"
                args.append(value)
        keyset, keyset_args = "", []
        if after is not None:
            keyset = f" AND (m.{column} < ? OR (m.{column} = ? AND m.seq < ?))"
            keyset_args = [after[0], after[0], after[1]]
        async with self._read() as conn:
            total_row = await (
                await conn.execute(
                    f"SELECT count(*) FROM memories m WHERE m.namespace = ?{where}", (self.namespace, *args)
                )
            ).fetchone()
            rows = await conn.execute_fetchall(
                f"SELECT {M_COLUMNS}, m.{column} FROM memories m WHERE m.namespace = ?{where}{keyset} "
                f"ORDER BY m.{column} DESC, m.seq DESC LIMIT ?",
                (self.namespace, *args, *keyset_args, limit + 1),
            )
        rows = list(rows)
        more = len(rows) > limit
        rows = rows[:limit]
        last = (rows[-1][15], rows[-1][0]) if more and rows else None
        return Page(total=int(total_row[0]) if total_row else 0, items=[row_to_memory(r) for r in rows], last=last)

    async def session(self, session_id: str) -> SessionState | None:
        async with self._read() as conn:
            row = await (
                await conn.execute(
                    "SELECT session_id, current_topic, context_variables, turn_count, last_emotion, created_at,"
                    " updated_at FROM sessions WHERE namespace = ? AND session_id = ?",
                    (self.namespace, session_id),
                )
            ).fetchone()
        if row is None:
            return None
        return SessionState(
            session_id=row[0],
            current_topic=row[1],
            context_variables=json.loads(row[2]),
            turn_count=row[3],
            last_emotion=row[4],
            created_at=datetime.fromisoformat(row[5]),
            updated_at=datetime.fromisoformat(row[6]),
        )

    async def stats(self) -> Stats:
        ns = self.namespace
        async with self._read() as conn:
            by_category: dict[str, int] = {
                r[0]: r[1]
                for r in await conn.execute_fetchall(
                    "SELECT category, count(*) FROM memories WHERE namespace = ? GROUP BY category ORDER BY 2 DESC",
                    (ns,),
                )
            }
            by_tier: dict[str, int] = {
                r[0]: r[1]
                for r in await conn.execute_fetchall(
                    "SELECT tier, count(*) FROM memories WHERE namespace = ? GROUP BY tier", (ns,)
                )
            }
            span = await (
                await conn.execute("SELECT min(created_at), max(created_at) FROM memories WHERE namespace = ?", (ns,))
            ).fetchone()
            sessions = await (await conn.execute("SELECT count(*) FROM sessions WHERE namespace = ?", (ns,))).fetchone()
            archived = await (
                await conn.execute("SELECT count(*) FROM memory_archive WHERE namespace = ?", (ns,))
            ).fetchone()
            version = await (await conn.execute("SELECT max(version) FROM schema_migrations")).fetchone()
        path = self.config.db_path
        size = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        return Stats(
            total=sum(by_category.values()),
            archived=int(archived[0]) if archived else 0,
            by_category=by_category,
            by_tier=by_tier,
            sessions=int(sessions[0]) if sessions else 0,
            db_path=str(path),
            db_bytes=size,
            schema_version=int(version[0]) if version and version[0] is not None else 0,
            oldest=datetime.fromisoformat(span[0]) if span and span[0] else None,
            newest=datetime.fromisoformat(span[1]) if span and span[1] else None,
        )

    # ---- access tracking (tracking.py) ----------------------------------------------------------

    def touch(self, seqs: Sequence[int], moment: datetime, session_id: str | None = None) -> None:
        """Access tracking after recall: written in the background (see tracking.py); `flush()`
        writes now and `close()` flushes."""
        self._accesses.record(seqs, moment, session_id)

    async def flush(self) -> None:
        """Write every access recorded so far."""
        await self._accesses.flush()

    async def _write_touches(self, counts: Mapping[int, int], at: str, sessions: set[str]) -> None:
        """One batch of accesses in a transaction of its own; the caller holds the lock."""
        try:
            async with self._begin():
                await self._tx().touch(counts, at, sessions)
        except sqlite3.Error as exc:
            raise StoreError(f"the write failed and was rolled back: {exc}") from exc
