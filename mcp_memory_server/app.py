"""What every MCP handler shares: the state of the request's namespace (from the namespaces the
lifespan opens), the calling client's name, and the translation of our errors into the SDK's (tool
errors become `isError` results)."""

# No `from __future__ import annotations`: the SDK evaluates the signatures that use `Ctx`.

import logging
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Sample
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CreateMessageRequest,
    CreateMessageResult,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import is_version_at_least

from .access import request_namespace
from .errors import InvalidInput, MemoryServerError, NotFound
from .spaces import AppState, Spaces

__all__ = [
    "CURRENT",
    "AppState",
    "Ctx",
    "ask_client",
    "can_sample",
    "carry_state",
    "client_name",
    "modern",
    "namespace_state",
    "resource_call",
    "sample_request",
    "sampled_text",
    "state",
    "tool_call",
]

log = logging.getLogger(__name__)

_MODERN = "2026-07-28"  # from this protocol version on, sampling rides the call's own rounds

T = TypeVar("T")


Ctx = Context[Spaces]

# Static resources are called without a Context; this carries the request's state to them.
CURRENT: ContextVar[AppState] = ContextVar("mcp_memory_server_state")


def namespace_state(ctx: ServerRequestContext[Spaces, Any]) -> AppState:
    """The state of the namespace the request is served in: its token's (HTTP with tokens), else
    the configured one. A request that should carry a token's namespace and does not is refused,
    never served in the default namespace."""
    spaces = ctx.lifespan_context
    namespace = request_namespace(ctx.request)
    if namespace is None and spaces.require_token:
        raise MCPError(INVALID_REQUEST, "this request carries no authenticated namespace")
    return spaces.get(namespace)


async def carry_state(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    token = CURRENT.set(namespace_state(ctx))
    try:
        return await call_next(ctx)
    finally:
        CURRENT.reset(token)


def state(ctx: Ctx) -> AppState:
    return namespace_state(ctx.request_context)


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
    except InvalidInput as exc:  # the client's mistake: invalid params, not an internal error
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
    except MemoryServerError as exc:
        raise ResourceError(str(exc)) from exc


# ---- sampling: the client's model, in both protocol eras -------------------------------------


def modern(ctx: Ctx) -> bool:
    """True on 2026-07-28 and later, where a tool asks the client through its call's own rounds
    (`Resolve`/`Sample`) and cannot send it a request mid-call."""
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, _MODERN)


def can_sample(ctx: Ctx) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.sampling is not None


def sample_request(system: str, prompt: str, max_tokens: int) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=max_tokens, system_prompt=system, temperature=0.1)


def sampled_text(result: CreateMessageResult) -> str:
    content: Any = result.content
    blocks = content if isinstance(content, list) else [content]
    return "".join(b.text for b in blocks if isinstance(b, TextContent))


async def ask_client(ctx: Ctx, sample: Sample) -> tuple[str | None, str | None]:
    """(answer, failure) from the client's model, asked over the session (before 2026-07-28),
    under the configured timeout; never raises for the client's refusal or silence."""
    timeout = state(ctx).config.sampling_timeout_s
    try:
        with anyio.fail_after(timeout):
            result = await ctx.session.send_request(
                CreateMessageRequest(params=sample.params),
                CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
    except TimeoutError:
        return None, f"the client's model did not answer within {timeout:g} s."
    except MCPError as exc:
        return None, f"the client declined to sample: {exc}."
    except Exception as exc:  # any transport or validation failure: the caller falls back
        log.warning("sampling failed: %r", exc)
        return None, f"sampling failed: {exc}."
    return sampled_text(result), None
