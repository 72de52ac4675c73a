"""The deep channel stores a model's item under one of the categories its prompt lists: the
nearest by its words when the model answers outside the list, else fact; through the MCP client."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call
from ..samplers import answering_with

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("content", "given", "stored"),
    [
        ("用户养了一只叫团子的橘猫", "pets", "relationship"),
        ("The user has a golden retriever called Biscuit", "Pets", "relationship"),
        ("用户周末喜欢去爬山", "hobbies", "preference"),
        ("The user keeps a sourdough starter in the fridge", "kitchen_lore", "fact"),
        ("用户决定用Go重写后端", "Decision", "decision"),
        ("用户上周去了一趟苏州", "event", "event"),
        ("The user is a backend engineer", "profile", "identity"),
    ],
)
async def test_a_category_outside_the_list_is_stored_as_the_nearest(
    config: Config, segmenter: Segmenter, content: str, given: str, stored: str
) -> None:
    deep = json.dumps({"memories": [{"content": content, "category": given, "importance": 0.7}]}, ensure_ascii=False)
    server = build_server(config.with_changes(maintenance_minutes=0), segmenter)
    async with Client(server, mode="legacy", sampling_callback=answering_with(deep)) as client:
        run = await call(client, "extract", user_message="聊聊我的生活", assistant_message="好的。", session_id="s1")
        listed = (await call(client, "list", limit=20))["items"]
    assert [(m["content"], m["category"]) for m in listed] == [(content, stored)], (run, listed)


async def test_the_reasoning_of_an_item_is_not_stored(config: Config, segmenter: Segmenter) -> None:
    """Seed 004's items carry `reasoning` ("for debugging, not stored"): read, never kept."""
    why = "User rejected a suggestion, revealing a strong preference for simplicity"
    item = {"content": "用户更喜欢简单的部署方案", "category": "preference", "importance": 0.8, "reasoning": why}
    deep = json.dumps({"memories": [item]}, ensure_ascii=False)
    server = build_server(config.with_changes(maintenance_minutes=0), segmenter)
    async with Client(server, mode="legacy", sampling_callback=answering_with(deep)) as client:
        await call(client, "extract", user_message="不用搞那么复杂", assistant_message="好的。", session_id="s1")
        listed = (await call(client, "list", limit=20))["items"]
        log = (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]
    assert [m["content"] for m in listed] == ["用户更喜欢简单的部署方案"]
    assert why not in json.dumps(listed) and why not in log
