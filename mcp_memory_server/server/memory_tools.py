"""The memory tools: remember, recall, forget, list. Each parses its arguments, calls one service
function and returns its pydantic model (structured output)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures, whose bounds
# come from the Config in scope when the server is built.

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from ..config.config import Config
from ..config.limits import MAX_CATEGORY_CHARS, MAX_ID_CHARS, MAX_KEY_CHARS, MAX_RECALL_HITS, MAX_SESSION_CHARS
from ..memory import lifecycle
from ..memory.change_ops import ApplyChangesResult, ChangeOp, apply_changes
from ..memory.requests import MAX_REQUEST_ID_CHARS
from ..models import ForgetResult, RestoreResult
from ..runtime.namespaces import Spaces
from . import views
from .app import Ctx, client_name, state, tool_call
from .views import CleanupView, ListView, RecallView, RememberView

__all__ = ["RequestId", "add_memory_tools"]

# Every write tool's optional request_id (memory/requests.py, store/ledger.py). Its schema is kept
# to a bound and one short sentence (the whole tools/list is read by every model at every start);
# the service checks its characters and says what is allowed.
RequestId = Annotated[
    str | None,
    Field(max_length=MAX_REQUEST_ID_CHARS, description="Retried with it: applied once."),
]


def add_memory_tools(server: MCPServer[Spaces], config: Config) -> None:
    tag_item = Annotated[str, Field(min_length=1, max_length=config.limits.max_tag_chars)]
    tags_filter = Annotated[
        list[tag_item] | None,
        Field(max_length=config.limits.max_tags, description="Only memories with all these tags."),
    ]

    @server.tool(
        description=(
            "Store one memory. The same key replaces its value (the old one stays in history); near-identical "
            "content in the same category is merged."
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
                max_length=config.limits.max_content_chars,
                description="One self-contained fact, in the user's language.",
            ),
        ],
        category: Annotated[
            str,
            Field(
                max_length=MAX_CATEGORY_CHARS,
                description="lower_snake, e.g. identity, preference, decision, fact, todo, event.",
            ),
        ] = "fact",
        key: Annotated[
            str | None,
            Field(
                max_length=MAX_KEY_CHARS,
                description="Stable slot such as user.city.",
            ),
        ] = None,
        importance: Annotated[float, Field(ge=0, le=1, description="0.9+ only for core facts.")] = 0.5,
        confidence: Annotated[float, Field(ge=0, le=1, description="How sure it is true.")] = 0.8,
        tags: Annotated[list[tag_item], Field(max_length=config.limits.max_tags, description="Short labels.")] = [],  # noqa: B006
        source: Annotated[
            str, Field(max_length=20, description="user, assistant, both, system, manual or inferred.")
        ] = "user",
        tier: Annotated[
            Literal["core", "working"], Field(description="core: long-term; working: this session only.")
        ] = "core",
        session_id: Annotated[
            str | None, Field(max_length=MAX_SESSION_CHARS, description="Conversation id, for working memory.")
        ] = None,
        request_id: RequestId = None,
    ) -> RememberView:
        result = await tool_call(
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
                request_id=request_id,
            )
        )
        return views.remember(result)

    @server.tool(
        description="Find the memories most relevant to a query, best first; counts as a use of each.",
        annotations=ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False),
    )
    async def recall(
        ctx: Ctx,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.limits.max_query_chars,
                description="Key words or the user's question, Chinese or English.",
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL_HITS, description="Most hits.")] = config.recall.default_limit,
        category: Annotated[str | None, Field(max_length=MAX_CATEGORY_CHARS, description="Only this category.")] = None,
        tags: tags_filter = None,
        session_id: Annotated[
            str | None, Field(max_length=MAX_SESSION_CHARS, description="Conversation id: favours its topic.")
        ] = None,
    ) -> RecallView:
        result = await tool_call(
            state(ctx).service.recall(query=query, limit=limit, category=category, tags=tags, session_id=session_id)
        )
        return views.recall(result)

    @server.tool(
        description="Delete memories permanently, with their history.",
        annotations=ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def forget(
        ctx: Ctx,
        ids: Annotated[
            list[Annotated[str, Field(max_length=MAX_ID_CHARS)]],
            Field(min_length=1, max_length=config.limits.max_batch, description="Memory ids, e.g. mem_12."),
        ],
        request_id: RequestId = None,
    ) -> ForgetResult:
        return await tool_call(state(ctx).service.forget(ids, request_id=request_id))

    @server.tool(
        name="list",
        description="Browse memories page by page, newest first, without a query.",
        annotations=ToolAnnotations(title="List memories", read_only_hint=True),
    )
    async def list_memories(
        ctx: Ctx,
        category: Annotated[str | None, Field(max_length=MAX_CATEGORY_CHARS, description="Only this category.")] = None,
        tier: Annotated[Literal["core", "working"] | None, Field(description="Only this tier.")] = None,
        tags: tags_filter = None,
        order_by: Annotated[
            Literal["updated", "created", "importance", "accessed"],
            Field(description="Sort by this, newest or highest first."),
        ] = "updated",
        limit: Annotated[int, Field(ge=1, le=config.limits.max_page, description="Page size.")] = min(
            20, config.limits.max_page
        ),
        cursor: Annotated[str | None, Field(max_length=400, description="next_cursor of the previous page.")] = None,
        session_id: Annotated[
            str | None, Field(max_length=MAX_SESSION_CHARS, description="Only this conversation's.")
        ] = None,
    ) -> ListView:
        result = await tool_call(
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
        return views.listed(result)

    # The model sees the operation's schema; the service validates each operation itself, so a
    # bad one is reported by its position and field, and program-managed fields are ignored.
    op_schema = ChangeOp.model_json_schema()
    op_schema.pop("additionalProperties", None)  # other fields are allowed: the service reports or ignores them
    op_schema.pop("description", None)  # the class's docstring, for readers of the code

    @server.tool(
        name="apply_changes",
        description=(
            "Apply add/del operations, all or none (the detect_memory_changes answer): add creates or replaces "
            "what its key names; del removes it if its category matches (a protected one is kept unless asked)."
        ),
        annotations=ToolAnnotations(
            title="Apply memory changes", read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
    )
    async def apply_changes_tool(
        ctx: Ctx,
        ops: Annotated[
            list[dict[str, Any]],
            # [] is what the detect prompt asks a model to answer when nothing changed: applied, as nothing.
            Field(max_length=config.limits.max_batch, description="Operations, applied in order."),
            WithJsonSchema({"type": "array", "items": op_schema, "maxItems": config.limits.max_batch}),
        ],
        request_id: RequestId = None,
    ) -> ApplyChangesResult:
        service = state(ctx).service
        return await tool_call(apply_changes(service, ops, client=client_name(ctx), request_id=request_id))

    @server.tool(
        description=(
            "Archive memories long unused, unimportant and stale, or duplicated, sparing important, frequent, "
            "recent, core-category and manual ones; only above 50 memories. restore undoes it. dry_run (default) "
            "only lists."
        ),
        annotations=ToolAnnotations(
            title="Clean up", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def cleanup(
        ctx: Ctx,
        dry_run: Annotated[bool, Field(description="true: only list; false: archive.")] = True,
    ) -> CleanupView:
        return views.cleanup(await tool_call(lifecycle.cleanup(state(ctx).store, dry_run=dry_run)))

    @server.tool(
        description="Bring archived memories (from cleanup or an expired session) back, same ids and history.",
        annotations=ToolAnnotations(
            title="Restore", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def restore(
        ctx: Ctx,
        ids: Annotated[
            list[Annotated[str, Field(max_length=MAX_ID_CHARS)]],
            Field(min_length=1, max_length=config.limits.max_batch, description="Archived memory ids."),
        ],
    ) -> RestoreResult:
        return await tool_call(lifecycle.restore(state(ctx).store, ids))
