"""The embedded default: one SQLite file in WAL mode, one aiosqlite connection per store, BEGIN
IMMEDIATE for writes (retried while another process holds the write lock), and a second,
read-only connection for short reads on the event loop's own thread."""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio

from ...errors import StoreError
from ..backend import Conn
from .schema import MIGRATIONS, Migration
from .statements import SqliteStatements

__all__ = ["SqliteBackend"]

log = logging.getLogger(__name__)

_BEGIN_ATTEMPTS = 8


async def _unstoppable(conn: aiosqlite.Connection, statement: str) -> None:
    """BEGIN, COMMIT or ROLLBACK, waited for even when the caller is cancelled: the connection's
    thread runs a statement once it is queued, so a BEGIN whose wait was cancelled would leave a
    transaction open that nothing ends, and every later write would fail with "cannot start a
    transaction within a transaction". A BEGIN waits at most the busy timeout."""
    with anyio.CancelScope(shield=True):
        await conn.execute(statement)


class SqliteBackend:
    """One SQLite file; see the module's docstring."""

    statements = SqliteStatements()
    reads_alongside = False
    migrations: Sequence[Migration] = MIGRATIONS
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path, busy_timeout_ms: int) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: aiosqlite.Connection | None = None
        self._peeker: sqlite3.Connection | None = None  # see `peek`

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn

    async def open(self) -> None:
        path = self._path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # timeout = SQLite's busy timeout: another process holding the write lock makes us
            # wait up to this long instead of failing with "database is locked".
            self._conn = await aiosqlite.connect(path, timeout=self._busy_timeout_ms / 1000, isolation_level=None)
            # WAL: readers never block the writer and the writer never blocks readers, which is
            # what several clients on one file need. synchronous=NORMAL is durable across process
            # crashes in WAL mode; only an OS crash can lose the last commits.
            for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON", "temp_store = MEMORY"):
                await self._conn.execute(f"PRAGMA {pragma}")
            self._peeker = sqlite3.connect(path, timeout=0, isolation_level=None)
            self._peeker.execute("PRAGMA query_only = ON")
        except (sqlite3.Error, OSError) as exc:
            await self.close()
            raise StoreError(f"cannot open the memory database at {path}: {exc}") from exc

    def hear(self, heard: Callable[[str], None]) -> None:
        """Other processes' changes cannot be heard on SQLite (searches read the change log)."""

    async def close(self) -> None:
        if self._peeker is not None:
            self._peeker.close()
            self._peeker = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Conn]:
        yield self.conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Conn]:
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
            yield conn
        except BaseException:
            await _unstoppable(conn, "ROLLBACK")
            raise
        # A local COMMIT either returns or raises; one that raised may leave the transaction open
        # (SQLITE_BUSY): it is rolled back, so that the error's "rolled back" is the truth and the
        # next BEGIN can start.
        try:
            await _unstoppable(conn, "COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                await _unstoppable(conn, "ROLLBACK")
            raise

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Conn]:
        """A deferred transaction, which in WAL mode takes no lock that writers wait on."""
        conn = self.conn
        await _unstoppable(conn, "BEGIN")
        try:
            yield conn
        finally:
            await _unstoppable(conn, "COMMIT")  # it wrote nothing: ending it cannot fail for want of a lock

    def peek(self, sql: str, params: Sequence[Any]) -> list[Any] | None:
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

    def location(self) -> str:
        return str(self._path)

    async def size(self) -> int:
        path = self._path
        return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
