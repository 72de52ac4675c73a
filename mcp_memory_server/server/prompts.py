"""The prompts, with what they show gathered from the memory: related memories (retrieved, not
counted as accesses), the session's working memory and strategy, the core memories."""

# No `from __future__ import annotations`: the SDK evaluates prompt signatures.

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Prompt
from pydantic import Field

from ..memory import validate
from ..profile import profile as profiles
from ..prompts import catalog, extraction
from ..runtime.namespaces import Spaces
from ..store.rows import iso, utcnow
from .app import Ctx, state

__all__ = ["add_prompts"]

_RELATED = 10
_CORE = 200


async def _related(ctx: Ctx, text: str, session_id: str | None = None) -> list[dict[str, Any]]:
    app = state(ctx)
    query = text[: app.config.limits.max_query_chars]
    if validate.is_blank(query):  # nothing to relate to (recall would refuse an empty query)
        return []
    found = await app.service.recall(query=query, limit=_RELATED, session_id=session_id, track_access=False)
    return [
        {"key": h.key or h.id, "category": h.category, "content": h.content, "importance": round(h.importance * 10)}
        for h in found.hits
    ]


async def _calibration(ctx: Ctx) -> str:
    app = state(ctx)
    return await app.sieve.calibration()


def _argument_check(server: MCPServer[Any]) -> ServerMiddleware[Any]:
    """Middleware: a prompt asked for by a name that does not exist, without an argument it
    requires or with one it does not take is the client's mistake, said as invalid params (the
    SDK reports all three as an internal error)."""

    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        if ctx.method == "prompts/get" and isinstance(params.get("name"), str):
            _check(await server.list_prompts(), params["name"], params.get("arguments") or {})
        return await call_next(ctx)

    return check


def _check(known: Sequence[Prompt], name: str, arguments: object) -> None:
    prompt = next((p for p in known if p.name == name), None)
    if prompt is None:
        names = ", ".join(sorted(p.name for p in known))
        raise MCPError(
            code=INVALID_PARAMS, message=f"no prompt is named {validate.quoted(name)}; the prompts are {names}."
        )
    if not isinstance(arguments, Mapping):
        return  # not an object: the SDK's own validation says so
    declared = {a.name: bool(a.required) for a in prompt.arguments or ()}
    missing = [n for n, required in declared.items() if required and n not in arguments]
    unknown = [validate.quoted(str(n)) for n in arguments if n not in declared]
    if missing or unknown:
        takes = ", ".join(declared) or "no arguments"
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"no argument named {', '.join(unknown[:5])}"] if unknown else []
        )
        raise MCPError(code=INVALID_PARAMS, message=f"prompt {name}: {'; '.join(problems)}. It takes {takes}.")


def add_prompts(server: MCPServer[Spaces]) -> None:
    server.middleware.append(_argument_check(server))

    @server.prompt(
        title="Extract memories",
        description=(
            "Ask the model which memories one user/assistant exchange holds; answers JSON "
            "{memories: [{content, category, importance, source}]}, empty for small talk."
        ),
    )
    async def extract_memories(
        ctx: Ctx,
        user_message: Annotated[str, Field(description="What the user said.")],
        assistant_message: Annotated[str, Field(description="What the assistant answered.")],
    ) -> str:
        return extraction.extract_memories(user_message, assistant_message, await _calibration(ctx))

    @server.prompt(
        title="Detect memory changes",
        description=(
            "Given an exchange, the current time and the related stored memories, answer the change operations "
            "to make: a JSON array for apply_changes."
        ),
    )
    async def detect_memory_changes(
        ctx: Ctx,
        user_input: Annotated[str, Field(description="What the user said.")],
        ai_output: Annotated[str, Field(description="What the assistant answered.")],
    ) -> str:
        related = await _related(ctx, f"{user_input}\n{ai_output}")
        return catalog.detect_memory_changes(user_input, ai_output, related, iso(utcnow()))

    @server.prompt(
        title="Evaluate memory",
        description=(
            "Score one piece of information on six value dimensions and decide store / working / skip; the "
            "answer's `memory` holds remember's arguments."
        ),
    )
    async def evaluate_memory(
        ctx: Ctx, information: Annotated[str, Field(description="The information to evaluate.")]
    ) -> str:
        similar = [m["content"] for m in await _related(ctx, information)][:5]
        return catalog.evaluate_memory(information, similar)

    @server.prompt(
        title="Respond with memory",
        description=(
            "One call that reads the user's emotion, answers with the session's response strategy and related "
            "memories, and lists memory changes (for update_session and apply_changes)."
        ),
    )
    async def respond_with_memory(
        ctx: Ctx,
        user_message: Annotated[str, Field(description="The user's message.")],
        session_id: Annotated[str, Field(description="The conversation's id (see update_session).")],
    ) -> str:
        app = state(ctx)
        session = await app.store.session(session_id.strip())
        working: dict[str, Any] = {"session_id": session_id}
        strategy = app.sessions.table["neutral"]
        if session is not None:
            working = session.model_dump(mode="json", exclude={"created_at"})
            strategy = app.sessions.table.get(session.last_emotion or "neutral", strategy)
        related = await _related(ctx, user_message, session_id if session else None)
        return catalog.respond_with_memory(user_message, working, related, strategy.model_dump())

    @server.prompt(
        title="Synthesize profile",
        description=(
            "Write the user's profile (summary, domains, high/low-value signals, language, active projects, each "
            "citing memory ids) from their core memories; the answer goes to refresh_profile."
        ),
    )
    async def synthesize_profile(ctx: Ctx) -> str:
        return catalog.synthesize_profile(await profiles.core_for_prompt(state(ctx).store, _CORE))
