"""Importers of other tools' files (the reference server's memory.jsonl, mem0 and OpenMemory exports,
MEMORY.md) on real SQLite files: what each sample file becomes, that recall finds it in Chinese and
English, that importing twice changes nothing at all (every table, the full-text index and the
change log compared row by row), that an edited item updates its memory, that bad input is named
and writes nothing, and progress notifications through real SDK clients (in-memory and stdio)."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer import ImportSummary, import_bytes, import_text
from mcp_memory_server.transfer.foreign_formats import detect

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

DATA = Path(__file__).parent.parent / "data" / "imports"
SAMPLES = {
    "memory.jsonl": "memory-jsonl",
    "mem0_get_all.json": "mem0",
    "openmemory_memories.json": "mem0",
    "openmemory_memories.jsonl": "mem0",
    "MEMORY.zh.md": "markdown",
    "MEMORY.mixed.md": "markdown",
}


def state(config: Config) -> dict[str, list[Any]]:
    """Every row of every table (full-text shadow tables and the change log included)."""
    return {t: sorted(map(repr, rawdb.rows(config, f'SELECT * FROM "{t}"'))) for t in rawdb.tables(config)}


def rows(config: Config, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return rawdb.rows(config, sql, args)


def by_content(config: Config) -> dict[str, dict[str, Any]]:
    names = ("key", "category", "source", "client", "tags", "created_at", "updated_at")
    found = rows(config, f"SELECT content, {', '.join(names)} FROM memories")
    return {r[0]: dict(zip(names, r[1:], strict=True)) | {"tags": json.loads(r[5])} for r in found}


async def load(store: Store, name: str, file_format: str | None = None) -> ImportSummary:
    return await import_bytes(store, (DATA / name).read_bytes(), file_format, name=name)


# ---- what each format becomes -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), sorted(SAMPLES.items()))
def test_the_format_of_each_sample_is_recognised(name: str, expected: str) -> None:
    assert detect((DATA / name).read_text(encoding="utf-8")) == expected


async def test_the_reference_servers_graph_becomes_memories(store: Store, config: Config) -> None:
    summary = await load(store, "memory.jsonl")
    assert (summary.format, summary.items, summary.created, summary.present) == ("memory-jsonl", 30, 30, 0)
    memories = by_content(config)
    zhang = memories["张伟：在上海工作"]
    assert (zhang["key"], zhang["category"], zhang["tags"], zhang["source"]) == (
        "kg:张伟#1",
        "relationship",
        ["张伟", "person"],
        "assistant",
    )
    assert memories["The user: Lives in Hangzhou"]["category"] == "identity"
    assert memories["The user: Lives in Hangzhou"]["key"] == "kg:default_user#2"
    assert memories["Alice Chen: Based in Singapore"]["tags"] == ["alice chen", "person"]
    assert memories["李娜：对咖啡过敏"]["category"] == "relationship"  # entityType 同事
    assert memories["The user has been learning Rust since 2025"]["category"] == "skill"  # names its entity
    assert memories["周报系统：计划在四月底上线"]["category"] == "project_state"
    assert memories["Q2 planning: Scheduled for the first Monday of April"]["category"] == "event"
    assert memories["西湖边跑步：每周六早上七点"]["category"] == "preference"
    assert memories["Acme Robotics: Headquartered in Shenzhen"]["category"] == "fact"
    relation = memories["张伟 就职于 星辰科技"]
    assert (relation["category"], relation["tags"], relation["key"]) == ("relationship", ["张伟", "星辰科技"], None)
    assert memories["The user works at 星辰科技"]["tags"] == ["default_user", "星辰科技"]
    assert memories["Alice Chen works at Acme Robotics"]["category"] == "relationship"

    service = MemoryService(store)
    assert (await service.recall(query="张伟在哪里工作")).hits[0].content == "张伟：在上海工作"
    assert (await service.recall(query="Singapore")).hits[0].content == "Alice Chen: Based in Singapore"
    assert "Alice Chen works at Acme Robotics" in [
        h.content for h in (await service.recall(query="Alice 在 Acme")).hits
    ]


async def test_mem0_get_all_keeps_times_categories_and_roles(store: Store, config: Config) -> None:
    summary = await load(store, "mem0_get_all.json")
    assert (summary.format, summary.items, summary.created) == ("mem0", 5, 5)
    memories = by_content(config)
    oat = memories["Prefers oat milk in coffee"]
    assert oat == {
        "key": "mem0:3f1c2a9e-6b1d-4a57-9d0e-2b6f0c8e7a11",
        "category": "preference",
        "source": "inferred",
        "client": "import:mem0",
        "tags": ["food", "preferences"],
        "created_at": "2025-11-03T16:15:42.120394+00:00",
        "updated_at": "2025-12-02T03:02:11.551820+00:00",
    }
    assert memories["女儿叫小雨，今年六岁"]["category"] == "relationship"  # metadata.categories: family
    assert memories["女儿叫小雨，今年六岁"]["created_at"] == "2025-08-21T07:30:00.000000+00:00"  # no zone: UTC
    assert memories["Allergic to peanuts"]["category"] == "identity"  # personal_details
    engineer = memories["Is a backend engineer working mostly in Go and Python"]
    assert (engineer["source"], engineer["updated_at"]) == ("user", "2025-09-02T10:00:00.000000+00:00")
    service = MemoryService(store)
    assert (await service.recall(query="莫干山")).hits[0].content == "周末喜欢去莫干山徒步"
    assert (await service.recall(query="peanuts allergy")).hits[0].content == "Allergic to peanuts"


def _openmemory_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", (DATA / "openmemory_memories.json").read_text(encoding="utf-8"))
        archive.writestr("memories.jsonl.gz", gzip.compress((DATA / "openmemory_memories.jsonl").read_bytes()))
    return buffer.getvalue()


@pytest.mark.parametrize("shape", ["zip", "json", "jsonl", "jsonl.gz"])
async def test_openmemory_exports_in_every_shape_give_the_same_memories(
    store: Store, config: Config, shape: str
) -> None:
    data = {
        "zip": _openmemory_zip(),
        "json": (DATA / "openmemory_memories.json").read_bytes(),
        "jsonl": (DATA / "openmemory_memories.jsonl").read_bytes(),
        "jsonl.gz": gzip.compress((DATA / "openmemory_memories.jsonl").read_bytes()),
    }[shape]
    summary = await import_bytes(store, data)
    assert (summary.items, summary.created, summary.archived, summary.skipped) == (5, 4, 2, 1)
    live = by_content(config)
    assert set(live) == {
        "Uses pnpm instead of npm in every TypeScript project",
        "正在把订单服务从 MySQL 迁移到 PostgreSQL",
    }
    pnpm = live["Uses pnpm instead of npm in every TypeScript project"]
    assert (pnpm["client"], pnpm["category"], pnpm["tags"]) == ("cursor", "preference", ["preferences", "technology"])
    assert (pnpm["created_at"], pnpm["updated_at"]) == (
        "2025-06-03T10:20:00.000000+00:00",
        "2025-06-10T08:00:00.000000+00:00",
    )
    assert live["正在把订单服务从 MySQL 迁移到 PostgreSQL"]["category"] == "project_state"  # work
    archived = rows(config, "SELECT content, archive_reason, archived_at, client FROM memory_archive ORDER BY seq")
    assert archived == [
        ("以前用 Sublime Text 写代码", "archived in mem0/OpenMemory", "2025-06-20T12:00:00.000000+00:00", "claude"),
        (
            "Working on a side project called tinyqueue",
            "paused in mem0/OpenMemory",
            "2025-06-07T15:30:00.000000+00:00",
            "cursor",
        ),
    ]
    assert not rows(config, "SELECT 1 FROM memories WHERE content LIKE '%Mochi%'")  # deleted: left out
    hits = (await MemoryService(store).recall(query="订单服务迁移")).hits
    assert hits[0].content == "正在把订单服务从 MySQL 迁移到 PostgreSQL"


async def test_memory_md_files_in_chinese_and_mixed(store: Store, config: Config) -> None:
    zh = await load(store, "MEMORY.zh.md")
    mixed = await load(store, "MEMORY.mixed.md")
    assert (zh.format, zh.items, zh.created, mixed.items, mixed.created) == ("markdown", 7, 7, 7, 7)
    memories = by_content(config)
    assert memories["决定把博客从 Hexo 迁移到 Astro"]["category"] == "event"
    assert memories["给妈妈买生日礼物"]["created_at"] == "2025-06-01T00:00:00.000000+00:00"
    assert memories["✅ 续签租房合同"]["category"] == "todo"
    assert memories["The staging server is called 'otter' (it runs Debian 12)"]["category"] == "note"
    assert memories["和 Alice 一起做了 Q2 规划"]["category"] == "event"
    service = MemoryService(store)
    assert (await service.recall(query="咖啡加糖吗")).hits[0].content == "喝咖啡不加糖"
    assert (await service.recall(query="passport")).hits[0].content == "Renew the passport before August"


# ---- idempotence and updates ----------------------------------------------------------------------


async def test_importing_every_sample_twice_changes_nothing_the_second_time(store: Store, config: Config) -> None:
    await MemoryService(store).remember(content="我每天早上喝一杯拿铁咖啡", category="preference")
    for name in SAMPLES:
        await load(store, name)
    await import_bytes(store, _openmemory_zip())
    before = state(config)
    assert before["memories"] and before["memory_fts"] and before["memory_archive"] and before["memory_changes"]
    for name in SAMPLES:
        again = await load(store, name)
        assert (again.created, again.updated) == (0, 0), name
        assert again.present == again.items - again.skipped, name
    await import_bytes(store, _openmemory_zip())
    assert state(config) == before


async def test_an_edited_observation_updates_its_memory_and_a_removed_one_changes_nothing(
    store: Store, config: Config
) -> None:
    lines = (DATA / "memory.jsonl").read_text(encoding="utf-8").splitlines()
    await import_text(store, "\n".join(lines))
    edited = [line.replace("在上海工作", "在北京工作") for line in lines]
    edited[2] = edited[2].replace('"Prefers async updates over meetings"]', '"Prefers async updates","Plays chess"]')
    summary = await import_text(store, "\n".join(edited))
    assert (summary.created, summary.updated, summary.present) == (1, 2, 28)
    memories = by_content(config)
    assert memories["张伟：在北京工作"]["key"] == "kg:张伟#1" and "张伟：在上海工作" not in memories
    assert memories["Alice Chen: Plays chess"]["key"] == "kg:alice chen#4"
    (seq,) = rows(config, "SELECT seq FROM memories WHERE key = 'kg:张伟#1'")[0]
    history = await MemoryService(store).history(f"mem_{seq}")
    assert [(h["content"], h["reason"]) for h in history] == [("张伟：在上海工作", "imported")]
    before = state(config)
    shifted = [edited[1].replace('"张伟：在北京工作",', "").replace('"在北京工作",', ""), *edited[2:]]
    assert (await import_text(store, "\n".join(shifted))).created == 0  # a removed observation: nothing goes
    assert state(config) == before


async def test_a_mem0_memory_edited_there_updates_here(store: Store, config: Config) -> None:
    data = json.loads((DATA / "mem0_get_all.json").read_text(encoding="utf-8"))
    await import_text(store, json.dumps(data))
    original = json.dumps(data)
    data["results"][0] |= {"memory": "Prefers soy milk in coffee", "updated_at": "2026-01-05T10:00:00+00:00"}
    summary = await import_text(store, json.dumps(data))
    assert (summary.created, summary.updated, summary.present) == (0, 1, 4)
    memories = by_content(config)
    assert "Prefers oat milk in coffee" not in memories
    assert memories["Prefers soy milk in coffee"]["key"] == "mem0:3f1c2a9e-6b1d-4a57-9d0e-2b6f0c8e7a11"
    before = state(config)
    stale = await import_text(store, original)  # the older file again: what changed since stays
    assert (stale.created, stale.updated, stale.present) == (0, 0, 5)
    assert state(config) == before


async def test_a_memory_edited_here_by_a_client_is_never_overwritten_by_an_import(store: Store, config: Config) -> None:
    data = json.loads((DATA / "mem0_get_all.json").read_text(encoding="utf-8"))
    await import_text(store, json.dumps(data))
    key = "mem0:3f1c2a9e-6b1d-4a57-9d0e-2b6f0c8e7a11"
    mine = await MemoryService(store).remember(content="其实喝咖啡不加奶", key=key, client="claude-code")
    assert mine.action == "updated"
    data["results"][0] |= {"memory": "Prefers soy milk in coffee", "updated_at": "2026-01-05T10:00:00+00:00"}
    lines = (DATA / "memory.jsonl").read_text(encoding="utf-8").replace("在上海工作", "在北京工作")
    await import_text(store, (DATA / "memory.jsonl").read_text(encoding="utf-8"))
    await MemoryService(store).remember(content="张伟：在深圳工作", key="kg:张伟#1", client="cursor")
    before = state(config)
    assert (await import_text(store, json.dumps(data))).updated == 0
    assert (await import_text(store, lines)).updated == 0
    assert state(config) == before


# ---- bad input --------------------------------------------------------------------------------------

BAD = [
    ("memory-jsonl", '{"type":"entity","name":"A","observations":["x"]}\n\n{"type": "entity",\n', "line 3: not JSON"),
    (
        "memory-jsonl",
        '{"type":"entity","name":"A","observations":["x"]}\n{"type":"node","name":"B"}',
        "line 2: not an entity",
    ),
    ("memory-jsonl", '{"type":"entity","name":"","observations":[]}', "line 1: name must be a non-empty string"),
    ("memory-jsonl", '{"type":"relation","from":"A","relationType":"knows"}', "line 1: to must be a non-empty"),
    ("memory-jsonl", '{"type":"entity","name":"A","observations":"x"}', "line 1: observations must be a list"),
    (
        "memory-jsonl",
        '{"type":"entity","name":"张伟","observations":["ok","' + "长" * 2100 + '"]}',
        "nothing was imported: line 1 ('张伟', observation 2): content is 2,103 characters",
    ),
    ("mem0", '{"results": [{"memory": "ok"}, {"memory": ""}]}', "results[1]: memory must be a non-empty string"),
    ("mem0", '{"results": [{"memory": "ok", "created_at": "last week"}]}', 'results[0]: created_at "last week" is not'),
    ("mem0", '{"oops": 1}', "not a mem0 or OpenMemory export"),
    ("auto", "Just some prose without any list.", "cannot tell the file's format"),
    ("auto", "[" * 100_000, "nests JSON too deeply"),
    ("json", '{"results": []}', "is not an mcp-memory-server export"),
]


@pytest.mark.parametrize(("file_format", "text", "message"), BAD)
async def test_bad_input_is_named_and_writes_nothing(
    store: Store, config: Config, file_format: str, text: str, message: str
) -> None:
    await MemoryService(store).remember(content="已有的记忆", category="note")
    before = state(config)
    with pytest.raises(InvalidInput) as raised:
        await import_text(store, text, None if file_format == "auto" else file_format)
    assert message in str(raised.value)
    assert state(config) == before


async def test_many_bad_items_are_named_three_at_a_time(store: Store) -> None:
    rows_ = [{"memory": "x" * 2001}] * 5
    with pytest.raises(InvalidInput, match=r"results\[0\].*results\[1\].*results\[2\].* \(and 2 more\)$"):
        await import_text(store, json.dumps({"results": rows_}))


async def test_secrets_are_withheld_or_the_item_left_out(store: Store, config: Config) -> None:
    text = "\n".join(
        json.dumps(line, ensure_ascii=False)
        for line in (
            {"type": "entity", "name": "服务器", "entityType": "server", "observations": ["密码是 hunter2-Secret-991"]},
            {
                "type": "entity",
                "name": "staging",
                "observations": ["The deploy bot uses sk-abcdefghijklmnopqrstuvwx1234"],
            },
        )
    )
    summary = await import_text(store, text, "memory-jsonl")
    assert summary.refused == ["line 1 ('服务器', observation 1)"]
    assert (summary.created, summary.withheld) == (1, 1)
    (content,) = rows(config, "SELECT content FROM memories")[0]
    assert "sk-abc" not in content and "[withheld:" in content


# ---- progress over MCP ------------------------------------------------------------------------------


def _graph(entities: int) -> str:
    return "\n".join(
        json.dumps({"type": "entity", "name": f"人物{i}", "entityType": "person", "observations": [f"喜欢第{i}号咖啡"]})
        for i in range(entities)
    )


async def test_import_memories_sends_progress_to_an_in_memory_client(config: Config, segmenter: Segmenter) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with Client(build_server(config, segmenter)) as client:
        result = await client.call_tool("import_memories", {"data": _graph(1200)}, progress_callback=progress)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        assert result.structured_content["created"] == 1200 and result.structured_content["format"] == "memory-jsonl"
        assert [h[0] for h in heard] == [0, 500, 1000, 1200] and {h[1] for h in heard} == {1200}
        assert heard[-1][2] == "1,200 of 1,200 items"
        again = await client.call_tool("import_memories", {"data": _graph(1200), "format": "memory-jsonl"})
        assert again.structured_content is not None and again.structured_content["present"] == 1200
        bad = await client.call_tool("import_memories", {"data": "plain words", "format": "auto"})
        assert bad.is_error and "cannot tell the file's format" in bad.content[0].text  # type: ignore[union-attr]


async def test_import_memories_sends_progress_notifications_over_stdio(tmp_path: Path, cache_dir: Path) -> None:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command
    env = {**os.environ, "MCP_MEMORY_DB": str(tmp_path / "stdio.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    heard: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(done)

    params = StdioServerParameters(command=command, args=["--log-level", "WARNING"], env=env)
    async with Client(params) as client:
        text = (DATA / "MEMORY.zh.md").read_text(encoding="utf-8")
        result = await client.call_tool("import_memories", {"data": _graph(600) + "\n"}, progress_callback=progress)
        assert result.structured_content is not None and result.structured_content["created"] == 600
        markdown = await client.call_tool("import_memories", {"data": text}, progress_callback=progress)
        assert markdown.structured_content is not None and markdown.structured_content["created"] == 7
    assert heard == [0, 500, 600, 7]


async def test_a_memory_edited_on_the_dashboard_is_never_overwritten_by_an_import(store: Store, config: Config) -> None:
    """The dashboard's edit (service.edit) keeps the memory's client: the importer's own. The edit
    must still win over the file, which says nothing of when it changed."""
    text = (DATA / "memory.jsonl").read_text(encoding="utf-8")
    await import_text(store, text)
    (seq,) = rows(config, "SELECT seq FROM memories WHERE key = 'kg:张伟#1'")[0]
    edited = await MemoryService(store).edit(f"mem_{seq}", {"content": "张伟：在深圳工作"})
    assert edited.action == "updated"
    before = state(config)
    again = await import_text(store, text)
    assert (again.created, again.updated) == (0, 0)
    assert state(config) == before
    assert "张伟：在深圳工作" in by_content(config)


async def test_mem0_get_all_in_graph_mode_gives_its_memories_and_relations(store: Store, config: Config) -> None:
    """mem0's Memory.get_all with a graph store answers {"results": [...], "relations": [...]}."""
    data = json.loads((DATA / "mem0_get_all.json").read_text(encoding="utf-8"))
    data["relations"] = [
        {"source": "alex", "relationship": "works_at", "target": "acme"},
        {"source": "alex", "relationship": "女儿是", "destination": "小雨"},
    ]
    text = json.dumps(data, ensure_ascii=False)
    assert detect(text) == "mem0"
    summary = await import_text(store, text)
    assert (summary.format, summary.items, summary.created) == ("mem0", 7, 7)
    memories = by_content(config)
    assert memories["alex works at acme"]["category"] == "relationship"
    assert memories["alex 女儿是 小雨"]["tags"] == ["alex", "小雨"]
    assert "Prefers oat milk in coffee" in memories
    assert (await import_text(store, text)).created == 0


async def test_a_deleted_openmemory_memory_is_left_out_whatever_its_text(store: Store, config: Config) -> None:
    """OpenMemory may blank a memory it deleted: the item is left out like any deleted one."""
    rows = [
        {"id": "a1", "content": "喜欢在周末去爬山 / hikes on weekends", "state": "active"},
        {"id": "a2", "content": "", "state": "deleted"},
        {"id": "a3", "content": "   ", "state": "active", "deleted_at": "2025-05-01T10:00:00Z"},
    ]
    text = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    summary = await import_text(store, text, "mem0")
    assert (summary.items, summary.created, summary.skipped) == (3, 1, 2)
    assert list(by_content(config)) == ["喜欢在周末去爬山 / hikes on weekends"]
