"""A tool call through the real SDK client that must succeed, for tests that check what it
returns: shared by every test module that calls tools this way."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, tool: str, /, **args: Any) -> dict[str, Any]:
    """Call `tool` with `args`; its structured result. An isError result, or one without
    structured content, fails the test (the result's content is the failure's message)."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content
