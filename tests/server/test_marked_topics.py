"""A topic the user marks in the profile as not worth remembering (seed 004: 标记某些话题为"不需要
记忆") is not stored by either channel, through the MCP client, in Chinese and English; an explicit
instruction to remember still is."""

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

CASES = [
    (
        "家庭私事（孩子、配偶）不需要记忆",
        "我决定让女儿转学到实验小学",
        "用户决定让女儿转学到实验小学",
        "我决定用Go重写后端",
    ),
    (
        "Family matters (kids, spouse) - don't remember",
        "I decided to move my daughter to another school",
        "The user decided to move their daughter to another school",
        "I decided to rewrite the backend in Go",
    ),
]


@pytest.mark.parametrize(("mark", "private", "reworded", "other"), CASES)
async def test_a_marked_topic_is_not_stored(
    config: Config, segmenter: Segmenter, mark: str, private: str, reworded: str, other: str
) -> None:
    deep = json.dumps({"memories": [{"content": reworded, "category": "event", "importance": 0.7}]})
    server = build_server(config.with_changes(maintenance_minutes=0), segmenter)
    async with Client(server, mode="legacy", sampling_callback=answering_with(deep)) as client:
        await call(client, "edit_profile", field="low_value_signals", action="add", text=mark)
        run = await call(client, "extract", user_message=private, assistant_message="OK.", session_id="s1")
        kept = await call(client, "extract", user_message=other, assistant_message="OK.")
        listed = [m["content"] for m in (await call(client, "list", limit=20))["items"]]
        log = (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]
    assert [i["decision"] for i in run["items"]] == ["skip", "skip"], run["items"]
    assert all("not worth remembering" in i["reason"] for i in run["items"])
    assert private not in listed and reworded not in listed and other in listed, listed
    assert kept["fast"] == "stored"
    assert reworded not in log


@pytest.mark.parametrize(("mark", "private"), [(c[0], c[1]) for c in CASES])
async def test_an_explicit_instruction_still_stores_it(
    config: Config, segmenter: Segmenter, mark: str, private: str
) -> None:
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        await call(client, "edit_profile", field="low_value_signals", action="add", text=mark)
        forced = "记住：" + private if private[0] == "我" else "Remember: " + private
        await call(client, "extract", user_message=forced, assistant_message="OK.")
        listed = [m["content"] for m in (await call(client, "list", limit=20))["items"]]
    assert private in listed, listed
