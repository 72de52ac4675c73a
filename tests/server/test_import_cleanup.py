"""Automatic cleanup never hides what the user has not seen, through the MCP client: memories
brought in by an import count their time unused from their arrival, not from their old
last access; health, family and identity facts are never archived automatically; and what
cleanup does archive is named in memory://stats."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import iso, utcnow
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer.json_transfer import export_json

from .. import rawdb
from ..calls import call

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

# What a user moving to a new machine brings: a month and more since each was last used, once.
MOVED = [
    "我女儿对花生严重过敏",
    "My son is allergic to penicillin",
    *(f"搬家前的笔记 {i}：周末去了一趟西湖" for i in range(30)),
    *(f"Note from the old laptop {i}: tried a new ramen place" for i in range(30)),
]
# Written here and left unused as long: cleanup's to archive, but for the facts it must keep.
UNUSED_HERE = [
    ("我妈妈的生日是十月三日", True),
    ("My wife is diabetic and carries insulin", True),
    ("用户去年看过一场话剧", False),
    ("The user once tried a standing desk", False),
]


def _aged(config: Config, numbers: list[int]) -> None:
    """As if written 60 days ago and last used 40 days ago, once."""
    now = utcnow()
    created, used = iso(now - timedelta(days=60)), iso(now - timedelta(days=40))
    listed = ", ".join(map(str, numbers))
    rawdb.rows(
        config,
        f"UPDATE memories SET created_at = '{created}', updated_at = '{created}', last_accessed = '{used}',"
        f" access_count = 0 WHERE number IN ({listed})",
    )


async def _export_of_an_old_machine(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> str:
    old = Config.from_env({}, db_path=tmp_path / "old-machine.db", cache_dir=cache_dir)
    async with Store(old, segmenter) as store:
        ids = await MemoryService(store).import_memories([{"content": t, "category": "fact"} for t in MOVED])
    _aged(old, [int(i.removeprefix("mem_")) for i in ids])
    async with Store(old, segmenter) as store:
        return await export_json(store)


async def _stats(client: Client) -> dict[str, Any]:
    read = await client.read_resource("memory://stats")
    return json.loads(read.contents[0].text)  # type: ignore[union-attr]


async def test_an_import_is_not_unused_and_cleanup_names_what_it_archives(
    config: Config, segmenter: Segmenter, service: MemoryService, tmp_path: Path, cache_dir: Path
) -> None:
    exported = await _export_of_an_old_machine(tmp_path, cache_dir, segmenter)
    here = [await service.remember(content=text, category="fact") for text, _ in UNUSED_HERE]
    _aged(config, [int(r.id.removeprefix("mem_")) for r in here])
    await service.store.close()

    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        report = await call(client, "import_memories", data=exported, format="json")
        assert report["created"] == len(MOVED), report
        cleaned = await call(client, "cleanup", dry_run=False)
        listed = await call(client, "list", limit=200)
        stats = await _stats(client)
        allergy = await call(client, "recall", query="我女儿对什么过敏")

    live = {m["content"] for m in listed["items"]}
    assert set(MOVED) <= live, "an import is not 'unused for 30 days': none of it was archived"
    critical = {text for text, keep in UNUSED_HERE if keep}
    assert critical <= live, "health and family facts stay whatever their use"
    assert cleaned["kept"]["critical"] == len(critical)
    gone = {r.id for r, (_, keep) in zip(here, UNUSED_HERE, strict=True) if not keep}
    # The start's maintenance may have archived them before the explicit run: either way the
    # user can see which, and why, in memory://stats.
    assert not gone & {m["id"] for m in listed["items"]}
    assert {c["id"] for c in cleaned["candidates"]} <= gone and stats["cleaned"]["count"] == len(gone)
    assert {m["id"] for m in stats["cleaned"]["latest"]} == gone
    assert all(m["reason"].startswith("cleanup: unused") for m in stats["cleaned"]["latest"])
    assert allergy["hits"] and allergy["hits"][0]["content"] == "我女儿对花生严重过敏"
