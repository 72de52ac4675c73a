"""The lifecycle through the MCP tools, and the maintenance the server runs at start."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")
LONG_AGO = "2020-01-01T00:00:00.000000Z"


def _sql(config: Config, statement: str) -> list[tuple[Any, ...]]:
    return rawdb.rows(config, statement)


async def test_cleanup_dry_run_then_archive_then_restore(
    service: MemoryService, config: Config, segmenter: Segmenter
) -> None:
    stale = await service.remember(content="去年在杭州吃过一家很一般的面馆", category="event", importance=0.3)
    kept = await service.remember(content="The user is allergic to peanuts", category="fact", importance=0.9)
    await service.import_memories([{"content": f"filler memory number {i}", "category": "note"} for i in range(60)])
    _sql(config, f"UPDATE memories SET created_at = '{LONG_AGO}', last_accessed = '{LONG_AGO}'")
    await service.store.close()  # the server opens its own store on the same file

    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        await anyio.sleep(0.3)  # maintenance at start (a real cleanup) runs in the background
        listed = await client.call_tool("list", {"limit": 200})
        assert listed.structured_content is not None and listed.structured_content["total"] == 1
        assert [m["id"] for m in listed.structured_content["items"]] == [kept.id]
        stats = (await client.read_resource("memory://stats")).contents[0].text  # type: ignore[union-attr]
        assert '"archived": 61' in stats

        dry = await client.call_tool("cleanup", {})
        assert dry.structured_content is not None and dry.structured_content["dry_run"] is True
        # One live memory left: under the threshold, nothing is selected and the detail says why.
        assert dry.structured_content["candidate_count"] == 0 and "only above 50" in dry.structured_content["detail"]

        back = await client.call_tool("restore", {"ids": [stale.id, "mem_999999"]})
        assert back.structured_content == {"restored": [stale.id], "not_found": ["mem_999999"], "conflicts": []}
        found = await client.call_tool("recall", {"query": "杭州 面馆"})
        assert found.structured_content is not None
        assert found.structured_content["hits"][0]["id"] == stale.id


async def test_an_idle_session_ends_at_start(config: Config, segmenter: Segmenter, service: MemoryService) -> None:
    keep = await service.remember(content="用户这周在准备搬家到上海", importance=0.8, tier="working", session_id="old")
    drop = await service.remember(content="用户刚才问了天气", importance=0.2, tier="working", session_id="old")
    _sql(config, f"UPDATE sessions SET updated_at = '{LONG_AGO}'")
    await service.store.close()
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        for _ in range(50):
            if _sql(config, "SELECT count(*) FROM sessions") == [(0,)]:
                break
            await anyio.sleep(0.05)
        promoted = await client.call_tool("list", {"tier": "core"})
        assert promoted.structured_content is not None
        assert [m["id"] for m in promoted.structured_content["items"]] == [keep.id]
    assert _sql(config, f"SELECT archive_reason FROM memory_archive WHERE seq = {drop.id[4:]}") != []


async def test_lifecycle_tools_are_described(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        refused = await client.call_tool("restore", {"ids": []})
    for name in ("cleanup", "restore"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.destructive_hint is False and annotations.read_only_hint is False
    assert tools["cleanup"].input_schema["properties"]["dry_run"]["default"] is True
    assert refused.is_error and refused.content[0].text == "restore: `ids` needs at least 1 item (got 0)"  # type: ignore[union-attr]


async def test_recalling_with_a_session_keeps_it_alive(service: MemoryService, config: Config) -> None:
    from datetime import timedelta

    from mcp_memory_server.memory import lifecycle
    from mcp_memory_server.store.rows import utcnow

    await service.remember(content="用户这周在准备搬家到上海", importance=0.2, tier="working", session_id="busy")
    _sql(config, f"UPDATE sessions SET updated_at = '{LONG_AGO}'")
    await service.recall(query="搬家", session_id="busy")
    await service.store.flush()
    assert (await lifecycle.expire_sessions(service.store)).sessions == []  # active again
    ended = await lifecycle.expire_sessions(service.store, now=utcnow() + timedelta(hours=1))
    assert [s.session_id for s in ended.sessions] == ["busy"]
