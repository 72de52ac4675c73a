"""Serving: streamable HTTP through uvicorn (with the dashboard at /ui), the dashboard alone, and
stdio with a reply to every line that is not a message."""

# No `from __future__ import annotations`, like the other modules that use the SDK's types.

import asyncio
import errno
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any, Self

import anyio
import anyio.to_thread
import mcp_types
import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from ..config.config import Config
from ..errors import CannotListen
from ..runtime.access import Access, BearerGate, HostGuard, origin_patterns
from ..runtime.namespaces import Opened, Spaces
from .connections import Acceptor, connection_cap, raise_open_file_limit
from .log_repeats import repeats_counted
from .read_deadlines import deadline_protocol
from .session_quota import SessionQuota

__all__ = [
    "MAX_LINE",
    "Root",
    "http_app",
    "listen_socket",
    "serve_dashboard",
    "serve_http",
    "serve_stdio",
    "transport_security",
]

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
    `opened` (which the server's lifespan fills), the dashboard at /ui over the same namespaces.
    `GET /` leads a browser on: to the dashboard, or (without it) to a page naming /mcp.

    Sessions are counted per token (session_quota.py; without tokens all clients are one caller);
    the SDK's own total, which answers 503 to everyone once reached, is set above what all callers
    together may hold, so no caller alone can reach it."""
    per_token = config.http.sessions_per_token
    app: Any = server.streamable_http_app(
        streamable_http_path="/mcp",
        max_request_body_size=config.limits.max_body_bytes,
        transport_security=transport_security(config.http.allowed_hosts),
        # Stateless: every POST is served on its own, answered on its own response stream (SSE, so
        # the request's progress and log messages still reach the client), and no request needs
        # the replica that served the one before; json_response stays off for that reason.
        stateless_http=config.http.stateless_http,
        session_idle_timeout=DEFAULT_SESSION_IDLE_TIMEOUT,
        max_sessions=per_token * ((access.callers if access is not None else 1) + 1),
    )
    if not config.http.stateless_http:
        app = SessionQuota(app, per_token, DEFAULT_SESSION_IDLE_TIMEOUT)
    app = HostGuard(app, config.http.allowed_hosts)
    if config.http.stateless_http:
        app = _NoListenStream(app)
    if opened is not None:
        from ..http import dashboard  # HTTP only: stdio does not load the dashboard's modules

        return Root(dashboard.beside(app, config, opened, access), dashboard.PREFIX + "/")
    return Root(BearerGate(app, access) if access is not None else app, None)


_ROOT_PAGE = (
    b"<!doctype html>\n<html lang=en><meta charset=utf-8><title>jiyi</title>\n"
    b"<p>This is an MCP server: connect an MCP client (streamable HTTP) to <a href=/mcp>/mcp</a>.</p>\n"
)


class Root:
    """`GET /` (and HEAD): a redirect to `target` (the dashboard), or with no target a small page
    that names the MCP endpoint; every other request goes to `app`. Neither says more than the
    address does, so no token is asked for."""

    def __init__(self, app: Any, target: str | None) -> None:
        self._app = app
        self._target = target

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/" or scope["method"] not in ("GET", "HEAD"):
            await self._app(scope, receive, send)
            return
        if self._target is not None:
            status, body = 302, b""
            headers = [(b"location", self._target.encode()), (b"content-length", b"0")]
        else:
            status, body = 200, _ROOT_PAGE
            headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        headers.append((b"cache-control", b"no-store"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


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
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve `http_app`; `ready` gets the base URL (`http://host:port`) once the socket listens.
    uvicorn logs through the standard logging setup (stderr), not its own default configuration,
    which would print access lines to stdout. Raises CannotListen when the address is taken."""
    if config.http.stateless_http and not config.http.state_keys:
        log.warning(
            "stateless without MCP_MEMORY_STATE_KEYS: a 2026-07-28 call that asks the client's model (extract, "
            "refresh_profile) fails when its second round reaches another replica; give every replica the same key"
        )
    await _serve(http_app(server, config, access, opened), config, host, port, ready)


async def serve_dashboard(
    config: Config, host: str, port: int, access: Access | None, ready: Callable[[str], None]
) -> None:
    """Serve only the dashboard; `ready` gets its URL once the socket listens (the port bound,
    for port 0). Raises CannotListen when the address is taken."""
    from ..http import dashboard

    app = Root(dashboard.standalone(config, access), dashboard.PREFIX + "/")
    await _serve(app, config, host, port, lambda base: ready(base + dashboard.PREFIX))


def listen_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound as uvicorn binds it. Bound here, before anything starts: a port
    in use is one clear error, not uvicorn's log lines after the database was opened for nothing."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        name = f"[{host}]" if ":" in host else host
        raise CannotListen(f"cannot listen on {name}:{port}: {_why(exc)}") from None
    sock.set_inheritable(True)
    return sock


def _why(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return "no such host name"
    reasons = {
        errno.EADDRINUSE: "the address is already in use (another server on that port?); choose another with --port",
        errno.EACCES: "permission denied (ports below 1024 need privileges)",
        errno.EADDRNOTAVAIL: "the address is not one of this machine's",
    }
    return reasons.get(exc.errno or 0, exc.strerror or str(exc))


async def _serve(app: Any, config: Config, host: str, port: int, ready: Callable[[str], None] | None = None) -> None:
    """uvicorn's server with connections accepted here (connections.py: at most the connection
    cap open, the rest waiting in the listen queue) and each served by `deadline_protocol`
    (read_deadlines.py); repeated log records counted instead of written (log_repeats.py)."""
    import uvicorn

    sock = listen_socket(host, port)
    name = f"[{host}]" if ":" in host else host
    cap = connection_cap(config.http.max_connections, raise_open_file_limit())
    deadlines = config.http.read_timeout_s, config.http.body_timeout_s
    acceptors: list[Acceptor] = []

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn's start-up (the app's lifespan) with no socket of its own to serve.
            await super().startup([])
            if not self.started:
                return
            protocol = deadline_protocol()

            def connection(release: Callable[[], None]) -> asyncio.Protocol:
                return protocol(self.config, self.server_state, self.lifespan.state, release, *deadlines)

            acceptor = Acceptor(sock, connection, cap, self.config.backlog)
            acceptor.start()
            acceptors.append(acceptor)
            log.debug("at most %d connections open at once", cap)
            if ready is not None:
                ready(f"http://{name}:{sock.getsockname()[1]}")

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for acceptor in acceptors:
                acceptor.close()
                await acceptor.wait_closed()
            await super().shutdown(sockets)

    level = logging.getLogger().getEffectiveLevel()
    # No WebSocket endpoint: a request asking for an upgrade is served as plain HTTP.
    settings = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=level, ws="none")
    with sock, repeats_counted(_COUNTED):
        await Server(settings).serve()


# The project's loggers that can repeat a record per connection or per request: counted before
# their records also reach the MCP clients (log_messages.LogRelay), not only on stderr.
_COUNTED = tuple(
    f"{__package__}.{module}" for module in ("connections", "read_deadlines", "session_quota", "transports")
)


async def serve_stdio(server: MCPServer[Spaces]) -> None:
    """MCP over stdin/stdout, one JSON-RPC message per line. A line that is not a message gets
    the JSON-RPC error reply (-32700 when it is not JSON, -32600 when it is JSON but not a
    message, or longer than `MAX_LINE`), is logged on stderr, and serving goes on. The SDK's
    transport would drop it without a word, leaving the client to its own timeout; it would also
    hold a line of any length whole and run a line of invalid UTF-8 with the bytes replaced
    (`python -m benchmarks.stdio_transport --malformed`). Lines are read and written in worker
    threads, as the SDK's transport does: reading the pipes on the event loop instead saved some
    server CPU per call but no round-trip time (BENCHMARKS.md, "stdio transport and tool
    schemas").

    While serving, fd 0 reads /dev/null and fd 1 writes to stderr, as in the SDK's transport, so
    a stray print or a child process cannot corrupt the protocol stream. Windows gets the SDK's
    transport."""
    if sys.platform == "win32":
        return await server.run_stdio_async()
    import fcntl  # not on Windows

    wire = (fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3))
    blocking = [os.get_blocking(fd) for fd in wire]
    reader: _Lines | None = None
    try:  # the streams below use duplicates of the wire; fds 0 and 1 get it back at the end
        os.dup2(null := os.open(os.devnull, os.O_RDONLY), 0)
        os.close(null)
        os.dup2(2, 1)
        for fd in wire:
            os.set_blocking(fd, True)
        writer = _LineWriter(wire[1])
        reader = _Lines(_thread_reader(wire[0]))
        # The SDK runs an MCPServer only over its own transports (`run_stdio_async` and the HTTP
        # apps take no streams); its session over other streams is the low-level server's `run`,
        # which MCPServer keeps in a private attribute with no public accessor.
        lowlevel = server._lowlevel_server
        await lowlevel.run(_LineReader(reader, writer), writer, lowlevel.create_initialization_options())
    finally:
        for fd, dup in enumerate(wire):
            with suppress(OSError):
                os.dup2(dup, fd)
                os.set_blocking(fd, blocking[fd])
            if fd == 0 and reader is not None and reader.reading:
                continue  # a worker thread still waits on it: closed, the number could be reused under it
            os.close(dup)


MAX_LINE = 32 * 1024 * 1024  # bytes in one JSON-RPC line; a longer one is refused and skipped unread
_CHUNK = 64 * 1024  # bytes asked of stdin at a time


def _thread_reader(fd: int) -> Callable[[int], Awaitable[bytes]]:
    async def read(size: int) -> bytes:
        # Abandoned on cancellation: a read from a terminal can wait for ever.
        return await anyio.to_thread.run_sync(os.read, fd, size, abandon_on_cancel=True)

    return read


class _Lines:
    """Lines from a byte source, without their newline. A line over `MAX_LINE` bytes is read and
    dropped chunk by chunk, never held: `next` gives its length instead."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]]) -> None:
        self._read = read
        self._buffer = bytearray()
        self._eof = False
        self.reading = False  # a read is under way

    async def next(self) -> bytes | int | None:
        """The next line; the length of a line too long to keep; None at the end of input."""
        parts: list[bytes] = []  # joined once at the end: growing one buffer would copy it again and again
        size = 0
        while True:
            end = self._buffer.find(b"\n")
            piece = bytes(self._buffer if end < 0 else self._buffer[:end])
            size += len(piece)
            if size <= MAX_LINE:
                parts.append(piece)
            else:
                parts.clear()  # over the limit: nothing more of this line is kept
            if end >= 0:
                del self._buffer[: end + 1]
                return b"".join(parts) if size <= MAX_LINE else size
            self._buffer.clear()
            if self._eof:  # the last line, without a newline
                return None if size == 0 else b"".join(parts) if size <= MAX_LINE else size
            self.reading = True
            chunk = await self._read(_CHUNK)
            self.reading = False
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


class _Stream:
    closed = False

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closed = True


class _LineWriter(_Stream):
    """The SDK's write stream: each message one line on stdout, written in a worker thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()  # a line is written whole before the next one starts

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        try:
            async with self._lock:
                await anyio.to_thread.run_sync(_write_all, self._fd, line.encode("utf-8", errors="replace"))
        except OSError as exc:  # the client closed its end
            raise anyio.BrokenResourceError from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _LineReader(_Stream):
    """The SDK's read stream: one JSON-RPC message per line. A line that is not one is answered
    here with the JSON-RPC error and logged, and reading goes on."""

    def __init__(self, lines: _Lines, writer: _LineWriter) -> None:
        self._lines = lines
        self._writer = writer

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage:
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            try:
                line = await self._lines.next()
            except OSError as exc:
                raise anyio.EndOfStream from exc
            if line is None:
                raise anyio.EndOfStream
            if isinstance(line, int):
                log.warning("stdin: refused a line of %d bytes, over the limit of %d", line, MAX_LINE)
                await self._refuse(
                    None, INVALID_REQUEST, f"Invalid request: the line is {line} bytes, over the limit of {MAX_LINE}"
                )
                continue
            if not line.strip():
                continue  # blank lines between messages carry nothing
            # Parsed first, then validated: an invalid message's validation errors then point at the
            # parsed value instead of each holding a copy of the input (220 MiB for a 20 MB line).
            try:
                value = pydantic_core.from_json(line)
            except ValueError as exc:  # not JSON, not UTF-8, or nested deeper than the parser goes
                await self._refuse(None, PARSE_ERROR, f"Parse error: {exc}")
                continue
            try:
                return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False))
            except ValidationError:
                await self._refuse(*_invalid(value))

    async def _refuse(self, request_id: str | int | None, code: int, message: str) -> None:
        if code != INVALID_REQUEST or request_id is None:
            log.warning("stdin: %s", message)
        else:
            log.warning("stdin: message %r: %s", request_id, message)
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client left
            await self._writer.send(SessionMessage(error))


def _invalid(value: Any) -> tuple[str | int | None, int, str]:
    """The reply to JSON that is not a JSON-RPC message: (its id if one can be read, code, message)."""
    if isinstance(value, list):
        return None, INVALID_REQUEST, "Invalid request: a batch (JSON array) is not accepted; send one message a line"
    found = value.get("id") if isinstance(value, dict) else None
    request_id = found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
    return request_id, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response"
