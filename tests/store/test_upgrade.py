"""A database made by the first released schema (commit 0aeb8e5: migration 1 only) opens with
today's store: migrated in place, nothing lost, the full-text index rebuilt, and writable.
The fixture and how it was made: tests/data/README.md."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store.sqlite.schema import MIGRATIONS
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import INDEX_VERSION

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parent.parent / "data" / "schema_v1.db"
COLUMNS = (
    "seq, content, key, category, tier, importance, confidence, source, tags, session_id, client,"
    " created_at, updated_at, last_accessed, access_count"
)


def _rows(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    assert path.exists(), f"{path} is missing (sqlite3 would create an empty database)"
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql, args).fetchall()
    finally:
        connection.close()


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURE, path)
    return path


def test_the_fixture_is_a_first_release_database() -> None:
    assert _rows(FIXTURE, "SELECT version FROM schema_migrations") == [(1,)]
    assert _rows(FIXTURE, "SELECT value FROM meta WHERE name = 'index_version'") == [("1",)]
    tables = {r[0] for r in _rows(FIXTURE, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "memory_changes" not in tables and "memory_archive" not in tables and "profile" not in tables
    assert _rows(FIXTURE, "SELECT count(*) FROM memories") == [(30,)]
    assert _rows(FIXTURE, "SELECT count(DISTINCT memory_seq), count(*) FROM memory_history") == [(4, 5)]


async def test_a_first_release_database_is_upgraded_in_place(
    old_db: Path, cache_dir: Path, segmenter: Segmenter
) -> None:
    memories = _rows(old_db, f"SELECT {COLUMNS} FROM memories ORDER BY seq")
    history = _rows(old_db, "SELECT * FROM memory_history ORDER BY seq")
    sessions = _rows(old_db, "SELECT * FROM sessions")
    config = Config.from_env({}, db_path=old_db, cache_dir=cache_dir)

    async with Store(config, segmenter) as store:
        assert await store.schema_version() == MIGRATIONS[-1][0]
        service = MemoryService(store)
        for (
            seq,
            content,
            key,
            category,
            tier,
            importance,
            confidence,
            source,
            tags,
            session,
            client,
            *times,
        ) in memories:
            memory = await service.get(f"mem_{seq}")
            assert (memory.content, memory.key, memory.category, memory.tier) == (content, key, category, tier)
            assert (memory.importance, memory.confidence, memory.source) == (importance, confidence, source)
            assert (memory.tags, memory.session_id, memory.client) == (json.loads(tags), session, client)
            stamps = (memory.created_at, memory.updated_at, memory.last_accessed)
            assert [s.isoformat(timespec="microseconds") for s in stamps] == times[:3]
            assert memory.access_count == times[3]
        city = await service.history("mem_2")
        assert [h["content"] for h in city] == ["我住在杭州西湖区"]
        assert (await service.get("mem_2")).content == "我搬到了上海浦东"
        editor = await service.history("mem_19")
        assert [h["content"] for h in editor] == [
            "用 VS Code 写代码，装了 Vim 插件",
            "现在用 Cursor 写代码，还是开着 Vim 模式",
        ]

        chinese = await service.recall(query="我早上喝什么咖啡", track_access=False)
        assert chinese.hits and chinese.hits[0].id == "mem_1"
        english = await service.recall(query="which theme do I prefer in the editor", track_access=False)
        assert english.hits and english.hits[0].id == "mem_11"
        mixed = await service.recall(query="VS Code 的 Vim 插件", track_access=False)
        assert mixed.hits and mixed.hits[0].id == "mem_19"

        created = await service.remember(content="升级之后写入的第一条记忆：喜欢乌龙茶", category="preference")
        assert created.action == "created" and created.id == "mem_32"  # after every id the old release gave
        assert (await service.recall(query="乌龙茶", track_access=False)).hits[0].id == "mem_32"
        updated = await service.remember(content="我又搬回了杭州", category="identity", key="user.city")
        assert updated.action == "updated" and updated.id == "mem_2"
        assert (await service.forget(["mem_1", "mem_26"])).model_dump() == {
            "deleted": ["mem_1"],
            "not_found": ["mem_26"],
        }

    assert _rows(old_db, "SELECT value FROM meta WHERE name = 'index_version'") == [(str(INDEX_VERSION),)]
    assert _rows(old_db, "PRAGMA integrity_check") == [("ok",)]
    # FTS5's own check raises if an index entry does not match its row
    assert _rows(old_db, "INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)") == []
    assert _rows(old_db, "SELECT count(*) FROM memory_fts") == [(30,)]
    assert _rows(old_db, "SELECT count(*) FROM memory_fts WHERE rowid NOT IN (SELECT seq FROM memories)") == [(0,)]
    kept = _rows(old_db, "SELECT * FROM memory_history WHERE seq <= ? ORDER BY seq", (history[-1][0],))
    assert kept == history  # the old history rows, untouched; the update added one more
    assert _rows(old_db, "SELECT count(*) FROM memory_history") == [(len(history) + 1,)]
    assert _rows(old_db, "SELECT * FROM sessions") == sessions
