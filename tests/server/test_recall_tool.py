"""recall through the SDK's in-memory client: the relevance floor says why there are no hits, and
a long context finds the memory sharing its rare word, in English and Chinese."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def test_recall_returns_no_hits_and_a_note_when_nothing_relevant_is_stored(client: Client) -> None:
    for content in ("I drink oat milk lattes every morning", "我每天早上喝燕麦拿铁", "周末和朋友去爬山"):
        await call(client, "remember", content=content, category="preference")
    found = await call(client, "recall", query="What do I drink in the morning?")
    assert found["hits"] and found["note"] is None
    for query in ("How many moons does Neptune have?", "量子色动力学的格点计算怎么做"):
        empty = await call(client, "recall", query=query)
        assert empty["hits"] == [] and empty["note"], (query, empty)


async def test_recall_of_a_long_context_finds_the_rare_word(client: Client) -> None:
    ids = {}
    for content in (
        "I feel really happy when the weekend starts",
        "Really happy with the new shoes, they feel great",
        "My accountant Ingrid files the taxes in April",
        "我觉得周末真的很开心",
        "会计英格丽四月报税",
    ):
        ids[content] = (await call(client, "remember", content=content, category="fact"))["id"]
    english = (
        "I feel really happy, the weekend was great and the new shoes feel really good. I was thinking "
        "about money and all the paperwork I have to do this spring, and honestly I feel happy that "
        "someone else does it for me. Who does my taxes again, Ingrid?"
    )
    chinese = "周末真的很开心，我觉得新鞋也真的很舒服。最近在想钱和报表的事情。英格丽负责什么来着？"
    top = (await call(client, "recall", query=english))["hits"][0]
    assert top["id"] == ids["My accountant Ingrid files the taxes in April"]
    top = (await call(client, "recall", query=chinese))["hits"][0]
    assert top["id"] == ids["会计英格丽四月报税"]


@pytest.mark.parametrize(
    ("content", "query"), [("用户每天早上喝一杯乌龙茶", "乌龙茶"), ("The user drinks oolong tea", "oolong")]
)
async def test_a_memory_read_right_after_recall_shows_that_recall(
    config: Config, segmenter: Segmenter, content: str, query: str
) -> None:
    """The access of a recall is written in the background; a memory read at once still shows it."""
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        stored = await call(client, "remember", content=content)
        found = await call(client, "recall", query=query)
        assert [h["id"] for h in found["hits"]] == [stored["id"]]
        read = await client.read_resource(f"memory://memories/{stored['id']}")
    detail = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    assert detail["access_count"] == 1 and detail["last_accessed"] is not None, detail
