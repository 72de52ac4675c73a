"""Arguments a tool's schema refuses come back as one line in our own words, naming the argument
and the rule, through the SDK's client: never pydantic's text or its website."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

pytestmark = pytest.mark.anyio

LONG_ZH = "用户每天早上喝一杯拿铁" * 200  # 2,200 characters
LONG_EN = "The user drinks a latte every morning. " * 60  # 2,340 characters

CASES: list[tuple[str, dict[str, Any], str]] = [
    # a required argument left out
    ("recall", {}, "recall: `query` is required"),
    ("update_session", {"topic": "咖啡"}, "update_session: `session_id` is required"),
    (
        "update_session",
        {"session_id": "s", "emotion": {"primary": "sad"}},
        "update_session: `emotion.confidence` is required",
    ),
    # the wrong type
    ("remember", {"content": 42}, "remember: `content` must be a string (got 42)"),
    ("recall", {"query": "咖啡", "limit": "five"}, 'recall: `limit` must be a whole number (got "five")'),
    ("list", {"limit": 2.5}, "list: `limit` must be a whole number (got 2.5)"),
    (
        "remember",
        {"content": "用户喜欢爵士乐", "importance": "high"},
        'remember: `importance` must be a number (got "high")',
    ),
    ("forget", {"ids": "mem_1"}, 'forget: `ids` must be an array (got "mem_1")'),
    ("forget", {"ids": [12]}, "forget: `ids[0]` must be a string (got 12)"),
    ("cleanup", {"dry_run": "maybe"}, 'cleanup: `dry_run` must be true or false (got "maybe")'),
    (
        "update_session",
        {"session_id": "s", "emotion": "开心"},
        'update_session: `emotion` must be an object (got "开心")',
    ),
    ("apply_changes", {"ops": {}}, "apply_changes: `ops` must be an array (got an object)"),
    # too long: characters are counted, Chinese the same as English
    ("remember", {"content": LONG_ZH}, "remember: `content` is longer than 2000 characters (got 2200)"),
    ("remember", {"content": LONG_EN}, "remember: `content` is longer than 2000 characters (got 2340)"),
    ("recall", {"query": "咖啡" * 1001}, "recall: `query` is longer than 2000 characters (got 2002)"),
    ("remember", {"content": "咖啡", "tags": ["长" * 41]}, "remember: `tags[0]` is longer than 40 characters (got 41)"),
    ("remember", {"content": ""}, "remember: `content` must not be empty"),
    # too many or too few items
    (
        "remember",
        {"content": "咖啡", "tags": [f"标签{i}" for i in range(21)]},
        "remember: `tags` has more than 20 items (got 21)",
    ),
    ("forget", {"ids": []}, "forget: `ids` needs at least 1 item (got 0)"),
    (
        "update_session",
        {"session_id": "s", "variables": {f"v{i}": i for i in range(51)}},
        "update_session: `variables` has more than 50 entries (got 51)",
    ),
    # out of range
    ("recall", {"query": "coffee", "limit": 500}, "recall: `limit` must be between 1 and 50 (got 500)"),
    ("recall", {"query": "coffee", "limit": 0}, "recall: `limit` must be between 1 and 50 (got 0)"),
    (
        "remember",
        {"content": "用户住在杭州", "importance": 1.5},
        "remember: `importance` must be between 0 and 1 (got 1.5)",
    ),
    ("list", {"limit": 201}, "list: `limit` must be between 1 and 200 (got 201)"),
    (
        "update_session",
        {"session_id": "s", "emotion": {"primary": "sad", "confidence": -1}},
        "update_session: `emotion.confidence` must be between 0 and 1 (got -1)",
    ),
    # an unknown enum value
    (
        "remember",
        {"content": "咖啡", "tier": "forever"},
        'remember: `tier` must be one of core, working (got "forever")',
    ),
    (
        "list",
        {"order_by": "最新"},
        'list: `order_by` must be one of updated, created, importance, accessed (got "最新")',
    ),
    (
        "import_memories",
        {"data": "- 用户喜欢爵士乐", "format": "yaml"},
        'import_memories: `format` must be one of auto, json, memory-jsonl, mem0, markdown (got "yaml")',
    ),
    # a field a nested object does not take
    (
        "update_session",
        {"session_id": "s", "emotion": {"primary": "happy", "confidence": 0.9, "mood": "good"}},
        "update_session: `emotion.mood` is not an accepted field",
    ),
    # several at once, in one line
    (
        "remember",
        {"content": "", "importance": 7, "tier": "x"},
        "remember: `content` must not be empty; `importance` must be between 0 and 1 (got 7); "
        '`tier` must be one of core, working (got "x")',
    ),
]


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


@pytest.mark.parametrize(("tool", "arguments", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_a_refused_argument_is_named_with_its_rule(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    (block,) = result.content
    assert block.type == "text"
    assert block.text == expected
    assert "\n" not in block.text and "pydantic" not in block.text.lower() and "http" not in block.text
    assert (await client.call_tool("list", {})).structured_content == {"total": 0, "items": [], "next_cursor": None}


async def test_a_long_text_is_never_repeated_back(client: Client) -> None:
    """The refused value is shown when it is short (a number, a word); a long text is the user's
    and stays out of the error."""
    secretish = "我的银行卡密码是" + "8" * 60
    result = await client.call_tool("recall", {"query": "x", "category": secretish})
    assert result.is_error and secretish not in result.content[0].text  # type: ignore[union-attr]
    typed = await client.call_tool("remember", {"content": "x", "importance": secretish})
    assert typed.content[0].text == "remember: `importance` must be a number (got a string)"  # type: ignore[union-attr]


async def test_an_unknown_argument_is_ignored_as_before(client: Client) -> None:
    """Arguments no tool declares are left out, not refused (the SDK's behaviour, unchanged)."""
    stored = await client.call_tool("remember", {"content": "用户喜欢爵士乐", "colour": "blue"})
    assert not stored.is_error and stored.structured_content is not None
    assert stored.structured_content["action"] == "created"


async def test_the_tool_s_own_errors_keep_their_wording(client: Client) -> None:
    """Only schema errors are rewritten: what the service refuses keeps its own message."""
    result = await client.call_tool("remember", {"content": "x", "category": "Not Valid!"})
    assert result.is_error and "category" in result.content[0].text  # type: ignore[union-attr]
    assert not result.content[0].text.startswith("remember: `")  # type: ignore[union-attr]
