"""What every MCP handler shares: the state of the request's namespace (from the namespaces the
lifespan opens), the calling client's name, the translation of our errors into the SDK's (tool
errors become `isError` results), and the server class that keeps what a model reads short: tool
schemas without generated titles, results as compact JSON, argument errors in one line."""

# No `from __future__ import annotations`: the SDK evaluates the signatures that use `Ctx`.

import json
import logging
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, Sample
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageResult,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)
from mcp_types import Tool as MCPTool
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from ..argument_errors import explain
from ..errors import InvalidInput, MemoryServerError, NotFound
from ..runtime.access import request_namespace
from ..runtime.namespaces import AppState, Spaces

__all__ = [
    "CURRENT",
    "DECLINED",
    "AppState",
    "Ctx",
    "MemoryServer",
    "ask_client",
    "at_least_modern",
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


class MemoryServer(MCPServer[Spaces]):
    """The SDK's server with a leaner surface for the model that reads it."""

    async def list_tools(self) -> list[MCPTool]:
        """Input schemas as a model needs them: no titles pydantic makes from argument names
        ("Session Id" for session_id), an optional argument as its type alone (not "that type or
        null, default null": leaving it out means the same, and the tool still takes a null),
        nested models in place. Every client shows the names itself; every model reads these:
        2.3 KB less of tools/list than the SDK's schemas (BENCHMARKS.md, "stdio transport and tool
        schemas"). The SDK builds the argument models itself, with no way to pass pydantic a
        schema generator, so the schemas are made lean here."""
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": lean_input_schema(t.input_schema)}) for t in tools]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Spaces, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Arguments the tool's schema refuses become one line naming the argument and the rule
        (the SDK would send pydantic's text, with a link to its website); a structured result's
        text is its JSON without indentation (the SDK indents it, a third more to read)."""
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            # Only the arguments' validation: a ValidationError inside the tool is a crash, which
            # the SDK reports as UnexpectedToolError with its text kept on the server.
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            schema = next((t.input_schema for t in await super().list_tools() if t.name == name), None)
            raise ToolError(explain(name, cause, schema)) from cause
        return _compact(result)


def _compact(result: CallToolResult | InputRequiredResult) -> CallToolResult | InputRequiredResult:
    if not isinstance(result, CallToolResult) or result.is_error or result.structured_content is None:
        return result
    if len(result.content) != 1 or not isinstance(result.content[0], TextContent):
        return result  # not the SDK's rendering of the structured result: left as the tool made it
    try:
        rendered = json.loads(result.content[0].text)
    except ValueError:
        return result  # a plain value's text (a tool returning a str): left as it is
    if rendered != result.structured_content:
        return result
    text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return result.model_copy(update={"content": [TextContent(type="text", text=text)]})


def lean_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = schema.get("$defs", {})
    lean: dict[str, Any] = _lean(schema, defs)
    lean.pop("$defs", None)
    return lean


def _lean(node: Any, defs: dict[str, Any]) -> Any:
    """One schema node: titles and `additionalProperties: true` (the default) out, local
    references inlined (input models are never recursive), `anyOf: [T, null]` with a null default
    down to T. Keys of `properties` are argument names, kept even when one is called title."""
    if isinstance(node, list):
        return [_lean(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs:
        node = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in node.items() if k != "$ref"}}
    branches = node.get("anyOf")
    optional = "default" in node and node["default"] is None
    if optional and isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (other,) = (b for b in branches if b != {"type": "null"})
        node = {**_lean(other, defs), **{k: v for k, v in node.items() if k not in ("anyOf", "default")}}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key == "title" and isinstance(value, str)) or (key == "additionalProperties" and value is True):
            continue  # a generated title; the default any schema already has
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _lean(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf", "not"):
            out[key] = _lean(value, defs)
        else:
            out[key] = value  # enums, defaults and examples are data, kept as they are
    return out


# ---- sampling: the client's model, in both protocol eras -------------------------------------


def modern(ctx: Ctx) -> bool:
    """True on 2026-07-28 and later, where a tool asks the client through its call's own rounds
    (`Resolve`/`Sample`) and cannot send it a request mid-call."""
    return at_least_modern(ctx.protocol_version)


def at_least_modern(version: str | None) -> bool:
    return version is not None and is_version_at_least(version, _MODERN)


def can_sample(ctx: Ctx) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.sampling is not None


# How a failure of `ask_client` starts when the client refused (its user declined the request).
DECLINED = "the client declined to sample"


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
    timeout = state(ctx).config.conversation.sampling_timeout_s
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
        return None, f"{DECLINED}: {exc}."
    except Exception as exc:  # any transport or validation failure: the caller falls back
        log.warning("sampling failed: %r", exc)
        return None, f"sampling failed: {exc}."
    return sampled_text(result), None
