"""The PostgreSQL backend (`--db postgresql://...`, the `postgres` extra): psycopg 3's asyncio
connections from one pool per database URL and process, shared by every namespace's store.

Each write also tells the other processes what it changed (NOTIFY, delivered at commit), and
one connection per process LISTENs, so that change notifications reach MCP clients whichever
replica made the change.

Writes keep SQLite's guarantee that a check and the write it decides are atomic across every
process: each write transaction first takes one transaction-scoped advisory lock, so writers on
all replicas take turns, as they do on one SQLite file, while readers never wait. Statements
are PostgreSQL's own (postgres/statements.py); their rows come back as tuples, with times and
JSON read as the text SQLite keeps (see `_native_as_text`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio

try:
    import psycopg
    from psycopg.adapt import Loader
    from psycopg_pool import AsyncConnectionPool
except ImportError as missing:  # the extra is not installed
    psycopg = None  # type: ignore[assignment]
    _MISSING: ImportError | None = missing
else:
    _MISSING = None

from ...config.urls import redact_url
from ...errors import StoreError
from ..backend import CHANGES_CHANNEL, CommitUnknown, Conn
from ..rows import iso, scalar
from ..sqlite.schema import Migration
from .schema import MIGRATIONS
from .statements import PgStatements

__all__ = ["PgBackend", "PgConn", "native_as_text"]

log = logging.getLogger(__name__)

# Writers' turn-taking lock (pg_advisory_xact_lock); any constant, the same in every replica.
WRITE_LOCK = 0x6D656D6F7279
POOL_SIZE = 8


class PgCursor:
    """A statement's rows, already read (psycopg's cursor is reused by the next statement)."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    async def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


class PgConn:
    """aiosqlite's connection interface over one psycopg connection (see store/backend.Conn)."""

    def __init__(self, conn: psycopg.AsyncConnection[tuple[Any, ...]]) -> None:
        self._conn = conn

    async def execute(self, sql: str, parameters: Any = (), /) -> PgCursor:
        cur = await self._run(sql, parameters)
        rows = await cur.fetchall() if cur.description is not None else []
        return PgCursor(rows, cur.rowcount)

    async def execute_fetchall(self, sql: str, parameters: Any = (), /) -> list[tuple[Any, ...]]:
        cur = await self._run(sql, parameters)
        return await cur.fetchall() if cur.description is not None else []

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]], /) -> None:
        rows = [_arguments(p) for p in parameters]
        if rows:
            async with self._conn.cursor() as cur:
                await cur.executemany(sql, rows)

    async def copy_rows(self, table: str, columns: str, rows: Iterable[Sequence[Any]], /) -> None:
        """Rows into `table` by COPY: one command, no statement for the driver to parse."""
        async with self._conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                await copy.write_row(row)

    async def _run(self, sql: str, parameters: Any) -> psycopg.AsyncCursor[tuple[Any, ...]]:
        # No parameters: None, so that the text is sent as it is (a `%` in it is no placeholder).
        return await self._conn.execute(sql, _arguments(parameters) or None)

    async def run_unstoppable(self, statement: str) -> None:
        """COMMIT or ROLLBACK, waited for even when the caller is cancelled."""
        with anyio.CancelScope(shield=True):
            await self._conn.execute(statement)

    async def commit(self) -> None:
        """COMMIT, waited for even when the caller is cancelled. A connection lost before it is
        sent is the driver's error (the transaction never committed); lost with it in flight,
        CommitUnknown: the server may have committed before the connection went (a restart's
        "terminating connection" can come after the commit record is written)."""
        if self._conn.closed:
            raise psycopg.OperationalError("the connection to the database was lost before the commit")
        try:
            await self.run_unstoppable("COMMIT")
        except psycopg.Error as exc:
            if self._conn.closed or _connection_ended(exc):
                raise CommitUnknown(str(exc).strip() or type(exc).__name__) from exc
            raise  # the server answered: it refused the commit, and the transaction was rolled back


def _connection_ended(exc: psycopg.Error) -> bool:
    """An error that ends the connection rather than the statement: no SQLSTATE (the socket
    failed), class 08 (connection exception) or 57P (the server shutting down or crashing)."""
    state = exc.sqlstate
    return state is None or state.startswith(("08", "57P"))


def _arguments(parameters: Any) -> Sequence[Any] | Mapping[str, Any]:
    if isinstance(parameters, Mapping):
        return parameters
    return list(parameters) if parameters is not None else []


class _TimeAsText(Loader):
    """A timestamptz as the ISO 8601 text SQLite's rows carry (rows.iso: UTC, microseconds, the
    +00:00 offset), so that the rows leaving the store are alike on both backends and times
    compare as text. The session's time zone is UTC (`native_as_text`), so the server's text,
    `2026-11-26 13:45:15.5+00`, needs only respelling; any other is parsed and converted."""

    def load(self, data: Any) -> str:
        text = bytes(data).decode()
        if text.endswith("+00") and len(text) >= 22:
            seconds, _, fraction = text[11:-3].partition(".")
            return f"{text[:10]}T{seconds}.{fraction.ljust(6, '0')}+00:00"
        return iso(datetime.fromisoformat(text))


class _JsonAsText(Loader):
    """A jsonb value as its JSON text (as SQLite keeps it); the store parses what it needs."""

    def load(self, data: Any) -> str:
        return bytes(data).decode()


def native_as_text(conn: psycopg.BaseConnection[Any]) -> None:
    """Read this connection's timestamptz and jsonb values as text (see `_TimeAsText`)."""
    conn.adapters.register_loader("timestamptz", _TimeAsText)
    conn.adapters.register_loader("jsonb", _JsonAsText)


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    """Each pooled connection: UTC times, and times and JSON read as text."""
    native_as_text(conn)
    await conn.execute("SET TIME ZONE 'UTC'")


_Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]
Heard = Callable[[str], None]


@dataclass
class _Shared:
    pool: _Pool
    hearers: list[Heard] = field(default_factory=list)
    listening: asyncio.Task[None] | None = None


class _Pools:
    """One pool per URL in this process, opened by the first store and closed by the last, with
    one connection that LISTENs for the changes other processes commit and tells every store."""

    def __init__(self) -> None:
        self._open: dict[str, _Shared] = {}

    async def take(self, url: str, heard: Heard) -> _Pool:
        shared = self._open.get(url)
        if shared is None:
            pool: _Pool = AsyncConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                open=False,
                kwargs={"autocommit": True},
                configure=_configure,
                name="mcp-memory",
            )
            await pool.open(wait=True, timeout=10)
            shared = self._open.get(url)
            if shared is None:
                shared = self._open[url] = _Shared(pool)
                shared.listening = asyncio.create_task(_listen(url, shared.hearers), name="mcp-memory-listen")
            else:  # another store of this URL opened one while this one waited: one pool per URL
                await pool.close()
        shared.hearers.append(heard)
        return shared.pool

    async def give_back(self, url: str, heard: Heard) -> None:
        shared = self._open[url]
        shared.hearers.remove(heard)
        if shared.hearers:
            return
        del self._open[url]
        if shared.listening is not None:
            shared.listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await shared.listening
        await shared.pool.close()


async def _listen(url: str, hearers: list[Heard]) -> None:
    """Hear CHANGES_CHANNEL until cancelled, reconnecting with back-off; what arrives while the
    connection is down is missed (notifications are advisory: searches read the change log)."""
    delay = 0.5
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANGES_CHANNEL}")
                delay = 0.5
                async for note in conn.notifies():
                    for heard in list(hearers):
                        heard(note.payload)
        except (psycopg.Error, OSError) as exc:
            log.warning("cannot hear other processes' changes (%s); trying again in %.1f s", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


_POOLS = _Pools()


class PgBackend:
    """One PostgreSQL database, as a store's backend; see the module's docstring."""

    statements = PgStatements()
    reads_alongside = True
    migrations: Sequence[Migration] = MIGRATIONS

    def __init__(self, url: str, busy_timeout_ms: int) -> None:
        if _MISSING is not None:
            raise StoreError(
                f"a postgresql:// database needs the PostgreSQL driver: pip install 'jiyi[postgres]' ({_MISSING})"
            )
        self._url = url
        # How long a write waits for other writers' turns before it gives up, as SQLite's
        # BEGIN IMMEDIATE retries do.
        self._lock_timeout_ms = busy_timeout_ms * 8
        self._pool: _Pool | None = None
        self._hearers: list[Heard] = []
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)

    async def open(self) -> None:
        try:
            self._pool = await _POOLS.take(self._url, self._heard)
        except Exception as exc:  # psycopg_pool.PoolTimeout, psycopg.Error, a bad URL
            raise StoreError(f"cannot open the memory database at {self.location()}: {exc}") from exc

    async def close(self) -> None:
        if self._pool is not None:
            self._pool = None
            await _POOLS.give_back(self._url, self._heard)

    def hear(self, heard: Heard) -> None:
        self._hearers.append(heard)

    def _heard(self, payload: str) -> None:
        for heard in self._hearers:
            heard(payload)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[PgConn]:
        if self._pool is None:
            raise StoreError("the store is not open")
        async with self._pool.connection() as conn:
            yield PgConn(conn)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Conn]:
        async with self._connection() as conn:
            yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Conn]:
        async with self._connection() as conn:
            await conn.execute("BEGIN")
            try:
                await conn.execute(f"SET LOCAL lock_timeout = {self._lock_timeout_ms}")
                try:
                    await conn.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
                except psycopg.errors.LockNotAvailable as exc:
                    raise StoreError("other writers held the memory database too long; nothing was written") from exc
                await conn.execute("SET LOCAL lock_timeout = 0")
                yield conn
            except BaseException:
                await conn.run_unstoppable("ROLLBACK")
                raise
            await conn.commit()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Conn]:
        async with self._connection() as conn:
            await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                await conn.run_unstoppable("COMMIT")

    def peek(self, sql: str, params: Sequence[Any]) -> list[Any] | None:
        return None  # every read goes through the pool

    def location(self) -> str:
        return redact_url(self._url)

    async def size(self) -> int:
        async with self._connection() as conn:
            size = await scalar(conn, "SELECT pg_database_size(current_database())")
        return int(size or 0)
