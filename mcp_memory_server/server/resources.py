"""Resources (memory://...): read-only views of the memory."""

# No `from __future__ import annotations`: the SDK evaluates handler signatures.

import json
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from ..memory.validate import quoted
from ..runtime.namespaces import Spaces
from ..transfer.markdown import render_store
from .app import CURRENT, Ctx, resource_call, state

__all__ = ["add_resources"]


_QUOTED_URI = 200


async def _short_uri_errors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """A resource error names the URI asked for, and the SDK's own (an unknown resource, a URI
    too long to match a template) quote it whole: cut it there, so that an error never echoes a
    huge argument back."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        uri = (ctx.params or {}).get("uri")
        if ctx.method != "resources/read" or not isinstance(uri, str) or len(uri) <= _QUOTED_URI:
            raise
        short = quoted(uri, _QUOTED_URI)
        raise MCPError(code=exc.code, message=exc.message.replace(uri, short), data={"uri": short}) from None


def add_resources(server: MCPServer[Spaces]) -> None:
    server.middleware.append(_short_uri_errors)

    @server.resource(
        "memory://memories/{id}",
        mime_type="application/json",
        description="One memory with all its fields and the history of its values.",
    )
    async def memory_resource(id: str, ctx: Ctx) -> str:
        service = state(ctx).service
        memory = await resource_call(service.get(id))
        history = await resource_call(service.history(memory.id))
        return _json(memory.model_dump(mode="json") | {"history": history})

    @server.resource(
        "memory://categories/{category}",
        mime_type="application/json",
        description="The 200 most recently updated memories of one category.",
    )
    async def category_resource(category: str, ctx: Ctx) -> str:
        service = state(ctx).service
        page = await resource_call(
            service.list_memories(category=category, limit=min(200, service.config.limits.max_page))
        )
        return page.model_dump_json(indent=2)

    @server.resource(
        "memory://sessions/{session_id}",
        mime_type="application/json",
        description="A conversation's working memory (topic, variables, turns, last emotion), its strategy "
        "and the memories written in it.",
    )
    async def session_resource(session_id: str, ctx: Ctx) -> str:
        view = await resource_call(state(ctx).sessions.view(session_id))
        return view.model_dump_json(indent=2)

    @server.resource(
        "memory://extraction-log",
        mime_type="application/json",
        description="The memory sieve's last 100 runs, newest first: input previews, each channel's outcome and "
        "items with their value scores and decisions.",
    )
    async def extraction_log_resource() -> str:
        entries = await resource_call(CURRENT.get().sieve.log(100))
        return _json([e.model_dump(mode="json") for e in entries])

    @server.resource(
        "memory://MEMORY.md",
        mime_type="text/markdown",
        description="The core memories as one Markdown file in four sections (events, preferences, todos, notes), "
        "each line dated; over its soft limit (5,000 characters by default) the middle is left out and "
        "consolidation is due.",
    )
    async def markdown_resource() -> str:
        return await resource_call(render_store(CURRENT.get().store))

    @server.resource(
        "memory://stats",
        mime_type="application/json",
        description="This namespace's counts by category and tier; the database's path and size in stdio mode "
        "(null for a token holder of an HTTP server).",
    )
    async def stats_resource() -> str:
        stats = await resource_call(CURRENT.get().stats())
        return stats.model_dump_json(indent=2)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
