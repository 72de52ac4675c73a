"""Shared fixtures: real SQLite files in tmp_path, one jieba load per test session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from mcp_memory_server.config import Config
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.service import MemoryService
from mcp_memory_server.store import Store

# Hypothesis profiles of tests/test_hostile_input.py, registered here and used only there (other
# tests keep Hypothesis's defaults). "hostile-ci" draws the same examples on every run and keeps no
# example database, so a failure in CI fails again on any machine; "hostile-explore"
# (HOSTILE_PROFILE=explore) draws new ones each run and remembers failures in .hypothesis/.
_HOSTILE = {
    "deadline": None,  # a call's bound is the test's own (anyio.fail_after), not a per-example deadline
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    "print_blob": True,
}
settings.register_profile("hostile-ci", derandomize=True, database=None, **_HOSTILE)
settings.register_profile("hostile-explore", derandomize=False, **_HOSTILE)


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
