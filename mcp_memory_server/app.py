"""What every MCP handler shares: the state the lifespan opens, the calling client's name, and
the translation of our errors into the SDK's (tool errors become `isError` results)."""

# No `from __future__ import annotations`: the SDK evaluates the signatures that use `Ctx`.

from collections.abc import Awaitable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from .config import Config
from .errors import MemoryServerError, NotFound
from .service import MemoryService
from .sessions import Sessions
from .sieve import Sieve
from .store import Store

__all__ = ["CURRENT", "AppState", "Ctx", "carry_state", "client_name", "resource_call", "state", "tool_call"]

T = TypeVar("T")


@dataclass(frozen=True)
class AppState:
    """What the lifespan opens once per process and every request uses."""

    config: Config
    store: Store
    service: MemoryService
    sessions: Sessions
    sieve: Sieve


Ctx = Context[AppState]

# Static resources are called without a Context; this carries the lifespan state to them.
CURRENT: ContextVar[AppState] = ContextVar("mcp_memory_server_state")


async def carry_state(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    token = CURRENT.set(ctx.lifespan_context)
    try:
        return await call_next(ctx)
    finally:
        CURRENT.reset(token)


def state(ctx: Ctx) -> AppState:
    return ctx.request_context.lifespan_context


def client_name(ctx: Ctx) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


async def tool_call(call: Awaitable[T]) -> T:
    """Our own errors become `isError` results with their message; anything else is a bug and is
    reported by the SDK as an internal error with a logged traceback."""
    try:
        return await call
    except MemoryServerError as exc:
        raise ToolError(str(exc)) from exc


async def resource_call(call: Awaitable[T]) -> T:
    try:
        return await call
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemoryServerError as exc:
        raise ResourceError(str(exc)) from exc
