"""What the store asks of a database backend, whichever it is: the embedded SQLite file
(store/sqlite/backend.py, the default) or a PostgreSQL server (store/postgres/backend.py, chosen
by a `postgresql://` URL).

The store and the modules that keep their own tables write their SQL once, in SQLite's dialect,
against a `Conn`; PostgreSQL's connection rewrites each statement (store/postgres/translate.py). Where the two
cannot share a statement, code asks `Backend.postgres` (or `Tx.postgres`) and says it both ways."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from .sqlite.schema import Migration

__all__ = ["CHANGES_CHANNEL", "Backend", "Conn", "Cursor"]

# What each commit changed, for the other processes on the same database (PostgreSQL's NOTIFY).
CHANGES_CHANNEL = "mcp_memory_changes"


class Cursor(Protocol):
    """The rows of one executed statement."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> Iterable[Any]: ...


class Conn(Protocol):
    """One connection: aiosqlite's, or PostgreSQL's adapter (pg.PgConn). Parameters are `?` (or
    `?N`) with a sequence, `:name` with a mapping."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[Cursor]: ...

    def execute_fetchall(self, sql: str, parameters: Any = ..., /) -> Awaitable[Iterable[Any]]: ...

    def executemany(self, sql: str, parameters: Iterable[Iterable[Any]], /) -> Awaitable[Any]: ...


class Copier(Protocol):
    """PostgreSQL's connections also load many rows in one COPY (bulk writes)."""

    def copy_rows(self, table: str, columns: str, rows: Iterable[Sequence[Any]], /) -> Awaitable[None]: ...


class Backend(Protocol):
    """Connections and transactions for one store. The store serialises its own units of work;
    `write()` also serialises writers across processes (SQLite's write lock, a PostgreSQL advisory
    lock), so that a check and the write it decides stay atomic on every backend."""

    @property
    def postgres(self) -> bool: ...

    @property
    def migrations(self) -> Sequence[Migration]: ...

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """The driver's errors, which the store turns into StoreError."""
        ...

    async def open(self) -> None: ...

    def hear(self, heard: Callable[[str], None]) -> None:
        """Call `heard` with the payload of every change another process announces, when the
        backend can tell (PostgreSQL); SQLite cannot, and never calls it."""
        ...

    async def close(self) -> None: ...

    def read(self) -> AbstractAsyncContextManager[Conn]:
        """A connection for reads outside any transaction."""
        ...

    def write(self) -> AbstractAsyncContextManager[Conn]:
        """A write transaction: committed when the block ends, rolled back when it raises."""
        ...

    def snapshot(self) -> AbstractAsyncContextManager[Conn]:
        """Reads that all see one state of the database."""
        ...

    def peek(self, sql: str, params: Sequence[Any]) -> list[Any] | None:
        """A short read without a thread hand-off, when the backend can; None otherwise."""
        ...

    def location(self) -> str:
        """Where the memories live, for people: a file path or a URL without its password."""
        ...

    async def size(self) -> int:
        """Bytes the database takes, as far as the backend can tell."""
        ...
