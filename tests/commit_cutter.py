"""A TCP proxy in front of PostgreSQL that cuts one connection at its COMMIT, for the tests of
honest write outcomes: either once the server has answered the COMMIT (the transaction committed,
the client never hears so) or before the COMMIT reaches the server (it never commits).

A COMMIT that took effect is recognised in the server's answer (CommandComplete `COMMIT`); one
on its way, in the client's messages: a simple Query, a Parse of `COMMIT`, or a Bind of the
statement a Parse prepared it as (the driver prepares a statement it runs often, and sends only
its name afterwards)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

Cut = Literal["after", "before"]
_COMMITTED = b"C\x00\x00\x00\x0bCOMMIT\x00"  # CommandComplete, tag COMMIT
_UNTYPED = {80877102, 80877103, 80877104}  # CancelRequest, SSLRequest, GSSENCRequest: 8 bytes, no type


class _Messages:
    """The client's side of the protocol, message by message: which of them run COMMIT."""

    def __init__(self) -> None:
        self._buffer = b""
        self._started = False  # the StartupMessage is behind (messages are typed from then on)
        self._commits: set[bytes] = set()  # names of prepared statements that are COMMIT

    def commits(self, data: bytes) -> bool:
        """Whether `data` completes a message that runs COMMIT."""
        self._buffer += data
        found = False
        while True:
            if not self._started:
                if len(self._buffer) < 8:
                    return found
                size = int.from_bytes(self._buffer[:4], "big")
                code = int.from_bytes(self._buffer[4:8], "big")
                if len(self._buffer) < size:
                    return found
                self._buffer = self._buffer[size:]
                self._started = code not in _UNTYPED
                continue
            if len(self._buffer) < 5:
                return found
            kind, size = self._buffer[:1], int.from_bytes(self._buffer[1:5], "big")
            if len(self._buffer) < 1 + size:
                return found
            body, self._buffer = self._buffer[5 : 1 + size], self._buffer[1 + size :]
            found |= self._runs_commit(kind, body)

    def _runs_commit(self, kind: bytes, body: bytes) -> bool:
        if kind == b"Q":
            return body.rstrip(b"\x00").strip().upper() == b"COMMIT"
        if kind == b"P":
            name, query = body.split(b"\x00")[:2]
            if query.strip().upper() == b"COMMIT":
                self._commits.add(name)
                return True
        if kind == b"B":
            statement = body.split(b"\x00")[1]
            return statement != b"" and statement in self._commits
        return False


@dataclass
class CommitCutter:
    """Forwards 127.0.0.1:`port` to the server of `upstream`; `arm(...)` cuts the next COMMIT."""

    upstream: str
    port: int = 0
    cuts: int = 0  # connections cut so far
    _armed: Cut | None = None
    _server: asyncio.Server | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)

    def url(self) -> str:
        """`upstream` with the proxy's address instead of the server's."""
        parts = urlsplit(self.upstream)
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0] + "@" if len(netloc) == 2 else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def arm(self, cut: Cut) -> None:
        self._armed = cut

    @property
    def armed(self) -> bool:
        return self._armed is not None

    async def _pipe(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        target = urlsplit(self.upstream)
        server_r, server_w = await asyncio.open_connection(target.hostname, target.port)
        self._open |= {client_w, server_w}
        messages = _Messages()

        def cut() -> None:
            self.cuts += 1
            for writer in (client_w, server_w):
                writer.transport.abort()

        async def to_server() -> None:
            while data := await client_r.read(65536):
                if messages.commits(data) and self._armed == "before":
                    self._armed = None
                    cut()  # the COMMIT never reaches the server
                    return
                server_w.write(data)
                await server_w.drain()
            server_w.close()

        async def to_client() -> None:
            while data := await server_r.read(65536):
                if self._armed == "after" and _COMMITTED in data:
                    self._armed = None
                    cut()  # the server committed; its answer never reaches the client
                    return
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        try:
            await asyncio.gather(to_server(), to_client())
        except (ConnectionError, OSError):
            pass
        finally:
            for writer in (client_w, server_w):
                writer.transport.abort()
                self._open.discard(writer)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CommitCutter]:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            self._server.close()
            for writer in list(self._open):
                writer.transport.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
