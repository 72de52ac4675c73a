"""The seed's own fast-channel examples are stored through the MCP client, mixed-language ones
included (seed 002: identity and preference)."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("message", "category"),
    [("我是做投资的人", "identity"), ("我prefer简单的方案", "preference"), ("我比较like安静的地方", "preference")],
)
async def test_the_seed_examples_are_stored(config: Config, segmenter: Segmenter, message: str, category: str) -> None:
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        await call(client, "extract", user_message=message, assistant_message="好的。")
        listed = await call(client, "list", limit=20)
    assert [(m["content"], m["category"]) for m in listed["items"]] == [(message, category)], listed["items"]
