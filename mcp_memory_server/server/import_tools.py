"""The `import_memories` tool: a file's text in any format the CLI's `import` reads, with progress
notifications when the client asked for them (a progressToken in the call)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from ..config.config import Config
from ..runtime.namespaces import Spaces
from ..transfer.importing import ImportSummary, import_text
from .app import Ctx, state, tool_call
from .memory_tools import RequestId

__all__ = ["add_import_tools"]


def add_import_tools(server: MCPServer[Spaces], config: Config) -> None:
    @server.tool(
        description=(
            "Import a file's text: this server's JSON export, memory.jsonl, a mem0 or OpenMemory export, or "
            "MEMORY.md. All or nothing; importing it again changes nothing."
        ),
        annotations=ToolAnnotations(
            title="Import memories", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def import_memories(
        ctx: Ctx,
        data: Annotated[
            str,
            Field(
                min_length=1,
                max_length=config.limits.max_body_bytes,
                description="The file's whole text (unpack a zip or gzip first).",
            ),
        ],
        format: Annotated[
            Literal["auto", "json", "memory-jsonl", "mem0", "markdown"],
            Field(description="auto: guessed from the text."),
        ] = "auto",
        mode: Annotated[
            Literal["add", "edits"],
            Field(description="edits: MEMORY.md as edited; its changed/✅/removed lines update/finish/forget."),
        ] = "add",
        request_id: RequestId = None,
    ) -> ImportSummary:
        async def progress(done: int, total: int) -> None:
            await ctx.report_progress(done, total, f"{done:,} of {total:,} items")

        chosen = None if format == "auto" else format
        return await tool_call(
            import_text(state(ctx).store, data, chosen, progress=progress, request_id=request_id, edits=mode == "edits")
        )
