"""The migration that gives every key slot its one spelling (store/key_slots.py), on both backends:
a database whose keys were stored as written, with one fact in three slots, opens with one slot
holding the newest value and the older values in its history; nothing else changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory_server.config.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.models import Draft
from mcp_memory_server.store import Store
from mcp_memory_server.store.key_slots import MIGRATION
from mcp_memory_server.store.rows import parse_id
from mcp_memory_server.text.segmenter import Segmenter
from mcp_memory_server.text.tokens import fingerprint

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")
T0 = datetime(2026, 3, 1, 8, 30, tzinfo=UTC)


async def _written_as_before(config: Config, segmenter: Segmenter) -> dict[str, str]:
    """Memories keyed as clients spelt them, as the store kept keys before the migration: ids by
    label."""
    rows = [
        ("", "oldest", Draft(content="The user lives in Berlin", key="User.City", category="identity")),
        ("", "middle", Draft(content="用户住在杭州", key="user.\u0441ity", category="identity")),  # Cyrillic с
        ("", "newest", Draft(content="The user lives in Lisbon", key="ｕｓｅｒ．ｃｉｔｙ", category="identity")),
        ("", "alone", Draft(content="我在字节跳动工作", key="User.Employer", category="identity")),
        ("", "plain", Draft(content="I like green tea", category="preference")),
        ("other", "theirs", Draft(content="Lives in Paris", key="USER.CITY", category="identity")),
    ]
    ids: dict[str, str] = {}
    for minute, (namespace, label, draft) in enumerate(rows):
        async with Store(config, segmenter, namespace=namespace) as store, store.transaction() as tx:
            memory = await tx.insert(draft, fingerprint(draft.content), T0 + timedelta(minutes=minute))
            ids[label] = memory.id
    async with Store(config, segmenter) as store, store.transaction() as tx:  # the middle one was updated
        seq = parse_id(ids["middle"])
        assert seq is not None
        draft = Draft(content="用户住在上海", key="user.\u0441ity", category="identity")
        await tx.replace(seq, draft, fingerprint(draft.content), T0 + timedelta(minutes=1, seconds=30), "updated")
    rawdb.execute(config, f"DELETE FROM schema_migrations WHERE version = {MIGRATION}")
    return ids


async def test_one_fact_in_several_slots_becomes_one_slot(config: Config, segmenter: Segmenter) -> None:
    ids = await _written_as_before(config, segmenter)
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        live = {m.id: m for m in (await service.list_memories(limit=50)).items}
        assert set(live) == {ids["newest"], ids["alone"], ids["plain"]}
        assert live[ids["newest"]].key == "user.city"
        assert live[ids["newest"]].content == "The user lives in Lisbon"
        assert live[ids["alone"]].key == "user.employer"
        history = await service.history(ids["newest"])
        told = [(h["content"], h["reason"]) for h in history]
        # the merged memories' values and the middle one's own earlier value, oldest merged first
        assert ("The user lives in Berlin", "merged") in told
        assert ("用户住在上海", "merged") in told
        assert ("用户住在杭州", "updated") in told
        # the full-text index was rebuilt with the new spelling and without the merged memories
        assert rawdb.value(config, "SELECT count(*) FROM memory_fts") == 4
        found = await service.recall(query="where does the user live", limit=5)
        assert found.hits[0].id == ids["newest"]
        assert not {h.id for h in found.hits} & {ids["oldest"], ids["middle"]}
        # a write in any spelling now updates the one slot
        again = await service.remember(content="The user lives in Porto", key="USER.CITY", category="identity")
        assert (again.action, again.id) == ("updated", ids["newest"])
    async with Store(config, segmenter, namespace="other") as theirs:
        memory = await theirs.get(parse_id(ids["theirs"]) or 0)
        assert memory is not None and (memory.key, memory.content) == ("user.city", "Lives in Paris")


async def test_the_migration_runs_once_and_a_clean_database_is_untouched(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as store:
        await MemoryService(store).remember(content="我喜欢喝拿铁", key="user.drink", category="preference")
    before = rawdb.rows(config, "SELECT seq, key, content FROM memories")
    built = rawdb.value(config, "SELECT value FROM meta WHERE name = 'index_version'")
    rawdb.execute(config, f"DELETE FROM schema_migrations WHERE version = {MIGRATION}")
    async with Store(config, segmenter):
        pass
    assert rawdb.rows(config, "SELECT seq, key, content FROM memories") == before
    assert rawdb.value(config, "SELECT value FROM meta WHERE name = 'index_version'") == built
    assert rawdb.value(config, f"SELECT count(*) FROM schema_migrations WHERE version = {MIGRATION}") == 1
