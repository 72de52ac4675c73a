"""A database from before the profile had a table of its own kept it also as a memory (key
user.profile, category profile), which showed in recall and listings: on both backends the
upgrade removes that memory in every namespace, with its history and index row, and nothing else."""

from __future__ import annotations

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store.postgres.backend import PgBackend
from mcp_memory_server.store.profile_scrub import MIGRATION, PROFILE_KEY
from mcp_memory_server.store.rows import parse_id
from mcp_memory_server.store.sqlite.backend import SqliteBackend
from mcp_memory_server.text import Segmenter

from .. import rawdb

pytestmark = [pytest.mark.anyio, pytest.mark.fresh_database]  # each builds the schema before migration 13
BACKENDS = ("sqlite", "postgresql")


async def _number(service: MemoryService, content: str, key: str, category: str = "note") -> int:
    number = parse_id((await service.remember(content=content, key=key, category=category)).id)
    assert number is not None
    return number


async def test_the_profile_memory_of_earlier_versions_goes_at_the_upgrade(
    config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = PgBackend if config.db_url is not None else SqliteBackend
    kept: dict[str, int] = {}
    with monkeypatch.context() as m:
        m.setattr(backend, "migrations", [g for g in backend.migrations if g[0] < MIGRATION])
        for namespace, city, summary in (
            ("", "我住在杭州", "Profile: 住在杭州的后端工程师，喜欢乌龙茶"),
            ("bob", "Bob lives in Berlin", "Profile: a backend engineer in Berlin who likes oolong"),
        ):
            async with Store(config, segmenter, namespace=namespace) as old:
                assert await old.schema_version() < MIGRATION
                service = MemoryService(old)
                kept[namespace] = await _number(service, city, "user.city", "identity")
                await _number(service, summary, PROFILE_KEY)
                await service.remember(content=summary + "（更新）", key=PROFILE_KEY)  # a history row too
    # As earlier versions wrote it: of category profile.
    rawdb.rows(config, "UPDATE memories SET category = 'profile' WHERE key = 'user.profile'")
    assert rawdb.value(config, "SELECT count(*) FROM memories WHERE key = 'user.profile'") == 2

    for namespace in ("", "bob"):
        async with Store(config, segmenter, namespace=namespace) as store:
            assert await store.schema_version() == len(backend.migrations)
            assert (await store.get(kept[namespace])) is not None
            listed = await MemoryService(store).list_memories()
            assert [m.key for m in listed.items] == ["user.city"], listed
    assert rawdb.value(config, "SELECT count(*) FROM memories WHERE key = 'user.profile'") == 0
    assert rawdb.value(config, "SELECT count(*) FROM memory_history") == 0
    if config.db_url is None:
        assert rawdb.value(config, "SELECT count(*) FROM memory_fts") == 2
