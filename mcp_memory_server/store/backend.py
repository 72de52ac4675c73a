"""What the store asks of a database backend, whichever it is: the embedded SQLite file
(sqlite/backend.py, the default) or a PostgreSQL server (postgres/backend.py, chosen by a
`postgresql://` URL).

Each backend brings its own statements (`Backend.statements`, see store/statements.py), written
in its own dialect; the store's operations ask for them by name and run them on a `Conn`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .sqlite.schema import Migration

if TYPE_CHECKING:
    from .statements import Statements

__all__ = ["CHANGES_CHANNEL", "Backend", "CommitUnknown", "Conn", "Cursor"]

# What each commit changed, for the other processes on the same database (PostgreSQL's NOTIFY).
CHANGES_CHANNEL = "mcp_memory_changes"


class CommitUnknown(Exception):
    """The connection was lost while COMMIT was in flight: sent, with no answer. The transaction
    committed whole or not at all, and this connection cannot tell which (the store asks again on
    another one, see `Store.transaction`). A failure before COMMIT was sent is the driver's own
    error: that transaction was rolled back."""


class Cursor(Protocol):
    """The rows of one executed statement."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> Iterable[Any]: ...


class Conn(Protocol):
    """One connection: aiosqlite's, or PostgreSQL's adapter (postgres/backend.PgConn). Parameters
    are the backend's own, as its statements write them."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[Cursor]: ...

    def execute_fetchall(self, sql: str, parameters: Any = ..., /) -> Awaitable[Iterable[Any]]: ...

    def executemany(self, sql: str, parameters: Iterable[Iterable[Any]], /) -> Awaitable[Any]: ...


class Backend(Protocol):
    """Connections and transactions for one store. The store serialises its own units of work;
    `write()` also serialises writers across processes (SQLite's write lock, a PostgreSQL advisory
    lock), so that a check and the write it decides stay atomic on every backend."""

    @property
    def statements(self) -> Statements:
        """The store's statements in this backend's dialect."""
        ...

    @property
    def reads_alongside(self) -> bool:
        """Whether reads run on connections of their own, alongside each other and the writes
        (PostgreSQL's pool); SQLite's store has one connection, which its lock hands out."""
        ...

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
        """A write transaction: committed when the block ends, rolled back when it raises.
        CommitUnknown when the connection is lost while its COMMIT is in flight."""
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
