"""Writes with a client's request_id, through the real SDK client: a retry with the same id gets the
first answer back and the database does not change (memories, history, change log, sessions); the
same id with other arguments is refused; the ledger is per namespace and its rows expire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.memory import lifecycle
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")


def _state(config: Config) -> dict[str, Any]:
    """Everything a write can change, as the database holds it."""
    return {
        "memories": rawdb.rows(config, "SELECT seq, content, key, tags, updated_at FROM memories ORDER BY seq"),
        "history": rawdb.value(config, "SELECT count(*) FROM memory_history"),
        "changes": rawdb.value(config, "SELECT count(*) FROM memory_changes"),
        "sessions": rawdb.rows(config, "SELECT session_id, turn_count, current_topic FROM sessions ORDER BY 1"),
        "ledger": rawdb.value(config, "SELECT count(*) FROM write_requests"),
    }


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    # A memory is "recent" (kept from a model's del) for a moment only, so a retried del can be seen.
    quick = config.with_changes(maintenance_minutes=0, keep_recent_days=1e-9)
    async with Client(build_server(quick, segmenter)) as connected:
        yield connected


async def _twice(client: Client, config: Config, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call `tool` and then retry it with the same arguments and request_id: the same answer, and
    nothing changed by the retry."""
    first = await call(client, tool, **args)
    before = _state(config)
    again = await call(client, tool, **args)
    assert again == first
    assert _state(config) == before
    return first


async def _refused(client: Client, config: Config, tool: str, args: dict[str, Any]) -> None:
    before = _state(config)
    result = await client.call_tool(tool, args)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert f"request_id {args['request_id']!r} was already used for a different call" in text, text
    assert _state(config) == before


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("用户住在杭州，喜欢喝龙井茶", "用户住在上海"),
        ("The user lives in Lisbon and cycles to work", "The user lives in Porto"),
    ],
)
async def test_remember_retried(client: Client, config: Config, first: str, second: str) -> None:
    answer = await _twice(client, config, "remember", {"content": first, "tags": ["家", "home"], "request_id": "r-1"})
    assert answer["action"] == "created"
    assert rawdb.value(config, "SELECT count(*) FROM memories") == 1
    await _refused(client, config, "remember", {"content": second, "request_id": "r-1"})
    # Without a request_id the same content is merged as always (no ledger row is written).
    again = await call(client, "remember", content=first, tags=["家", "home"])
    assert again["action"] == "unchanged"
    assert rawdb.value(config, "SELECT count(*) FROM write_requests") == 1


async def test_remember_by_key_retried_does_not_update_twice(client: Client, config: Config) -> None:
    await call(client, "remember", content="用户住在杭州", key="user.city")
    moved = {"content": "用户搬到了上海 (moved to Shanghai)", "key": "user.city", "request_id": "move-1"}
    answer = await _twice(client, config, "remember", moved)
    assert answer["action"] == "updated"
    assert rawdb.value(config, "SELECT count(*) FROM memory_history") == 1
    # The slot changes again by another call; the retry of the first still answers as it did.
    await call(client, "remember", content="用户搬到了北京", key="user.city")
    assert await call(client, "remember", **moved) == answer
    assert rawdb.value(config, "SELECT content FROM memories") == "用户搬到了北京"


async def test_apply_changes_retried(client: Client, config: Config) -> None:
    ops = [
        {
            "key": "user.food",
            "action": "add",
            "category": "fact",  # of no core category: the keep rules let a model's del apply
            "payload": "喜欢吃辣",
            "importance": 7,
            "source": "user",
        },
        {
            "key": "user.sport",
            "action": "add",
            "category": "preference",
            "payload": "Plays tennis on Sundays",
            "importance": 6,
            "source": "user",
            "tags": ["sport"],
        },
    ]
    answer = await _twice(client, config, "apply_changes", {"ops": ops, "request_id": "ops-1"})
    assert [o["action"] for o in answer["applied"]] == ["created", "created"]
    deleting = [{"key": "user.food", "action": "del", "category": "fact"}]
    gone = await _twice(client, config, "apply_changes", {"ops": deleting, "request_id": "ops-2"})
    assert gone["applied"][0]["action"] == "deleted"  # the retry says so again, and deletes nothing more
    await _refused(client, config, "apply_changes", {"ops": ops[:1], "request_id": "ops-1"})
    assert rawdb.value(config, "SELECT count(*) FROM memories") == 1


async def test_forget_retried(client: Client, config: Config) -> None:
    kept = await call(client, "remember", content="The user's cat is called Miso")
    dropped = await call(client, "remember", content="用户的狗叫旺财")
    answer = await _twice(client, config, "forget", {"ids": [dropped["id"]], "request_id": "f-1"})
    assert answer == {"deleted": [dropped["id"]], "not_found": []}  # the retry's answer too, not not_found
    await _refused(client, config, "forget", {"ids": [kept["id"]], "request_id": "f-1"})
    assert rawdb.value(config, "SELECT count(*) FROM memories") == 1


async def test_update_session_retried_counts_one_turn(client: Client, config: Config) -> None:
    turn = {
        "session_id": "对话-1",
        "topic": "搬家 moving house",
        "emotion": {"primary": "anxious", "confidence": 0.8},
        "variables": {"城市": "上海", "step": 2},
        "request_id": "turn-1",
    }
    answer = await _twice(client, config, "update_session", turn)
    assert rawdb.value(config, "SELECT turn_count FROM sessions") == 1
    next_turn = await call(client, "update_session", **{**turn, "request_id": "turn-2"})
    assert next_turn != answer and rawdb.value(config, "SELECT turn_count FROM sessions") == 2
    await _refused(client, config, "update_session", {**turn, "topic": "另一个话题", "request_id": "turn-1"})


async def test_import_memories_retried(client: Client, config: Config) -> None:
    lines = [
        {"type": "entity", "name": "王小明", "entityType": "person", "observations": ["住在成都", "喜欢爬山"]},
        {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["Works as a nurse"]},
    ]
    data = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    answer = await _twice(client, config, "import_memories", {"data": data, "request_id": "imp-1"})
    assert answer["created"] == 3
    await _refused(client, config, "import_memories", {"data": data + "\n", "request_id": "imp-1"})


async def test_a_bad_request_id_is_refused(client: Client, config: Config) -> None:
    for bad in ("", "has space", "中文", "x" * 101, "tab\there"):
        result = await client.call_tool("remember", {"content": "The user likes tea", "request_id": bad})
        assert result.is_error, bad
    assert rawdb.value(config, "SELECT count(*) FROM memories") == 0
    await call(client, "remember", content="The user likes tea", request_id="x" * 100)


async def test_the_ledger_is_per_namespace_and_expires(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter, namespace="alice") as alice, Store(config, segmenter, namespace="bob") as bob:
        from mcp_memory_server.memory import MemoryService

        first = await MemoryService(alice).remember(content="Alice 喜欢绿茶", request_id="same")
        other = await MemoryService(bob).remember(content="Bob prefers coffee", request_id="same")
        # another namespace's request_id answers nothing here: Bob's call is a new write of his own
        assert other.action == "created" and other.memory.content == "Bob prefers coffee"
        rawdb.execute(config, "UPDATE write_requests SET created_at = '2020-01-01T00:00:00.000000+00:00'")
        # Expired: the id is free again (a new call, not a retry), and maintenance deletes the old rows.
        again = await MemoryService(alice).remember(content="Alice 也喜欢乌龙茶", request_id="same")
        assert again.action == "created" and again.id != first.id and again.memory.content == "Alice 也喜欢乌龙茶"
        await lifecycle.maintain(bob)
        assert rawdb.value(config, "SELECT count(*) FROM write_requests WHERE namespace = 'bob'") == 0
        assert rawdb.value(config, "SELECT count(*) FROM write_requests WHERE namespace = 'alice'") == 1
