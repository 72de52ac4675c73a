"""Serving: streamable HTTP through uvicorn (with the dashboard at /ui), the dashboard alone, and
stdio on the event loop itself."""

# No `from __future__ import annotations`, like the other modules that use the SDK's types.

import asyncio
import logging
import os
import socket
import stat
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Self

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from .access import Access, BearerGate, origin_patterns
from .config import Config
from .spaces import Opened, Spaces

__all__ = ["http_app", "serve_dashboard", "serve_http", "serve_stdio", "transport_security"]

log = logging.getLogger(__name__)


def transport_security(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection, always on: a request must name this server in its Host header
    (loopback, or one of `allowed_hosts`), and a browser's Origin must be one of those hosts, so
    a web page on another site cannot reach the server through a name it resolves to us."""
    hosts, origins = origin_patterns(allowed_hosts)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def http_app(server: MCPServer[Spaces], config: Config, access: Access | None, opened: Opened | None = None) -> Any:
    """The ASGI app of HTTP mode: streamable HTTP at /mcp with its request-size limit and
    DNS-rebinding protection, behind the bearer-token gate when tokens are configured; with
    `opened` (which the server's lifespan fills), the dashboard at /ui over the same namespaces."""
    app: Any = server.streamable_http_app(
        streamable_http_path="/mcp",
        max_request_body_size=config.max_body_bytes,
        transport_security=transport_security(config.allowed_hosts),
        # Stateless: every POST is served on its own, answered on its own response stream (SSE, so
        # the request's progress and log messages still reach the client), and no request needs
        # the replica that served the one before; json_response stays off for that reason.
        stateless_http=config.stateless_http,
    )
    if config.stateless_http:
        app = _NoListenStream(app)
    if opened is not None:
        from . import dashboard  # HTTP only: stdio does not load the dashboard's modules

        return dashboard.beside(app, config, opened, access)
    return BearerGate(app, access) if access is not None else app


class _NoListenStream:
    """Stateless HTTP has no session for a GET stream to belong to: nothing would ever be sent on
    it, and it would hold a replica's connection open. The spec's answer for an endpoint without
    one is 405, which clients take as "no server-initiated messages" and go on."""

    def __init__(self, app: Any) -> None:
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == "/mcp":
            headers = [(b"allow", b"POST"), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._app(scope, receive, send)


async def serve_http(
    server: MCPServer[Spaces],
    config: Config,
    host: str,
    port: int,
    access: Access | None = None,
    opened: Opened | None = None,
) -> None:
    """Serve `http_app`. uvicorn logs through the standard logging setup (stderr), not its own
    default configuration, which would print access lines to stdout."""
    if config.stateless_http and not config.state_keys:
        log.warning(
            "stateless without MCP_MEMORY_STATE_KEYS: a 2026-07-28 call that asks the client's model (extract, "
            "refresh_profile) fails when its second round reaches another replica; give every replica the same key"
        )
    await _serve(http_app(server, config, access, opened), host, port)


async def serve_dashboard(
    config: Config, host: str, port: int, access: Access | None, ready: Callable[[str], None]
) -> None:
    """Serve only the dashboard; `ready` gets its URL once the socket listens (the port bound,
    for port 0)."""
    from . import dashboard

    await _serve(dashboard.standalone(config, access), host, port, ready)


async def _serve(app: Any, host: str, port: int, ready: Callable[[str], None] | None = None) -> None:
    import uvicorn

    from .dashboard import PREFIX

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if ready is not None and self.started:
                bound = self.servers[0].sockets[0].getsockname()[1] if self.servers else port
                name = f"[{host}]" if ":" in host else host
                ready(f"http://{name}:{bound}{PREFIX}")

    level = logging.getLogger().getEffectiveLevel()
    await Server(uvicorn.Config(app, host=host, port=port, log_config=None, log_level=level)).serve()


async def serve_stdio(server: MCPServer[Spaces]) -> None:
    """MCP over stdin/stdout. The SDK's stdio transport hands every line read, write and flush to
    a worker thread: three thread hand-offs per request, each a thread wake-up and a wait for the
    GIL. When stdin and stdout are pipes or sockets (how MCP clients start a server) the event
    loop reads and writes them itself instead, with the same guard as the SDK: while serving, fd 0
    reads /dev/null and fd 1 writes to stderr, so a stray print or a child process cannot corrupt
    the protocol stream. A terminal, a file, Windows or another event loop get the SDK's transport."""
    try:
        modes = [os.fstat(fd).st_mode for fd in (0, 1)]  # Node's child processes get sockets
        if sys.platform == "win32" or not all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in modes):
            raise OSError("stdin and stdout are not both pipes or sockets")
        loop = asyncio.get_running_loop()  # RuntimeError under another event loop
        import fcntl  # not on Windows

        wire = (fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3))
        blocking = [os.get_blocking(fd) for fd in wire]
    except (OSError, RuntimeError) as exc:
        log.debug("stdio through the SDK's transport: %s", exc)
        return await server.run_stdio_async()
    reader = asyncio.StreamReader(limit=_MAX_LINE)
    try:  # the transports own (and close) duplicates of the wire; fds 0 and 1 get it back at the end
        os.dup2(null := os.open(os.devnull, os.O_RDONLY), 0)
        os.close(null)
        os.dup2(2, 1)
        pipe_in, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(wire[0]), "rb", buffering=0)
        )
        pipe_out, flow = await loop.connect_write_pipe(  # a reader's protocol: it can wait for close
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(os.dup(wire[1]), "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(pipe_out, flow, None, loop)
        # The SDK has no public way to run an MCPServer over other streams than its transports.
        lowlevel = server._lowlevel_server
        await lowlevel.run(_LineReader(reader), _LineWriter(writer), lowlevel.create_initialization_options())
        writer.close()
        with suppress(OSError):  # the client may be gone
            await writer.wait_closed()
        pipe_in.close()
    finally:
        for fd, dup in enumerate(wire):
            with suppress(OSError):
                os.dup2(dup, fd)
                os.set_blocking(fd, blocking[fd])  # asyncio made the pipe non-blocking
            os.close(dup)


_MAX_LINE = 32 * 1024 * 1024  # bytes in one JSON-RPC line; a longer line is refused as unparsable


class _Stream:
    closed = False

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closed = True


class _LineReader(_Stream):
    """The SDK's read stream: one JSON-RPC message per line, unparsable ones as exceptions."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage | Exception:
        if self.closed:
            raise anyio.ClosedResourceError
        try:
            line = await self._reader.readline()
        except ValueError as exc:  # over _MAX_LINE
            return exc
        except OSError as exc:
            raise anyio.EndOfStream from exc
        if not line:
            raise anyio.EndOfStream
        try:
            text = line.decode("utf-8", errors="replace")
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except Exception as exc:  # handed to the SDK as the stdio transport does (it logs them)
            return exc


class _LineWriter(_Stream):
    """The SDK's write stream: each message one line on stdout."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        try:
            self._writer.write(line.encode("utf-8", errors="replace"))
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:  # the client closed its end
            raise anyio.BrokenResourceError from exc
