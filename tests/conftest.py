"""Shared fixtures: real SQLite files in tmp_path, one jieba load per test session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.service import MemoryService
from mcp_memory_server.store import Store


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def segmenter(cache_dir: Path) -> Segmenter:
    seg = Segmenter(cache_dir)
    seg.wait_sync()
    return seg


@pytest.fixture
def config(tmp_path: Path, cache_dir: Path) -> Config:
    return Config.from_env({}, db_path=tmp_path / "memory.db", cache_dir=cache_dir)


@pytest.fixture
async def store(config: Config, segmenter: Segmenter) -> AsyncIterator[Store]:
    async with Store(config, segmenter) as opened:
        yield opened


@pytest.fixture
async def service(store: Store) -> MemoryService:
    return MemoryService(store)
