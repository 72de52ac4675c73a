"""The profile tools: `refresh_profile` (synthesised by the client's model when it can sample,
else deterministically, or taken from a `synthesize_profile` answer the assistant ran itself) and
`edit_profile` (manual edits, kept through every refresh); and the `memory://profile` resource."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

import logging
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer, Resolve
from mcp_types import CreateMessageResult, ToolAnnotations
from pydantic import Field

from ..config.limits import MAX_SAMPLED_TOKENS
from ..errors import InvalidInput
from ..profile import profile as profiles
from ..profile.profile import Profile
from ..prompts import catalog
from ..runtime.namespaces import Spaces
from .app import (
    CURRENT,
    Ctx,
    ask_client,
    can_sample,
    modern,
    resource_call,
    sample_request,
    sampled_text,
    state,
    tool_call,
)

__all__ = ["add_profile_tools"]

log = logging.getLogger(__name__)

_SYSTEM = "You write a concise, grounded user profile from stored memories. Answer with JSON only."
_GIVEN, _DETERMINISTIC, _IN_BODY = "given", "deterministic", "in body"


async def _synthesis_request(ctx: Ctx, profile: dict[str, Any] | None) -> Any:
    if profile is not None:
        return _GIVEN
    if not can_sample(ctx):
        return _DETERMINISTIC
    if not modern(ctx):
        return _IN_BODY
    prompt = catalog.synthesize_profile(await profiles.core_for_prompt(state(ctx).store))
    return sample_request(_SYSTEM, prompt, MAX_SAMPLED_TOKENS)


async def _refresh(ctx: Ctx, profile: dict[str, Any] | None, asked: Any) -> Profile:
    store = state(ctx).store
    if asked == _GIVEN:
        assert profile is not None
        return await profiles.store_model_answer(store, profile)
    answer: str | None = None
    if isinstance(asked, CreateMessageResult):
        answer = sampled_text(asked)
    elif asked == _IN_BODY:
        prompt = catalog.synthesize_profile(await profiles.core_for_prompt(store))
        answer, failure = await ask_client(ctx, sample_request(_SYSTEM, prompt, MAX_SAMPLED_TOKENS))
        if failure:
            log.info("profile synthesis by the client's model failed (%s); synthesising it here", failure)
    if answer is not None:
        try:
            return await profiles.store_model_answer(store, _json_part(answer))
        except InvalidInput as exc:
            log.info("the model's profile was unusable (%s); synthesising it here", exc)
    return await profiles.get_profile(store, refresh=True)


def _json_part(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def add_profile_tools(server: MCPServer[Spaces]) -> None:
    @server.tool(
        description=(
            "Synthesise the user profile from the core memories again (by your model if the client can sample, "
            "else by rules), or store `profile`, your synthesize_profile answer. Manual edits stay."
        ),
        annotations=ToolAnnotations(title="Refresh profile", read_only_hint=False, destructive_hint=False),
    )
    async def refresh_profile(
        ctx: Ctx,
        profile: Annotated[
            dict[str, Any] | None,
            Field(description="A synthesize_profile answer to store."),
        ] = None,
        asked: Annotated[Any, Resolve(_synthesis_request)] = None,
    ) -> Profile:
        return await tool_call(_refresh(ctx, profile, asked))

    @server.tool(
        description=(
            "Correct the user profile by hand, kept through refreshes: add or remove an item of a list, or set "
            "summary or language_preferences."
        ),
        annotations=ToolAnnotations(title="Edit profile", read_only_hint=False, destructive_hint=False),
    )
    async def edit_profile(
        ctx: Ctx,
        field: Annotated[
            Literal[
                "summary",
                "language_preferences",
                "domains",
                "high_value_signals",
                "low_value_signals",
                "active_projects",
            ],
            Field(description="Part of the profile."),
        ],
        action: Annotated[Literal["add", "remove", "set"], Field(description="add/remove for lists, set for texts.")],
        text: Annotated[str, Field(min_length=1, max_length=500, description="The item or text.")],
    ) -> Profile:
        return await tool_call(profiles.edit_profile(state(ctx).store, field, action, text))

    @server.resource(
        "memory://profile",
        mime_type="application/json",
        description="The user profile: summary, domains, high/low-value signals, language, active projects, each "
        "item citing the memories it rests on; synthesised again when memories about the user changed.",
    )
    async def profile_resource() -> str:
        profile = await resource_call(profiles.get_profile(CURRENT.get().store))
        return profile.model_dump_json(indent=2)
