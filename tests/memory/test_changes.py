"""Change operations: validated, applied in one transaction, all or nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.change_ops import apply_changes
from mcp_memory_server.server import build_server
from mcp_memory_server.store.rows import utcnow
from mcp_memory_server.text import Segmenter

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")


def _add(key: str, payload: str, category: str = "user_preferences", **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "action": "add",
        "category": category,
        "payload": payload,
        "importance": 7,
        "source": "用户输入",
        "tags": ["偏好"],
    } | extra


def _count(config: Config) -> int:
    return int(rawdb.value(config, "SELECT count(*) FROM memories"))


async def test_seed_example_adds_updates_and_deletes(service: MemoryService) -> None:
    first = await apply_changes(
        service,
        [
            _add("mem_001", "用户偏好使用深色主题和中文界面，喜欢简洁的操作流程"),
            _add("mem_002", "Run the test suite before every commit", category="workflow_history", source="AI输出"),
        ],
    )
    assert [o.action for o in first.applied] == ["created", "created"]
    dark = await service.get(first.applied[0].id)
    assert (dark.key, dark.importance, dark.source, dark.category) == ("mem_001", 0.7, "user", "user_preferences")
    assert (await service.get(first.applied[1].id)).source == "assistant"

    # The same key again replaces the value and keeps the old one in history.
    second = await apply_changes(service, [_add("mem_001", "用户偏好浅色主题", importance=9)])
    assert second.applied[0].action == "updated" and second.applied[0].id == first.applied[0].id
    updated = await service.get(first.applied[0].id)
    assert updated.content == "用户偏好浅色主题" and updated.importance == 0.9
    assert [h["content"] for h in await service.history(updated.id)] == [
        "用户偏好使用深色主题和中文界面，喜欢简洁的操作流程"
    ]

    # A week and a day later: no longer protected as a memory created in the last 7 days.
    later = utcnow() + timedelta(days=8)
    third = await apply_changes(
        service, [{"key": "mem_002", "action": "del", "category": "workflow_history"}], now=later
    )
    assert third.applied[0].action == "deleted" and "1 deleted" in third.detail
    assert (await service.list_memories()).total == 1


async def test_an_existing_id_is_updated_in_place(service: MemoryService) -> None:
    stored = await service.remember(content="The user lives in Hangzhou", category="identity", importance=0.6)
    result = await apply_changes(service, [_add(stored.id, "The user moved to Shanghai in 2026", category="identity")])
    assert result.applied[0].action == "updated" and result.applied[0].id == stored.id
    memory = await service.get(stored.id)
    assert memory.content == "The user moved to Shanghai in 2026" and memory.key is None
    again = await apply_changes(service, [_add(stored.id, "The user moved to Shanghai in 2026", category="identity")])
    assert again.applied[0].action == "unchanged"


async def test_zero_padded_keys_are_key_slots_not_ids(service: MemoryService) -> None:
    first = await service.remember(content="占位的第一条记忆")
    result = await apply_changes(service, [_add("mem_001", "新的记忆，不是第一条")])
    assert result.applied[0].action == "created" and result.applied[0].id != first.id
    assert (await service.get(first.id)).content == "占位的第一条记忆"


async def test_program_managed_fields_are_ignored_and_reported(service: MemoryService) -> None:
    op = _add("mem_010", "I prefer tabs over spaces", category="coding_style", trigger_count=99)
    op |= {"created_at": "2001-01-01T00:00:00Z", "last_triggered": "2001-01-01"}
    result = await apply_changes(service, [op])
    memory = await service.get(result.applied[0].id)
    assert memory.access_count == 0 and memory.created_at.year >= 2026
    assert result.ignored_fields == ["created_at", "last_triggered", "trigger_count"]
    assert "Ignored program-managed fields" in result.detail


async def test_a_del_with_the_wrong_category_is_rejected(service: MemoryService) -> None:
    created = await apply_changes(service, [_add("mem_005", "先检查文件是否存在，再备份", category="desktop_sop")])
    with pytest.raises(InvalidInput, match=r"op 1 \(del mem_005\).*'coding_style'.*'desktop_sop'"):
        await apply_changes(service, [{"key": "mem_005", "action": "del", "category": "coding_style"}])
    assert (await service.get(created.applied[0].id)).category == "desktop_sop"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"key": "mem_9", "action": "del", "category": "fact"}, r"op 6 \(del mem_9\): no memory has this key"),
        (_add("mem_x", "x", importance=11), r"op 6 \(add mem_x\): importance: .*less than or equal to 10"),
        (_add("mem_x", "x", importance=0), r"op 6 \(add mem_x\): importance"),
        (
            {"key": "mem_x", "action": "add", "category": "fact"},
            r"op 6 \(add mem_x\).*needs payload, importance, source",
        ),
        ({"key": "mem_x", "action": "update", "category": "fact"}, r"op 6 \(update mem_x\): action"),
        (_add("mem_x", "x", source="robot"), r"op 6 \(add mem_x\): source 'robot' is not one of"),
        (_add("mem_x", "x", category="Not A Category!"), r"op 6 \(add mem_x\): category"),
        (_add("mem_x", "   "), r"op 6 \(add mem_x\): content is empty"),
        (_add("mem_x", "x", colour="red"), r"op 6 \(add mem_x\): colour: Extra inputs"),
        ({"key": "mem_x", "action": "del", "category": "fact", "payload": "x"}, r"a del takes only"),
        ("mem_x", r"op 6 is not an object"),
    ],
)
async def test_one_bad_operation_in_ten_applies_nothing(
    service: MemoryService, config: Config, bad: object, message: str
) -> None:
    await service.remember(content="已经存在的记忆", category="fact")
    ops: list[object] = [_add(f"k{i}", f"第{i}条新记忆 memory number {i}", category="fact") for i in range(1, 11)]
    ops[5] = bad
    with pytest.raises(InvalidInput, match=message) as caught:
        await apply_changes(service, ops)
    assert "Nothing was applied" in str(caught.value) or "nothing was applied" in str(caught.value)
    assert _count(config) == 1


async def test_a_failure_inside_the_transaction_rolls_back_earlier_operations(
    service: MemoryService, config: Config
) -> None:
    target = await service.remember(content="Use pnpm, not npm", category="coding_style", key="tools.js")
    ops = [
        _add("new.one", "第一条会被回滚的记忆", category="fact"),
        _add("tools.js", "Use bun", category="coding_style"),
        {"key": "tools.js", "action": "del", "category": "fact"},  # wrong category: fails after two applied
    ]
    with pytest.raises(InvalidInput, match=r"op 3 \(del tools.js\)"):
        await apply_changes(service, ops)
    assert _count(config) == 1 and (await service.get(target.id)).content == "Use pnpm, not npm"


async def test_add_then_delete_in_one_batch_keeps_the_new_memory(service: MemoryService) -> None:
    result = await apply_changes(
        service,
        [_add("tmp.note", "temporary note", category="note"), {"key": "tmp.note", "action": "del", "category": "note"}],
    )
    # The keep rules guard what a model deletes: a memory created moments ago is "recent".
    assert [o.action for o in result.applied] == ["created", "kept"]
    assert result.applied[1].reason is not None and "'recent'" in result.applied[1].reason
    assert "op 2 (del tmp.note) was refused: keep rule 'recent'" in result.detail
    assert (await service.list_memories()).total == 1


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def test_the_tool_takes_the_seed_array_and_names_a_bad_op(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["apply_changes"].input_schema["properties"]["ops"]
    assert schema["items"]["properties"]["action"]["enum"] == ["add", "del"]
    assert tools["apply_changes"].annotations is not None and tools["apply_changes"].annotations.destructive_hint

    ok = await client.call_tool(
        "apply_changes", {"ops": [_add("mem_001", "用户习惯使用 Vim 编辑代码", trigger_count=3)]}
    )
    assert not ok.is_error and ok.structured_content is not None
    assert ok.structured_content["applied"][0]["action"] == "created"
    assert ok.structured_content["ignored_fields"] == ["trigger_count"]

    bad = await client.call_tool(
        "apply_changes", {"ops": [_add("mem_002", "x"), {"key": "mem_001", "action": "del", "category": "fact"}]}
    )
    assert bad.is_error
    text = bad.content[0]
    assert text.type == "text" and "op 2 (del mem_001)" in text.text and "'user_preferences'" in text.text
    listed = await client.call_tool("list", {})
    assert listed.structured_content is not None and listed.structured_content["total"] == 1
    assert json.dumps(listed.structured_content, ensure_ascii=False).count("Vim") == 1
