"""The profile tools: `refresh_profile` (synthesised by the client's model when it can sample,
else by rules, or taken from a `synthesize_profile` answer the assistant ran itself) and
`edit_profile` (manual edits, kept through every refresh); the `memory://profile` resource (read
only); and the profile's synthesis by the client's model when it is due, at session start
(`ProfileAtStart`) and at the start of `extract` (`refresh_before_sieve`, `profile_request`)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

import logging
from typing import Annotated, Any, Literal

import anyio
import anyio.abc
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageRequest, CreateMessageResult, ToolAnnotations
from pydantic import Field

from ..config.limits import MAX_SAMPLED_TOKENS
from ..profile import profile as profiles
from ..profile import sampling
from ..profile.profile import Profile
from ..prompts import catalog
from ..runtime.namespaces import AppState, Spaces
from ..store.rows import utcnow
from ..store.store import Store
from .app import (
    CURRENT,
    Ctx,
    ask_client,
    at_least_modern,
    can_sample,
    modern,
    namespace_state,
    resource_call,
    sample_request,
    sampled_text,
    state,
    tool_call,
)

__all__ = [
    "ProfileAtStart",
    "add_profile_tools",
    "keep_sampled",
    "profile_due",
    "profile_request",
    "refresh_before_sieve",
]

log = logging.getLogger(__name__)

_GIVEN, _RULES, _IN_BODY = "given", "rules", "in body"


async def _request(store: Store) -> Sample:
    prompt = catalog.synthesize_profile(await profiles.core_for_prompt(store))
    return sample_request(sampling.SYSTEM, prompt, MAX_SAMPLED_TOKENS)


# ---- before the sieve: the start of `extract` ----------------------------------------------


async def refresh_before_sieve(ctx: Ctx) -> None:
    """Synthesise the profile when it is due, before the sieve builds its prompt: by the client's
    model when it can sample (asked over the session, before 2026-07-28, under the sampling
    timeout; on later versions `profile_request` asks in the call's own rounds), else by rules."""
    store = state(ctx).store
    if not can_sample(ctx):
        if (await profiles.stored(store)).due_for_rules(utcnow()):
            await profiles.synthesize_by_rules(store)
        return
    if modern(ctx):
        return
    # One already under way (the session's start, another call): the sieve waits for its answer.
    with anyio.move_on_after(state(ctx).config.conversation.sampling_timeout_s):
        if await sampling.settled(store):
            return
    if not await sampling.due(store) or not sampling.claim(store):
        return
    try:
        asked_at = utcnow()
        answer, failure = await ask_client(ctx, await _request(store))
        await sampling.keep_answer(store, answer, failure, asked_at=asked_at)
    finally:
        sampling.release(store)


async def profile_due(ctx: Ctx) -> bool:
    """On 2026-07-28 and later: whether the client's model should synthesise the profile in a
    round of this call (`profile_request`) before the sieve runs."""
    return modern(ctx) and can_sample(ctx) and await sampling.due(state(ctx).store)


async def profile_request(store: Store) -> Sample:
    """The profile's sampling request: it renders the same in every round of the call until the
    answer is kept (`keep_sampled`), after which the profile is no longer due."""
    return await _request(store)


async def keep_sampled(store: Store, answer: Any) -> None:
    """Keep the model's answer to `profile_request` (the call's next round brings it)."""
    if isinstance(answer, CreateMessageResult) and await sampling.due(store):
        await sampling.keep_answer(store, sampled_text(answer))


# ---- at session start ----------------------------------------------------------------------


class ProfileAtStart:
    """After `initialize`, a client that declared sampling (before 2026-07-28, where the server
    may ask it outside a call) is asked for the profile when it is due, in a task of its own: the
    handshake never waits for the model."""

    def __init__(self) -> None:
        self._tasks: anyio.abc.TaskGroup | None = None

    def install(self, server: MCPServer[Spaces]) -> None:
        server.middleware.append(self._watch)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the task group the syntheses run in until cancelled (the server's lifespan)."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tasks = None

    async def _watch(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized" and self._tasks is not None:
            try:
                self._start(ctx)
            except Exception:  # advisory: the next extract synthesises it
                log.exception("the profile's synthesis at session start could not be started")
        return result

    def _start(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if at_least_modern(ctx.protocol_version):
            return
        connection = getattr(ctx.session, "_connection", None)
        if not isinstance(connection, Connection) or not connection.has_standalone_channel:
            return
        params = connection.client_params
        if params is None or params.capabilities.sampling is None:
            return
        try:
            app = namespace_state(ctx)
        except MCPError:
            return
        assert self._tasks is not None
        self._tasks.start_soon(self._synthesise, connection, app)

    @staticmethod
    async def _synthesise(connection: Connection, app: AppState) -> None:
        store = app.store
        if not await sampling.due(store) or not sampling.claim(store):
            return
        timeout = app.config.conversation.sampling_timeout_s
        try:
            asked_at = utcnow()
            request = CreateMessageRequest(params=(await _request(store)).params)
            answer: str | None = None
            failure: str | None = None
            try:
                with anyio.fail_after(timeout):
                    answer = sampled_text(await connection.send_request(request))
            except TimeoutError:
                failure = f"the client's model did not answer within {timeout:g} s"
            except Exception as exc:  # a refusal, a closed connection: the stored profile stays
                failure = f"sampling failed: {exc}"
            await sampling.keep_answer(store, answer, failure, asked_at=asked_at)
        except Exception:
            log.exception("the profile's synthesis at session start failed")
        finally:
            sampling.release(store)


# ---- refresh_profile -----------------------------------------------------------------------


async def _synthesis_request(ctx: Ctx, profile: dict[str, Any] | None) -> Any:
    if profile is not None:
        return _GIVEN
    if not can_sample(ctx):
        return _RULES
    if not modern(ctx):
        return _IN_BODY
    return await _request(state(ctx).store)


async def _refresh(ctx: Ctx, profile: dict[str, Any] | None, asked: Any) -> Profile:
    store = state(ctx).store
    if asked == _GIVEN:
        assert profile is not None
        return await profiles.store_model_answer(store, profile)
    if asked == _RULES:
        return await profiles.synthesize_by_rules(store)
    if isinstance(asked, CreateMessageResult):
        kept = await sampling.keep_answer(store, sampled_text(asked))
    else:
        answer, failure = await ask_client(ctx, await _request(store))
        kept = await sampling.keep_answer(store, answer, failure)
    # The model's profile, or (its answer unusable) the one stored before.
    return kept if kept is not None else await profiles.get_profile(store)


def add_profile_tools(server: MCPServer[Spaces]) -> None:
    @server.tool(
        description=(
            "Synthesise the user profile again (by your model if the client can sample, "
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
        "item citing the memories it rests on. Reading it writes nothing.",
    )
    async def profile_resource() -> str:
        profile = await resource_call(profiles.get_profile(CURRENT.get().store))
        return profile.model_dump_json(indent=2)
