"""The MCP surface, and the only module that imports `mcp`: tools, resources and prompts are thin
wrappers that parse arguments, call one service function and return its pydantic model; and serving."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures, whose bounds
# come from the Config in scope when the server is built.

import asyncio
import json
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self, TypeVar

import anyio
import mcp_types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.message import SessionMessage
from mcp_types import ToolAnnotations
from pydantic import Field

from . import __version__, prompts
from .config import Config
from .errors import MemoryServerError, NotFound
from .models import ForgetResult, ListResult, RecallResult, RememberResult
from .segmenter import Segmenter
from .service import MemoryService
from .store import Store
from .validate import MAX_ID_LIST, MAX_KEY_CHARS, MAX_SESSION_CHARS

__all__ = ["AppState", "build_server", "serve_http", "serve_stdio"]

log = logging.getLogger(__name__)

T = TypeVar("T")
Ctx = Context["AppState"]

SERVER_NAME = "mcp-memory-server"


@dataclass(frozen=True)
class AppState:
    """What the lifespan opens once per process and every request uses."""

    config: Config
    store: Store
    service: MemoryService


# Static resources are called without a Context; this carries the lifespan state to them.
_CURRENT: ContextVar[AppState] = ContextVar("mcp_memory_server_state")


async def _carry_state(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    token = _CURRENT.set(ctx.lifespan_context)
    try:
        return await call_next(ctx)
    finally:
        _CURRENT.reset(token)


def _state(ctx: Ctx) -> AppState:
    return ctx.request_context.lifespan_context


def _client_name(ctx: Ctx) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


async def _tool(call: Awaitable[T]) -> T:
    """Our own errors become `isError` results with their message; anything else is a bug and is
    reported by the SDK as an internal error with a logged traceback."""
    try:
        return await call
    except MemoryServerError as exc:
        raise ToolError(str(exc)) from exc


async def _resource(call: Awaitable[T]) -> T:
    try:
        return await call
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemoryServerError as exc:
        raise ResourceError(str(exc)) from exc


async def _warm(store: Store) -> None:
    try:
        await store.warm()
    except MemoryServerError as exc:  # the first recall will try again and report it
        log.warning("could not build the search index at start: %s", exc)


def build_server(config: Config, segmenter: Segmenter | None = None) -> MCPServer[AppState]:
    """A ready-to-run server; the database opens when it starts, jieba loads in the background."""
    seg = segmenter or Segmenter(config.cache_dir)

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        seg.start()
        async with Store(config, seg) as store, anyio.create_task_group() as tasks:
            # The search index is built in the background: start-up does not wait for it, and
            # the first recall usually finds it ready.
            tasks.start_soon(_warm, store)
            yield AppState(config=config, store=store, service=MemoryService(store))
            tasks.cancel_scope.cancel()

    server: MCPServer[AppState] = MCPServer(
        SERVER_NAME,
        title="Memory",
        description="Persistent long-term memory shared by every MCP client; Chinese and English search.",
        instructions=prompts.INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level=config.log_level,  # type: ignore[arg-type]
        middleware=[_carry_state],
    )
    _add_tools(server, config)
    _add_resources(server)
    _add_prompts(server)
    return server


def _add_tools(server: MCPServer[AppState], config: Config) -> None:
    tag_item = Annotated[str, Field(min_length=1, max_length=config.max_tag_chars)]
    session_arg = Annotated[
        str | None,
        Field(max_length=MAX_SESSION_CHARS, description="Conversation id, to tie working memory to a session."),
    ]

    @server.tool(
        description=(
            "Store one memory. The same key updates it in place (old value kept in history); near-identical "
            "content in the same category is merged instead of duplicated. The result's action says which."
        ),
        annotations=ToolAnnotations(
            title="Remember", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def remember(
        ctx: Ctx,
        content: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.max_content_chars,
                description=(
                    "One self-contained fact in the user's language, understandable without this "
                    "conversation, e.g. 'The user drinks a latte every morning' or '用户每天早上喝一杯拿铁'."
                ),
            ),
        ],
        category: Annotated[
            str,
            Field(
                max_length=40,
                description=(
                    "lower_snake category: identity, preference, decision, fact, insight, todo, correction, "
                    "skill, relationship, project_state, event, note, or your own."
                ),
            ),
        ] = "fact",
        key: Annotated[
            str | None,
            Field(
                max_length=MAX_KEY_CHARS,
                description=(
                    "Optional stable slot such as user.city; remembering the same key again replaces the "
                    "value and keeps the old one in history."
                ),
            ),
        ] = None,
        importance: Annotated[float, Field(ge=0, le=1, description="0.0-1.0; 0.9+ only for core facts.")] = 0.5,
        confidence: Annotated[float, Field(ge=0, le=1, description="0.0-1.0: how sure this is true.")] = 0.8,
        tags: Annotated[list[tag_item], Field(max_length=config.max_tags, description="Short labels.")] = [],  # noqa: B006
        source: Annotated[
            str, Field(max_length=20, description=("Who said it: user, assistant, both, system, manual or inferred."))
        ] = "user",
        tier: Annotated[
            Literal["core", "working"], Field(description=("core: long-term; working: only for the current session."))
        ] = "core",
        session_id: session_arg = None,
    ) -> RememberResult:
        return await _tool(
            _state(ctx).service.remember(
                content=content,
                category=category,
                key=key,
                importance=importance,
                confidence=confidence,
                tags=tags,
                source=source,
                tier=tier,
                session_id=session_id,
                client=_client_name(ctx),
            )
        )

    @server.tool(
        description=(
            "Find the memories most relevant to a query, best first, each with its score breakdown. "
            "Counts as a use of the memories returned."
        ),
        annotations=ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False),
    )
    async def recall(
        ctx: Ctx,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.max_query_chars,
                description=(
                    "What to look for: key words or the user's question, Chinese or English, e.g. "
                    "'咖啡' or 'which editor do I use'."
                ),
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Most hits to return.")] = config.default_limit,
        category: Annotated[str | None, Field(max_length=40, description="Only this category.")] = None,
        tags: Annotated[
            list[tag_item] | None,
            Field(max_length=config.max_tags, description="Only memories carrying all these tags."),
        ] = None,
        session_id: session_arg = None,
    ) -> RecallResult:
        return await _tool(
            _state(ctx).service.recall(query=query, limit=limit, category=category, tags=tags, session_id=session_id)
        )

    @server.tool(
        description="Delete memories permanently, with their history and index entries.",
        annotations=ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def forget(
        ctx: Ctx,
        ids: Annotated[
            list[Annotated[str, Field(max_length=40)]],
            Field(min_length=1, max_length=MAX_ID_LIST, description="Ids to delete, e.g. ['mem_12']."),
        ],
    ) -> ForgetResult:
        return await _tool(_state(ctx).service.forget(ids))

    @server.tool(
        name="list",
        description="Browse memories page by page, newest first, without a query.",
        annotations=ToolAnnotations(title="List memories", read_only_hint=True),
    )
    async def list_memories(
        ctx: Ctx,
        category: Annotated[str | None, Field(max_length=40, description="Only this category.")] = None,
        tier: Annotated[Literal["core", "working"] | None, Field(description="Only this tier.")] = None,
        tags: Annotated[
            list[tag_item] | None,
            Field(max_length=config.max_tags, description="Only memories carrying all these tags."),
        ] = None,
        order_by: Annotated[
            Literal["updated", "created", "importance", "accessed"], Field(description="Newest first by this field.")
        ] = "updated",
        limit: Annotated[int, Field(ge=1, le=200, description="Page size.")] = 20,
        cursor: Annotated[str | None, Field(max_length=400, description="next_cursor of the previous page.")] = None,
    ) -> ListResult:
        return await _tool(
            _state(ctx).service.list_memories(
                category=category, tier=tier, tags=tags, order_by=order_by, limit=limit, cursor=cursor
            )
        )


def _add_resources(server: MCPServer[AppState]) -> None:
    @server.resource(
        "memory://memories/{id}",
        mime_type="application/json",
        description="One memory with all its fields and the history of its values.",
    )
    async def memory_resource(id: str, ctx: Ctx) -> str:
        service = _state(ctx).service
        memory = await _resource(service.get(id))
        history = await _resource(service.history(memory.id))
        return _json(memory.model_dump(mode="json") | {"history": history})

    @server.resource(
        "memory://categories/{category}",
        mime_type="application/json",
        description="The 200 most recently updated memories of one category.",
    )
    async def category_resource(category: str, ctx: Ctx) -> str:
        page = await _resource(_state(ctx).service.list_memories(category=category, limit=200))
        return page.model_dump_json(indent=2)

    @server.resource(
        "memory://stats",
        mime_type="application/json",
        description="Counts by category and tier, database path and size.",
    )
    async def stats_resource() -> str:
        stats = await _resource(_CURRENT.get().service.stats())
        return stats.model_dump_json(indent=2)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _add_prompts(server: MCPServer[AppState]) -> None:
    @server.prompt(
        title="Extract memories",
        description=(
            "Ask the model which memories one user/assistant exchange holds; answers JSON "
            "{memories: [{content, category, importance, source}]}, empty for small talk."
        ),
    )
    def extract_memories(
        user_message: Annotated[str, Field(description="What the user said.")],
        assistant_message: Annotated[str, Field(description="What the assistant answered.")],
    ) -> str:
        return prompts.extract_memories(user_message, assistant_message)


async def serve_http(server: MCPServer[AppState], host: str, port: int) -> None:
    """Streamable HTTP at /mcp. uvicorn logs through the standard logging setup (stderr), not its
    own default configuration, which would print access lines to stdout."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    level = logging.getLogger().getEffectiveLevel()
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=level)
    await uvicorn.Server(config).serve()


async def serve_stdio(server: MCPServer[AppState]) -> None:
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
