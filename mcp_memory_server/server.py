"""The MCP server: one MCPServer with its lifespan (database, segmenter, background index build)
and every tool, resource and prompt registered on it. The modules it assembles are the only ones
that import `mcp`."""

# No `from __future__ import annotations`: the SDK evaluates the lifespan's signature.

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.mcpserver import MCPServer

from . import __version__, lifecycle, prompts
from .app import AppState, carry_state
from .config import Config
from .errors import MemoryServerError
from .notify import Notifier
from .profile_tools import add_profile_tools
from .prompt_handlers import add_prompts
from .resources import add_resources
from .segmenter import Segmenter
from .service import MemoryService
from .session_tools import add_session_tools
from .sessions import Sessions
from .sieve import Sieve
from .store import Store
from .tools import add_memory_tools
from .transports import serve_http, serve_stdio

__all__ = ["AppState", "build_server", "serve_http", "serve_stdio"]

log = logging.getLogger(__name__)

SERVER_NAME = "mcp-memory-server"


async def _warm(store: Store) -> None:
    try:
        await store.warm()
    except MemoryServerError as exc:  # the first recall will try again and report it
        log.warning("could not build the search index at start: %s", exc)


async def _maintain(store: Store, minutes: float) -> None:
    """Session expiry and cleanup at start, then every `minutes` (0: only at start) while serving."""
    while True:
        try:
            await lifecycle.maintain(store)
        except MemoryServerError as exc:  # another process may hold the database; try next time
            log.warning("maintenance could not run: %s", exc)
        if minutes <= 0:
            return
        await anyio.sleep(minutes * 60)


def build_server(config: Config, segmenter: Segmenter | None = None) -> MCPServer[AppState]:
    """A ready-to-run server; the database opens when it starts, jieba loads in the background."""
    seg = segmenter or Segmenter(config.cache_dir)
    notifier = Notifier()

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        seg.start()
        async with Store(config, seg) as store, anyio.create_task_group() as tasks:
            # The search index is built in the background: start-up does not wait for it, and
            # the first recall usually finds it ready.
            tasks.start_soon(notifier.run, store)
            tasks.start_soon(_warm, store)
            tasks.start_soon(_maintain, store, config.maintenance_minutes)
            service = MemoryService(store)
            yield AppState(
                config=config, store=store, service=service, sessions=Sessions(service), sieve=Sieve(service)
            )
            tasks.cancel_scope.cancel()

    server: MCPServer[AppState] = MCPServer(
        SERVER_NAME,
        title="Memory",
        description="Persistent long-term memory shared by every MCP client; Chinese and English search.",
        instructions=prompts.INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level=config.log_level,  # type: ignore[arg-type]
        middleware=[carry_state],
        subscriptions=notifier.bus,
    )
    notifier.install(server)
    add_memory_tools(server, config)
    add_session_tools(server)
    add_profile_tools(server)
    add_resources(server)
    add_prompts(server)
    return server
