"""A keyed fact stated beside other facts is stored apart from them, so that a later statement of the
keyed fact replaces only what the key is about (I moved to Shanghai does not take the daughter's
name with it), through the MCP client, in Chinese and English."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("first", "move", "question", "kept", "city"),
    [
        (
            "记住：我住在苏州，我女儿叫小米，她在读三年级",
            "我搬到上海了",
            "我女儿叫什么名字",
            "我女儿叫小米，她在读三年级",
            "我搬到上海了",
        ),
        ("我女儿叫小米，我住在苏州", "我搬到上海了", "女儿叫什么", "我女儿叫小米", "我搬到上海了"),
        (
            "Remember: I live in Boston, my daughter is called Mia and she is in third grade",
            "I moved to Seattle",
            "what is my daughter called",
            "My daughter is called Mia and she is in third grade",
            "I moved to Seattle",
        ),
    ],
)
async def test_a_move_keeps_the_rest_of_a_compound(
    config: Config, segmenter: Segmenter, first: str, move: str, question: str, kept: str, city: str
) -> None:
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        await call(client, "extract", user_message=first, assistant_message="好的。")
        await call(client, "extract", user_message=move, assistant_message="好的。")
        listed = await call(client, "list", limit=20)
        found = await call(client, "recall", query=question)
    assert sorted((m["content"], m["key"]) for m in listed["items"]) == sorted([(city, "user.city"), (kept, None)])
    assert [hit["content"] for hit in found["hits"]][:1] == [kept], found


@pytest.mark.parametrize(
    "message", ["我住在苏州，离公司很近", "I live in Boston, close to the office", "我不是住在北京，而是住在柏林"]
)
async def test_a_rest_about_the_keyed_fact_stays_with_it(config: Config, segmenter: Segmenter, message: str) -> None:
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        await call(client, "extract", user_message=message, assistant_message="好的。")
        listed = await call(client, "list", limit=20)
    assert [(m["content"], m["key"]) for m in listed["items"]] == [(message, "user.city")], listed["items"]
