"""The tools an assistant calls as a conversation goes on: `update_session` once per turn (topic,
emotion, context variables -> response strategy)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from .app import AppState, Ctx, state, tool_call
from .sessions import MAX_TOPIC_CHARS, MAX_VARIABLES, SessionResult
from .strategy import Emotion
from .validate import MAX_SESSION_CHARS

__all__ = ["add_session_tools"]


def add_session_tools(server: MCPServer[AppState]) -> None:
    @server.tool(
        description=(
            "Record one conversation turn: counts it, sets the topic (recall with this session_id then favours "
            "it), records the user's emotion and returns the response strategy for it (tone, length, "
            "whether to ask back). Unknown or low-confidence emotions get the neutral strategy."
        ),
        annotations=ToolAnnotations(
            title="Update session", read_only_hint=False, destructive_hint=False, idempotent_hint=False
        ),
    )
    async def update_session(
        ctx: Ctx,
        session_id: Annotated[
            str, Field(min_length=1, max_length=MAX_SESSION_CHARS, description="The conversation's id.")
        ],
        topic: Annotated[
            str | None,
            Field(max_length=MAX_TOPIC_CHARS, description="Current topic in a few words; empty string clears it."),
        ] = None,
        emotion: Annotated[
            Emotion | None, Field(description="The user's emotion in their last message, with your confidence.")
        ] = None,
        variables: Annotated[
            dict[str, Any] | None,
            Field(
                max_length=MAX_VARIABLES,
                json_schema_extra={"maxProperties": MAX_VARIABLES},
                description="Context variables to set for this session (null removes one), e.g. {'city': '杭州'}.",
            ),
        ] = None,
    ) -> SessionResult:
        return await tool_call(
            state(ctx).sessions.update(session_id, topic=topic, emotion=emotion, variables=variables)
        )
