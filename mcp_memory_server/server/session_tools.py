"""The tools an assistant calls as a conversation goes on: `update_session` once per turn (topic,
emotion, context variables -> response strategy) and `extract` after an exchange (the memory
sieve, with the client's model through MCP sampling when it offers one).

Sampling in both protocol eras. On 2026-07-28 and later a tool cannot send the client a request
mid-call: the SDK's `Resolve`/`Sample` pattern answers the first round of the call with the
sampling request and runs the tool body when the client calls again with the model's answer. A
client that refuses never calls again, so the first round already writes what must not be lost
(the fast channel's memories and a note keeping the exchange). On earlier versions the body asks
the client itself, under a timeout, while the fast channel runs; a refusal or a timeout leaves
the note as the fallback."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

import logging
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer, Resolve, Sample
from mcp_types import CreateMessageResult, ToolAnnotations
from pydantic import Field

from ..config.limits import MAX_MESSAGE_CHARS, MAX_SAMPLED_TOKENS, MAX_SESSION_CHARS, MAX_TOPIC_CHARS, MAX_VARIABLES
from ..memory.strategy import Emotion
from ..memory.validate import session_id as validate_session_id
from ..runtime.namespaces import Spaces
from ..sieve.sieve import ExtractResult, Sieve
from .app import (
    DECLINED,
    Ctx,
    ask_client,
    can_sample,
    client_name,
    modern,
    sample_request,
    sampled_text,
    state,
    tool_call,
)
from .memory_tools import RequestId
from .profile_tools import keep_sampled, profile_due, profile_request, refresh_before_sieve
from .views import ExtractView, TurnView
from .views import extract as extract_view
from .views import turn as turn_view

__all__ = ["add_session_tools"]

log = logging.getLogger(__name__)


# What the resolver tells the tool body when it does not hand the SDK a sampling request.
_SMALL_TALK, _UNSUPPORTED, _IN_BODY = "small talk", "unsupported", "in body"


async def _sample(sieve: Sieve, user_message: str, assistant_message: str) -> Sample:
    system, prompt = await sieve.sampling_prompt(user_message, assistant_message)
    return sample_request(system, prompt, MAX_SAMPLED_TOKENS)


async def _profile_round(ctx: Ctx, user_message: str, assistant_message: str, session_id: str | None) -> Any:
    """On the modern protocol, the profile's sampling request when the client's model should
    synthesise it before the sieve builds its prompt (a round before the deep channel's), after
    writing what a refusal must not lose; else None."""
    sieve = state(ctx).sieve
    if sieve.small_talk(user_message, assistant_message) or not await profile_due(ctx):
        return None
    if ctx.input_responses is not None:
        # A later round: the question stands only if it was asked in the first one (whose answer
        # this round brings). The call's own first round may have made the profile due since,
        # by writing a memory about the user; that waits for the next call.
        if _PROFILE_ROUND not in {key.split("#")[0] for key in ctx.input_responses}:
            return None
    elif await sieve.resume(user_message, assistant_message, session_id) is None:
        await sieve.begin(user_message, assistant_message, session_id=session_id, client=client_name(ctx), deep=True)
    return await profile_request(state(ctx).store)  # after begin: the same prompt in every round


# The SDK's wire key of `_profile_round`'s question (its `module:qualname`).
_PROFILE_ROUND = f"{_profile_round.__module__}:{_profile_round.__qualname__}"


async def _deep_request(
    ctx: Ctx,
    user_message: str,
    assistant_message: str,
    session_id: str | None,
    profile: Annotated[Any, Resolve(_profile_round)] = None,
) -> Any:
    """Decide how the deep channel runs. On the modern protocol this returns the sampling request
    itself, after writing (in the first round) what a refusal must not lose, and after keeping
    the profile the client's model wrote in an earlier round."""
    sieve = state(ctx).sieve
    await keep_sampled(state(ctx).store, profile)
    if sieve.small_talk(user_message, assistant_message):
        return _SMALL_TALK
    if not can_sample(ctx):
        return _UNSUPPORTED
    if not modern(ctx):
        return _IN_BODY
    request = await _sample(sieve, user_message, assistant_message)  # before begin: same prompt in every round
    if ctx.input_responses is None and await sieve.resume(user_message, assistant_message, session_id) is None:
        await sieve.begin(user_message, assistant_message, session_id=session_id, client=client_name(ctx), deep=True)
    return request


async def _ask_in_body(
    ctx: Ctx, sieve: Sieve, user_message: str, assistant_message: str
) -> tuple[str | None, str | None]:
    return await ask_client(ctx, await _sample(sieve, user_message, assistant_message))


async def _extract(
    ctx: Ctx, user_message: str, assistant_message: str, session_id: str | None, deep: Any
) -> ExtractResult:
    sieve = state(ctx).sieve
    client = client_name(ctx)
    session_id = validate_session_id(session_id)  # control characters out, as everywhere
    if deep != _SMALL_TALK:  # the profile the sieve's prompt carries, synthesised first when due
        await refresh_before_sieve(ctx)
    if isinstance(deep, CreateMessageResult):  # modern protocol, second round: the model answered
        prepared = await sieve.resume(user_message, assistant_message, session_id)
        if prepared is None:  # the pending run is gone (pruned, or another call settled it)
            prepared = await sieve.begin(
                user_message, assistant_message, session_id=session_id, client=client, deep=False
            )
        return await sieve.finish(prepared, answer=sampled_text(deep))
    if deep == _IN_BODY:
        answer: list[tuple[str | None, str | None]] = []

        async def ask() -> None:
            answer.append(await _ask_in_body(ctx, sieve, user_message, assistant_message))

        async with anyio.create_task_group() as tasks:  # both channels at once
            tasks.start_soon(ask)
            asked = await sieve.begin(user_message, assistant_message, session_id=session_id, client=client, deep=True)
        text, failure = answer[0]
        declined = failure is not None and failure.startswith(DECLINED)
        return await sieve.finish(asked, answer=text, failure=failure, declined=declined)
    only_fast = await sieve.begin(user_message, assistant_message, session_id=session_id, client=client, deep=False)
    if deep == _SMALL_TALK:
        return await sieve.finish(only_fast, skipped="Small talk: nothing for the deep channel.")
    return await sieve.finish(only_fast, unsupported=True)


def add_session_tools(server: MCPServer[Spaces]) -> None:
    @server.tool(
        description=(
            "Record a conversation turn; returns the response strategy for the user's emotion. recall with this "
            "session_id favours the topic."
        ),
        annotations=ToolAnnotations(
            title="Update session", read_only_hint=False, destructive_hint=False, idempotent_hint=False
        ),
    )
    async def update_session(
        ctx: Ctx,
        session_id: Annotated[str, Field(min_length=1, max_length=MAX_SESSION_CHARS, description="Conversation id.")],
        topic: Annotated[
            str | None,
            Field(max_length=MAX_TOPIC_CHARS, description="Topic; empty clears it."),
        ] = None,
        emotion: Annotated[Emotion | None, Field(description="The user's emotion in their last message.")] = None,
        variables: Annotated[
            dict[str, Any] | None,
            Field(
                max_length=MAX_VARIABLES,
                json_schema_extra={"maxProperties": MAX_VARIABLES},
                description="Variables to set; a null value removes one.",
            ),
        ] = None,
        request_id: RequestId = None,
    ) -> TurnView:
        result = await tool_call(
            state(ctx).sessions.update(
                session_id, topic=topic, emotion=emotion, variables=variables, request_id=request_id
            )
        )
        return turn_view(result)

    @server.tool(
        description=(
            "Sieve one exchange: the user's high-signal sentences (preferences, identity, decisions, corrections, "
            "to-dos, 'remember ...') are stored now, 'forget ...' forgets; the client's model, if it can sample, "
            "extracts the rest into "
            "working memory. Secrets are never stored."
        ),
        annotations=ToolAnnotations(
            title="Extract memories", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def extract(
        ctx: Ctx,
        user_message: Annotated[
            str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="What the user said.")
        ],
        assistant_message: Annotated[
            str, Field(max_length=MAX_MESSAGE_CHARS, description="What the assistant answered.")
        ] = "",
        session_id: Annotated[
            str | None,
            Field(
                max_length=MAX_SESSION_CHARS,
                description="Conversation id, for working memory.",
            ),
        ] = None,
        deep: Annotated[Any, Resolve(_deep_request)] = None,
    ) -> ExtractView:
        return extract_view(await tool_call(_extract(ctx, user_message, assistant_message, session_id, deep)))
