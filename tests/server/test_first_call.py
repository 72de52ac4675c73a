"""The first tool calls after a client starts the server are answered without waiting for jieba's
dictionary: writes never need it, and a recall made while it loads is answered from the index's
character bigrams; once it has loaded, recall is the full path's."""

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

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import keywords, normalize

from ..calls import call
from ..gated_segmenter import GatedSegmenter

pytestmark = pytest.mark.anyio

MEMORY = "用户对花生过敏，吃了会起疹子 (peanut allergy)"


async def _stats(client: Client) -> dict[str, Any]:
    contents = (await client.read_resource("memory://stats")).contents[0]
    return dict(json.loads(contents.text))  # type: ignore[union-attr]


async def _wait_until_loaded(client: Client) -> None:
    """Poll the server's statistics (a client's only view of it) until the dictionary has loaded."""
    with anyio.fail_after(120):  # a hang, not a timing: building the dictionary takes about a second
        state = "loading"
        while state == "loading":
            await anyio.sleep(0.05)
            state = (await _stats(client))["segmenter"]
    assert state == "ready"


@pytest.mark.timeout(180)
async def test_a_fresh_install_answers_the_first_remember_before_jieba_has_loaded(tmp_path: Path) -> None:
    """The installed `jiyi` over stdio with a new, empty cache folder: jieba builds its dictionary
    from scratch (about a second of CPU), and the first remember is answered meanwhile."""
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "the console script is installed next to the test interpreter"
    env = {**os.environ, "MCP_MEMORY_DB": str(tmp_path / "fresh.db"), "MCP_MEMORY_CACHE_DIR": str(tmp_path / "cache")}
    async with Client(StdioServerParameters(command=command, args=["--log-level", "WARNING"], env=env)) as client:
        stored = await call(client, "remember", content=MEMORY, category="health")
        assert stored["action"] == "created"
        assert (await _stats(client))["segmenter"] == "loading", "remember was answered after jieba had loaded"
        assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").glob("jieba-*"))

        await _wait_until_loaded(client)
        assert any((tmp_path / "cache").glob("jieba-*.dict"))
        for query in ("花生", "我对什么过敏", "peanut allergy"):
            assert (await call(client, "recall", query=query))["hits"][0]["id"] == stored["id"], query
        again = await call(client, "remember", content=MEMORY + "。", category="health")
        assert (again["action"], again["id"]) == ("unchanged", stored["id"])


async def test_recall_before_jieba_has_loaded_answers_from_bigrams_then_from_words(
    config: Config, cache_dir: Path, segmenter: Segmenter
) -> None:
    """While the dictionary loads, Chinese, English and mixed queries find the memory from the
    index's character bigrams; once it has loaded, the same queries take jieba's words."""
    gated = GatedSegmenter(cache_dir)
    queries = ["花生过敏", "我对什么过敏", "吃了会怎么样", "peanut", "allergy 花生"]
    memories = [
        (MEMORY, "health"),
        ("我每天早上喝一杯拿铁咖啡", "preference"),
        ("用户住在上海浦东，在一家做芯片的公司上班", "identity"),
        ("The user is learning to play the guitar on weekends", "fact"),
    ]
    try:
        async with Client(build_server(config, gated)) as client:
            ids = [(await call(client, "remember", content=c, category=cat))["id"] for c, cat in memories]
            assert (await _stats(client))["segmenter"] == "loading"
            early = {}
            for query in queries:
                early[query] = found = await call(client, "recall", query=query)
                assert found["hits"][0]["id"] == ids[0], (query, found)
            assert gated.state == "loading", "the recalls were answered without the dictionary"
            # Bigrams the memory lacks do not find it.
            assert all(h["id"] != ids[0] for h in (await call(client, "recall", query="吉他"))["hits"])

            gated.gate.set()
            await _wait_until_loaded(client)
            late = {q: await call(client, "recall", query=q) for q in queries}
    finally:
        gated.gate.set()
    # Once loaded, the queries' keywords are jieba's, as on a server that started with it loaded;
    # before, they were the dictionary-free ones.
    for query in queries:
        words = keywords(segmenter.cut(normalize(query)), config.recall.max_keywords)
        assert late[query]["keywords"] == words, query
        assert late[query]["hits"][0]["id"] == ids[0], query
    assert any(early[q]["keywords"] != late[q]["keywords"] for q in queries)
