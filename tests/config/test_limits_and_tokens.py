"""Configuration of access and limits: token syntax, the token table, namespaces served over
stdio, and every configurable limit enforced with a message that names it (through the SDK's
in-memory client, on a real database)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config, parse_tokens
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.runtime import Access, new_token
from mcp_memory_server.server import build_server
from mcp_memory_server.server.transports import transport_security
from mcp_memory_server.text import Segmenter

TOKEN_A = "a" * 16 + "-token-one"
TOKEN_B = "b" * 16 + "_token-two"


def test_token_entries_name_their_namespace_or_take_the_default() -> None:
    raw = f"# team tokens\nalice:{TOKEN_A}\n{TOKEN_B} , "
    assert parse_tokens(raw) == {TOKEN_A: "alice", TOKEN_B: ""}
    assert parse_tokens(TOKEN_B, "work") == {TOKEN_B: "work"}
    assert parse_tokens(f"alice:{TOKEN_A},alice:{TOKEN_A}") == {TOKEN_A: "alice"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("alice:short", "too short"),
        (f"Alice:{TOKEN_A}", "namespace 'Alice' is not valid"),
        (f"alice:{TOKEN_A}\nbob:{TOKEN_A}", "entry 2: the same token is given for two namespaces"),
        ("alice:" + "密" * 20, "visible ASCII"),
        ("alice:" + "x" * 10 + " " + "y" * 10, "visible ASCII"),
    ],
)
def test_bad_token_entries_are_refused_without_echoing_the_token(raw: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        parse_tokens(raw)
    assert "short" not in str(caught.value).replace("too short", "")
    assert TOKEN_A not in str(caught.value)


def test_config_reads_tokens_and_keeps_them_out_of_its_repr(tmp_path: Path) -> None:
    config = Config.from_env(
        {"MCP_MEMORY_TOKENS": f"alice:{TOKEN_A},{TOKEN_B}", "MCP_MEMORY_NAMESPACE": "home"},
        db_path=tmp_path / "m.db",
    )
    assert dict(config.http.tokens) == {TOKEN_A: "alice", TOKEN_B: "home"}
    assert TOKEN_A not in repr(config) and TOKEN_B not in repr(config)
    with pytest.raises(InvalidInput, match="MCP_MEMORY_NAMESPACE"):
        Config.from_env({"MCP_MEMORY_NAMESPACE": "../etc"}, db_path=tmp_path / "m.db")


def test_the_token_table_merges_the_file_and_checks_in_constant_time(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"bob:{TOKEN_B}\n", encoding="utf-8")
    config = Config.from_env(
        {"MCP_MEMORY_TOKENS": f"alice:{TOKEN_A}", "MCP_MEMORY_TOKENS_FILE": str(tokens)}, db_path=tmp_path / "m.db"
    )
    access = Access.load(config)
    assert access is not None
    assert access.namespaces == ("alice", "bob")
    assert (access.namespace_for(TOKEN_A), access.namespace_for(TOKEN_B)) == ("alice", "bob")
    assert access.namespace_for(TOKEN_A + "x") is None and access.namespace_for("") is None
    assert Access.load(Config.from_env({}, db_path=tmp_path / "m.db")) is None

    tokens.write_text(f"carol:{TOKEN_A}\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="also given for another namespace"):
        Access.load(config)


def test_new_tokens_are_long_random_and_accepted() -> None:
    first, second = new_token(), new_token()
    assert first != second and len(first) >= 40
    assert parse_tokens(f"me:{first}") == {first: "me"}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory_server", "token"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and parse_tokens(done.stdout.strip())


def test_dns_rebinding_protection_accepts_loopback_and_the_configured_hosts() -> None:
    settings = transport_security(["memory.internal", "10.0.0.5:9000"])
    assert settings.enable_dns_rebinding_protection
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "memory.internal", "memory.internal:*"} <= set(
        settings.allowed_hosts
    )
    assert "10.0.0.5:9000" in settings.allowed_hosts and "10.0.0.5:9000:*" not in settings.allowed_hosts
    assert "https://memory.internal" in settings.allowed_origins


# ---- namespaces over stdio-like servers (one namespace per process) ----------------------------


@pytest.mark.anyio
async def test_two_processes_in_different_namespaces_share_a_file_but_not_memories(
    config: Config, segmenter: Segmenter
) -> None:
    work, home = config.with_changes(namespace="work"), config.with_changes(namespace="home")
    async with Client(build_server(work, segmenter)) as at_work, Client(build_server(home, segmenter)) as at_home:
        stored = await at_work.call_tool("remember", {"content": "项目代号是青鸟，周五发布", "key": "project.name"})
        assert stored.structured_content is not None
        memory_id = stored.structured_content["id"]
        found = await at_home.call_tool("recall", {"query": "青鸟 项目"})
        assert found.structured_content is not None and found.structured_content["hits"] == []
        gone = await at_home.call_tool("forget", {"ids": [memory_id]})
        assert gone.structured_content == {"deleted": [], "not_found": [memory_id]}
        found = await at_work.call_tool("recall", {"query": "青鸟"})
        assert found.structured_content is not None and found.structured_content["hits"][0]["id"] == memory_id
    with sqlite3.connect(config.db_path) as conn:
        assert conn.execute("SELECT namespace FROM memories").fetchall() == [("work",)]


# ---- limits -----------------------------------------------------------------------------------


@pytest.fixture
async def tight(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    limited = config.with_changes(
        max_content_chars=50, max_query_chars=30, max_tags=3, max_tag_chars=8, max_page=5, max_batch=4
    )
    async with Client(build_server(limited, segmenter)) as client:
        yield client


async def _refused(client: Client, tool: str, args: dict[str, Any], *needles: str) -> None:
    before = await client.call_tool("list", {"limit": 5})
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should refuse {args}"
    text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
    for needle in needles:
        assert needle in text, f"{tool}: {text!r} does not say {needle!r}"
    after = await client.call_tool("list", {"limit": 5})
    assert before.structured_content == after.structured_content, "a refused call changes nothing"


@pytest.mark.anyio
async def test_every_limit_is_enforced_with_a_message_that_says_it(tight: Client) -> None:
    ok = await tight.call_tool("remember", {"content": "喜欢喝乌龙茶", "tags": ["茶", "drink"]})
    assert not ok.is_error
    await _refused(tight, "remember", {"content": "长" * 51}, "50")
    await _refused(tight, "remember", {"content": "tags", "tags": ["a", "b", "c", "d"]}, "3")
    await _refused(tight, "remember", {"content": "tag length", "tags": ["abcdefghi"]}, "8")
    await _refused(tight, "recall", {"query": "q" * 31}, "30")
    await _refused(tight, "list", {"limit": 6}, "5")
    await _refused(tight, "forget", {"ids": ["mem_1", "mem_2", "mem_3", "mem_4", "mem_5"]}, "4")
    await _refused(tight, "restore", {"ids": ["mem_1", "mem_2", "mem_3", "mem_4", "mem_5"]}, "4")
    op = {"action": "add", "category": "fact", "payload": "x", "importance": 5, "source": "user"}
    await _refused(tight, "apply_changes", {"ops": [op | {"key": f"k{i}"} for i in range(5)]}, "4")
    tools = {t.name: t for t in (await tight.list_tools()).tools}
    assert tools["list"].input_schema["properties"]["limit"]["maximum"] == 5
    assert tools["list"].input_schema["properties"]["limit"]["default"] == 5
    assert tools["forget"].input_schema["properties"]["ids"]["maxItems"] == 4
    assert tools["apply_changes"].input_schema["properties"]["ops"]["maxItems"] == 4


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("MCP_MEMORY_MAX_TAGS", "5", "max_tags", 5),
        ("MCP_MEMORY_MAX_TAG_CHARS", "12", "max_tag_chars", 12),
        ("MCP_MEMORY_MAX_PAGE", "50", "max_page", 50),
        ("MCP_MEMORY_MAX_BATCH", "10", "max_batch", 10),
        ("MCP_MEMORY_MAX_BODY", "100000", "max_body_bytes", 100000),
        ("MCP_MEMORY_MAX_CONTENT", "1000", "max_content_chars", 1000),
        ("MCP_MEMORY_MAX_QUERY", "100", "max_query_chars", 100),
    ],
)
def test_limits_come_from_the_environment(tmp_path: Path, variable: str, value: str, field: str, expected: int) -> None:
    assert getattr(Config.from_env({variable: value}, db_path=tmp_path / "m.db").limits, field) == expected
    with pytest.raises(InvalidInput, match=variable):
        Config.from_env({variable: "0"}, db_path=tmp_path / "m.db")
