"""MCP log messages: the server's own log records (loggers `mcp_memory_server.*`) sent to MCP
clients as `notifications/message`, beside stderr, which keeps every record as before.

What reaches which client:

- A record logged while serving a request (cleanup results, secrets withheld from a memory) goes
  to the client that made the request, on that request's stream, before its answer.
- A record logged outside any request (start-up, schema migrations, the search index rebuilt,
  periodic maintenance) goes to every connected handshake-era client of its namespace. Behind
  tokens (`private`: namespaces of different people), a record of no namespace (the names served,
  a dashboard call's) stays on stderr unless it is the database file's own (`SHARED_LOGGER`:
  migrations, index rebuilds), which every namespace shares. The last
  `BACKLOG` of them logged while no such client was connected are kept and sent to each client
  when it has initialized (over HTTP with the answer to its `initialize`, on that request's
  stream: the SDK drops a notification outside requests until the client opens its GET stream),
  so a client started with the server still hears how it started.
- Handshake-era clients (protocol versions before 2026-07-28) choose their level with
  `logging/setLevel`; until they do they get `--log-level` (`MCP_MEMORY_LOG_LEVEL`) and above.
  A lower level than the server's makes the project's loggers produce those records for that
  client; stderr stays at `--log-level`.
- 2026-07-28 clients have no connection to be told of anything outside a request, and no
  `logging/setLevel`: the SDK sends a log message only for a request whose `_meta` opts in
  (`io.modelcontextprotocol/logLevel`), at that level and above. They get their requests'
  records, and the start-up backlog in answer to `server/discover`, when they opt in.
- Stateless HTTP (`MCP_MEMORY_STATELESS`): a handshake-era client's requests may each reach
  another replica, and none of them outlives its answer. Each request gets its own records at
  `--log-level` and above, the backlog comes with the answer to `initialize`, records outside
  requests reach no client, and `logging/setLevel` is refused with a message that says why.
"""

# No `from __future__ import annotations`, like the other modules that use the SDK's types.

import asyncio
import logging
import warnings
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, get_args

import anyio
import anyio.abc
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    EmptyResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..runtime.access import request_namespace
from ..runtime.namespaces import SERVING

__all__ = [
    "BACKLOG",
    "PER_REQUEST",
    "PROJECT_LOGGER",
    "QUEUED",
    "SHARED_LOGGER",
    "STATELESS_SET_LEVEL",
    "LogRelay",
    "mcp_level",
    "python_level",
]

log = logging.getLogger(__name__)

PROJECT_LOGGER = "mcp_memory_server"
SHARED_LOGGER = "mcp_memory_server.store.store"  # the database file's events, the same for every namespace
BACKLOG = 20  # records kept for clients that connect later
# Records waiting for slow clients, and those of one request: past these the oldest waiting ones,
# and a request's later ones, go to stderr only, so a flood of records or a client that takes
# its `_SEND_TIMEOUT` for each never grows the server's memory (stderr has every record).
QUEUED = 1000
PER_REQUEST = 100
_SEND_TIMEOUT = 2.0  # seconds one log message may take to reach a client before it is dropped
STATELESS_SET_LEVEL = (
    "logging/setLevel needs a session, and this server is stateless (MCP_MEMORY_STATELESS): the next request "
    "may reach another replica. Each request gets its log messages at the server's level (MCP_MEMORY_LOG_LEVEL) "
    "and above; with protocol 2026-07-28 a request chooses its own level in _meta."
)
_INITIALIZE_WAIT = 120.0  # seconds a connection has to initialize before it is no longer waited for

# MCP's levels (RFC 5424, ascending) and the Python level each one starts at.
_THRESHOLDS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 55,
    "emergency": 60,
}
assert tuple(_THRESHOLDS) == get_args(LoggingLevel)


def python_level(level: str) -> int:
    """The Python level an MCP level (or a Python level name) starts at."""
    return _THRESHOLDS[level.lower()]


def mcp_level(levelno: int) -> LoggingLevel:
    """The MCP level of a Python record: the highest one whose threshold it reaches."""
    chosen: LoggingLevel = "debug"
    for name, threshold in _THRESHOLDS.items():
        if levelno >= threshold:
            chosen = name  # type: ignore[assignment]
    return chosen


@dataclass(frozen=True)
class _Entry:
    levelno: int
    logger: str
    data: str
    namespace: str | None  # None: the whole process's (start-up, migrations)

    @property
    def params(self) -> LoggingMessageNotificationParams:
        return LoggingMessageNotificationParams(level=mcp_level(self.levelno), logger=self.logger, data=self.data)


class _Scope:
    """The records of one request, sent before its answer. Closed once they are sent: a task the
    request started (and so its context) logs to everyone after that."""

    def __init__(self, entries: list[_Entry]) -> None:
        self.entries = entries
        self.open = True


_REQUEST: ContextVar[_Scope | None] = ContextVar("mcp_memory_server_log_scope", default=None)


class _Peer:
    """A handshake-era connection: its namespace, its level, and whether it has initialized."""

    def __init__(self, connection: Connection, namespace: str, threshold: int) -> None:
        self.connection = connection
        self.namespace = namespace
        self.threshold = threshold
        self.ready = False
        self.welcome_pending = False  # HTTP: the backlog goes with the answer to `initialize`

    def wants(self, entry: _Entry) -> bool:
        return entry.levelno >= self.threshold and entry.namespace in (None, self.namespace)


class LogRelay(logging.Handler):
    """`install` it on the server, `run` it while the server runs (the lifespan)."""

    def __init__(
        self, default_level: str, default_namespace: str = "", *, private: bool = False, stateless: bool = False
    ) -> None:
        super().__init__(logging.DEBUG)
        self._private = private
        self._stateless = stateless
        self._default = python_level(default_level)
        self._namespace = default_namespace
        self._peers: dict[Connection, _Peer] = {}
        self._backlog: deque[_Entry] = deque(maxlen=BACKLOG)
        self._queue: deque[_Entry] = deque(maxlen=QUEUED)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: anyio.Event | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._logger = logging.getLogger(PROJECT_LOGGER)
        self._saved_level = logging.NOTSET
        self._stdio_told = False

    def install(self, server: MCPServer[Any]) -> None:
        server.middleware.append(self._track)
        # MCPServer has no API for it; with a handler registered the SDK advertises `logging`.
        server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)

    # ---- records in: any thread, never blocking, never raising -------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == __name__:  # our own troubles go to stderr only, never round again
            return
        try:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f": {record.exc_info[1]!r}"
            entry = _Entry(record.levelno, record.name, text, SERVING.get())
            scope = _REQUEST.get()
            if scope is not None and scope.open:
                if len(scope.entries) < PER_REQUEST:
                    scope.entries.append(entry)
                return
            if self._private and entry.namespace is None and record.name != SHARED_LOGGER:
                return  # whose it is cannot be told: no one's client hears it
            self._queue.append(entry)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._signal)
        except Exception:
            self.handleError(record)

    def _signal(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # ---- delivery ------------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Forward records to clients until cancelled; started once the records are heard."""
        self._loop = asyncio.get_running_loop()
        self._wake = anyio.Event()
        self._wake.set()
        self._saved_level = self._logger.level
        self._logger.addHandler(self)
        self._adjust_logger()
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                task_status.started()
                while True:
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    while self._queue:
                        await self._broadcast(self._queue.popleft())
        finally:
            self._tasks = None
            self._loop = None
            self._logger.removeHandler(self)
            self._logger.setLevel(self._saved_level)

    async def _broadcast(self, entry: _Entry) -> None:
        ready = [p for p in self._peers.values() if p.ready]
        if not ready:
            self._backlog.append(entry)
        for peer in ready:
            if peer.wants(entry):
                await self._send(peer.connection, entry)

    async def _send(self, connection: Connection, entry: _Entry) -> None:
        with anyio.move_on_after(_SEND_TIMEOUT):
            try:
                # Unset optional fields (`_meta`) stay out: TypeScript clients refuse a null there.
                params = entry.params.model_dump(mode="json", by_alias=True, exclude_unset=True)
                await connection.notify("notifications/message", params)
            except Exception as exc:  # the client went away; it leaves when the SDK closes it
                log.debug("log message not delivered: %r", exc)

    async def _welcome(self, peer: _Peer) -> None:
        """Once the client has initialized: the backlog, then what comes."""
        with anyio.move_on_after(_INITIALIZE_WAIT):
            await peer.connection.initialized.wait()
        if not peer.connection.initialized.is_set() or peer.connection not in self._peers:
            return  # it never initialized, or left
        for entry in list(self._backlog):
            if peer.wants(entry):
                await self._send(peer.connection, entry)
        peer.ready = True

    def _adjust_logger(self) -> None:
        """The project's loggers produce what stderr or any client wants, and no more."""
        stderr = self._saved_level or logging.root.level
        wanted = min([stderr, self._default, *(p.threshold for p in self._peers.values())])
        self._logger.setLevel(wanted)

    # ---- the MCP edge --------------------------------------------------------------------------

    def _peer(self, ctx: ServerRequestContext[Any, Any]) -> _Peer | None:
        """The request's handshake-era connection (registered on first sight), else None."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        # As in server/notify.py: the SDK gives handlers no public way to the request's connection yet.
        connection = getattr(ctx.session, "_connection", None)
        if not isinstance(connection, Connection):
            return None
        if self._stateless and ctx.request is not None:
            # A connection of this request only: not kept (records outside requests would find it
            # gone), the default level, and the backlog only for the client's `initialize`.
            transient = _Peer(connection, self._request_namespace(ctx), self._default)
            transient.welcome_pending = ctx.method == "initialize"
            return transient
        peer = self._peers.get(connection)
        if peer is None:
            peer = _Peer(connection, self._request_namespace(ctx), self._default)
            self._peers[connection] = peer
            connection.exit_stack.callback(self._leave, connection)
            if ctx.request is not None:
                # Streamable HTTP drops a notification outside a request while the client has no
                # GET stream open, as just after `initialize`: the request's own stream is sure.
                peer.welcome_pending = True
            elif self._tasks is not None:
                self._tasks.start_soon(self._welcome, peer)
        return peer

    def _request_namespace(self, ctx: ServerRequestContext[Any, Any]) -> str:
        namespace = request_namespace(ctx.request)
        return self._namespace if namespace is None else namespace

    def _leave(self, connection: Connection) -> None:
        if self._peers.pop(connection, None) is not None:
            self._adjust_logger()

    async def _track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: registers handshake-era connections and sends each request's own records
        on its stream before its answer."""
        peer = self._peer(ctx)
        welcome = peer is not None and peer.welcome_pending
        if peer is not None and welcome:
            peer.welcome_pending = False
            scope = _Scope([e for e in self._backlog if peer.wants(e)])
        else:
            scope = _Scope(self._modern_backlog(ctx) if peer is None else [])
        token = _REQUEST.set(scope)
        try:
            return await call_next(ctx)
        finally:
            _REQUEST.reset(token)
            scope.open = False
            with anyio.CancelScope(shield=True), anyio.move_on_after(_SEND_TIMEOUT):
                await self._send_scoped(ctx, peer, scope.entries)
            if peer is not None and welcome:
                peer.ready = True

    def _modern_backlog(self, ctx: ServerRequestContext[Any, Any]) -> list[_Entry]:
        """What a 2026-07-28 client missed: the backlog, in answer to `server/discover` (its first
        call) or, over stdio (one client per process), to its first request that opts in to logs."""
        opted_in = LOG_LEVEL_META_KEY in (ctx.meta or {})
        first_over_stdio = ctx.request is None and opted_in and not self._stdio_told
        if ctx.method != "server/discover" and not first_over_stdio:
            return []
        if ctx.request is None and opted_in:
            self._stdio_told = True
        namespace = self._request_namespace(ctx)
        return [e for e in self._backlog if e.namespace in (None, namespace)]

    async def _send_scoped(
        self, ctx: ServerRequestContext[Any, Any], peer: _Peer | None, entries: list[_Entry]
    ) -> None:
        for entry in entries:
            try:
                if peer is not None:  # handshake era: our filter, on the request's stream
                    if entry.levelno >= peer.threshold:
                        notification = LoggingMessageNotification(params=entry.params)
                        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
                    continue
                # 2026-07-28: the SDK sends only what the request's `_meta` opted in to.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    sending = ctx.session.send_log_message(
                        entry.params.level, entry.data, entry.logger, related_request_id=ctx.request_id
                    )
                await sending
            except Exception as exc:  # a client that cannot take it still gets its answer
                log.debug("log message not delivered: %r", exc)
                return

    async def _set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        if self._stateless and ctx.request is not None:
            raise MCPError(INVALID_REQUEST, STATELESS_SET_LEVEL)
        peer = self._peer(ctx)
        if peer is not None:
            peer.threshold = python_level(params.level)
            self._adjust_logger()
        return EmptyResult()
