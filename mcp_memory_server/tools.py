"""The memory tools: remember, recall, forget, list. Each parses its arguments, calls one service
function and returns its pydantic model (structured output)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures, whose bounds
# come from the Config in scope when the server is built.

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from . import lifecycle
from .app import Ctx, client_name, state, tool_call
from .changes import ApplyChangesResult, ChangeOp, apply_changes
from .config import Config
from .models import CleanupResult, ForgetResult, ListResult, RecallResult, RememberResult, RestoreResult
from .spaces import Spaces
from .validate import MAX_KEY_CHARS, MAX_SESSION_CHARS

__all__ = ["add_memory_tools"]


def add_memory_tools(server: MCPServer[Spaces], config: Config) -> None:
    tag_item = Annotated[str, Field(min_length=1, max_length=config.max_tag_chars)]
    session_arg = Annotated[
        str | None,
        Field(max_length=MAX_SESSION_CHARS, description="Conversation id, to tie working memory to a session."),
    ]

    @server.tool(
        description=(
            "Store one memory. The same key updates it in place (old value kept in history); near-identical "
            "content in the same category is merged instead of duplicated. The result's action says which."
        ),
        annotations=ToolAnnotations(
            title="Remember", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def remember(
        ctx: Ctx,
        content: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.max_content_chars,
                description=(
                    "One self-contained fact in the user's language, understandable without this "
                    "conversation, e.g. 'The user drinks a latte every morning' or '用户每天早上喝一杯拿铁'."
                ),
            ),
        ],
        category: Annotated[
            str,
            Field(
                max_length=40,
                description=(
                    "lower_snake category: identity, preference, decision, fact, insight, todo, correction, "
                    "skill, relationship, project_state, event, note, or your own."
                ),
            ),
        ] = "fact",
        key: Annotated[
            str | None,
            Field(
                max_length=MAX_KEY_CHARS,
                description=(
                    "Optional stable slot such as user.city; remembering the same key again replaces the "
                    "value and keeps the old one in history."
                ),
            ),
        ] = None,
        importance: Annotated[float, Field(ge=0, le=1, description="0.0-1.0; 0.9+ only for core facts.")] = 0.5,
        confidence: Annotated[float, Field(ge=0, le=1, description="0.0-1.0: how sure this is true.")] = 0.8,
        tags: Annotated[list[tag_item], Field(max_length=config.max_tags, description="Short labels.")] = [],  # noqa: B006
        source: Annotated[
            str, Field(max_length=20, description=("Who said it: user, assistant, both, system, manual or inferred."))
        ] = "user",
        tier: Annotated[
            Literal["core", "working"], Field(description=("core: long-term; working: only for the current session."))
        ] = "core",
        session_id: session_arg = None,
    ) -> RememberResult:
        return await tool_call(
            state(ctx).service.remember(
                content=content,
                category=category,
                key=key,
                importance=importance,
                confidence=confidence,
                tags=tags,
                source=source,
                tier=tier,
                session_id=session_id,
                client=client_name(ctx),
            )
        )

    @server.tool(
        description=(
            "Find the memories most relevant to a query, best first, each with its score breakdown. "
            "Counts as a use of the memories returned."
        ),
        annotations=ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False),
    )
    async def recall(
        ctx: Ctx,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.max_query_chars,
                description=(
                    "What to look for: key words or the user's question, Chinese or English, e.g. "
                    "'咖啡' or 'which editor do I use'."
                ),
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Most hits to return.")] = config.default_limit,
        category: Annotated[str | None, Field(max_length=40, description="Only this category.")] = None,
        tags: Annotated[
            list[tag_item] | None,
            Field(max_length=config.max_tags, description="Only memories carrying all these tags."),
        ] = None,
        session_id: session_arg = None,
    ) -> RecallResult:
        return await tool_call(
            state(ctx).service.recall(query=query, limit=limit, category=category, tags=tags, session_id=session_id)
        )

    @server.tool(
        description="Delete memories permanently, with their history and index entries.",
        annotations=ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def forget(
        ctx: Ctx,
        ids: Annotated[
            list[Annotated[str, Field(max_length=40)]],
            Field(min_length=1, max_length=config.max_batch, description="Ids to delete, e.g. ['mem_12']."),
        ],
    ) -> ForgetResult:
        return await tool_call(state(ctx).service.forget(ids))

    @server.tool(
        name="list",
        description="Browse memories page by page, newest first, without a query.",
        annotations=ToolAnnotations(title="List memories", read_only_hint=True),
    )
    async def list_memories(
        ctx: Ctx,
        category: Annotated[str | None, Field(max_length=40, description="Only this category.")] = None,
        tier: Annotated[Literal["core", "working"] | None, Field(description="Only this tier.")] = None,
        tags: Annotated[
            list[tag_item] | None,
            Field(max_length=config.max_tags, description="Only memories carrying all these tags."),
        ] = None,
        order_by: Annotated[
            Literal["updated", "created", "importance", "accessed"], Field(description="Newest first by this field.")
        ] = "updated",
        limit: Annotated[int, Field(ge=1, le=config.max_page, description="Page size.")] = min(20, config.max_page),
        cursor: Annotated[str | None, Field(max_length=400, description="next_cursor of the previous page.")] = None,
        session_id: Annotated[
            str | None, Field(max_length=MAX_SESSION_CHARS, description="Only memories written in this conversation.")
        ] = None,
    ) -> ListResult:
        return await tool_call(
            state(ctx).service.list_memories(
                category=category,
                tier=tier,
                tags=tags,
                order_by=order_by,
                limit=limit,
                cursor=cursor,
                session_id=session_id,
            )
        )

    # The model sees the operation's schema; the service validates each operation itself, so a
    # bad one is reported by its position and field, and program-managed fields are ignored.
    op_schema = ChangeOp.model_json_schema()
    op_schema["additionalProperties"] = True

    @server.tool(
        name="apply_changes",
        description=(
            "Apply change operations atomically (all or none): add creates or replaces the memory named by "
            "key (an id like mem_12 or a key slot), del deletes it if its category matches. For the JSON array "
            "the detect_memory_changes prompt produces."
        ),
        annotations=ToolAnnotations(
            title="Apply memory changes", read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
    )
    async def apply_changes_tool(
        ctx: Ctx,
        ops: Annotated[
            list[dict[str, Any]],
            Field(min_length=1, max_length=config.max_batch, description="The operations, applied in order."),
            WithJsonSchema({"type": "array", "items": op_schema, "minItems": 1, "maxItems": config.max_batch}),
        ],
    ) -> ApplyChangesResult:
        return await tool_call(apply_changes(state(ctx).service, ops, client=client_name(ctx)))

    @server.tool(
        description=(
            "Clean up: archive memories unused for 30 days (accessed under twice), unimportant ones unused for 90 "
            "days and duplicate copies, keeping important, frequently used, recent, core-category and manual ones. "
            "Only above 50 memories. Nothing is deleted; restore brings them back. dry_run (default) only lists."
        ),
        annotations=ToolAnnotations(
            title="Clean up", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def cleanup(
        ctx: Ctx,
        dry_run: Annotated[
            bool, Field(description="true: only list what would be archived; false: archive it.")
        ] = True,
    ) -> CleanupResult:
        return await tool_call(lifecycle.cleanup(state(ctx).store, dry_run=dry_run))

    @server.tool(
        description="Bring archived memories (from cleanup or an expired session) back, with the same ids and history.",
        annotations=ToolAnnotations(
            title="Restore", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def restore(
        ctx: Ctx,
        ids: Annotated[
            list[Annotated[str, Field(max_length=40)]],
            Field(min_length=1, max_length=config.max_batch, description="Ids of archived memories, e.g. ['mem_12']."),
        ],
    ) -> RestoreResult:
        return await tool_call(lifecycle.restore(state(ctx).store, ids))
