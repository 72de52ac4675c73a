"""The MCP server: one MCPServer with its lifespan (the namespaces' stores, the segmenter,
background index builds) and every tool, resource and prompt registered on it. The modules it
assembles are the only ones that import `mcp`."""

# No `from __future__ import annotations`: the SDK evaluates the lifespan's signature.

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateSecurity

from .. import __version__
from ..config.config import Config
from ..prompts import extraction
from ..runtime.access import Access, request_namespace
from ..runtime.namespaces import Opened, Spaces
from ..text.segmenter import Segmenter
from .app import MemoryServer, carry_state
from .import_tools import add_import_tools
from .log_messages import LogRelay
from .memory_tools import add_memory_tools
from .notify import Notifier
from .profile_tools import ProfileAtStart, add_profile_tools
from .prompts import add_prompts
from .resources import add_resources
from .session_tools import add_session_tools
from .transports import serve_http, serve_stdio

__all__ = ["build_server", "serve_http", "serve_stdio"]

SERVER_NAME = "jiyi"


def request_state_security(config: Config) -> RequestStateSecurity:
    """How the state a 2026-07-28 call carries between its rounds (the memory sieve's and the
    profile's sampling) is sealed: under `MCP_MEMORY_STATE_KEYS`, which replicas share so that
    a round may reach another one, else a random key of this process; and bound to the request's
    namespace, so one token's state cannot be replayed under another."""
    keys: list[str | bytes] = [*config.http.state_keys] or [os.urandom(32)]
    return RequestStateSecurity(keys=keys, bind_principal=_namespace_principal)


def _namespace_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    namespace = request_namespace(ctx.request)
    return None if namespace is None else f"namespace:{namespace}"


def build_server(
    config: Config, segmenter: Segmenter | None = None, access: Access | None = None, opened: Opened | None = None
) -> MCPServer[Spaces]:
    """A ready-to-run server; the database opens when it starts, jieba loads in the background.
    With `access` (HTTP with tokens) it serves the tokens' namespaces, each request in its own.
    `opened` receives the open namespaces while the server runs (the dashboard of HTTP mode).
    `config.http.stateless_http` is for HTTP mode only: stdio is one session by nature."""
    seg = segmenter or Segmenter(config.cache_dir)
    # Stateless HTTP: no handshake-era connection outlives its request (subscriptions, log levels).
    stateless = config.http.stateless_http
    notifier = Notifier(config.namespace, stateless=stateless)
    relay = LogRelay(config.log_level, config.namespace, private=access is not None, stateless=stateless)
    at_start = ProfileAtStart()

    @asynccontextmanager
    async def lifespan(_: MCPServer[Spaces]) -> AsyncIterator[Spaces]:
        seg.start()
        namespaces = access.namespaces if access is not None else ()
        async with anyio.create_task_group() as tasks:
            await tasks.start(relay.run)  # first, so clients hear of migrations and start-up
            await tasks.start(at_start.run)
            try:
                async with Spaces(
                    config, seg, namespaces, require_token=access is not None, background=[notifier.run]
                ) as spaces:
                    if opened is not None:
                        opened.set(spaces)
                    try:
                        yield spaces
                    finally:
                        if opened is not None:
                            opened.set(None)
            finally:
                tasks.cancel_scope.cancel()

    server = MemoryServer(
        SERVER_NAME,
        title="Memory",
        description="Persistent long-term memory shared by every MCP client; Chinese and English search.",
        instructions=extraction.INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level=config.log_level,
        middleware=[carry_state],
        subscriptions=notifier.bus,
        request_state_security=request_state_security(config),
    )
    notifier.install(server)
    relay.install(server)
    at_start.install(server)
    add_memory_tools(server, config)
    add_session_tools(server)
    add_profile_tools(server)
    add_import_tools(server, config)
    add_resources(server)
    add_prompts(server)
    return server
