"""The store on real SQLite files: migrations, transactions, the full-text index staying in sync."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import anyio
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import StoreError
from mcp_memory_server.models import Draft
from mcp_memory_server.rows import parse_id
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.store import Store
from mcp_memory_server.tokens import INDEX_VERSION, fingerprint

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _draft(content: str, **kw: object) -> Draft:
    return Draft(content=content, **kw)  # type: ignore[arg-type]


async def _insert(store: Store, content: str, **kw: object) -> int:
    async with store.transaction() as tx:
        memory = await tx.insert(_draft(content, **kw), fingerprint(content), NOW)
    seq = parse_id(memory.id)
    assert seq is not None
    return seq


def _counts(config: Config) -> tuple[int, int, int]:
    db = sqlite3.connect(config.db_path)
    try:
        return tuple(
            db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[return-value]
            for t in ("memories", "memory_fts", "memory_history")
        )
    finally:
        db.close()


async def test_migrations_are_recorded_once(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as store:
        assert await store.schema_version() == 1
    async with Store(config, segmenter) as store:  # reopening applies nothing again
        assert await store.schema_version() == 1
    db = sqlite3.connect(config.db_path)
    assert db.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 1
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT value FROM meta WHERE name = 'index_version'").fetchone()[0] == str(INDEX_VERSION)
    db.close()


async def test_open_reports_an_unusable_path(tmp_path: object, segmenter: Segmenter, cache_dir: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    config = Config.from_env({}, db_path=blocker / "memory.db", cache_dir=tmp_path)
    with pytest.raises(StoreError, match="cannot open the memory database"):
        await Store(config, segmenter).open()


async def test_index_follows_insert_replace_delete(store: Store, config: Config) -> None:
    seq = await _insert(store, "我每天早上喝一杯拿铁咖啡", category="preference")
    assert _counts(config) == (1, 1, 0)
    assert [c.memory.id for c in await store.search_fts('"咖啡"*', 10)] == [f"mem_{seq}"]

    async with store.transaction() as tx:
        await tx.replace(seq, _draft("我每天早上喝一杯美式", category="preference"), "h", NOW, "updated")
    assert _counts(config) == (1, 1, 1)
    assert await store.search_fts('"咖啡"*', 10) == []
    assert len(await store.search_fts('"美式"*', 10)) == 1

    async with store.transaction() as tx:
        assert await tx.delete([seq, 999]) == [seq]
    assert _counts(config) == (0, 0, 0)


async def test_failed_transaction_leaves_nothing(store: Store, config: Config) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.insert(_draft("half written"), "h", NOW)
            raise RuntimeError("boom")
    assert _counts(config) == (0, 0, 0)


async def test_index_is_rebuilt_when_its_version_changes(store: Store, config: Config, segmenter: Segmenter) -> None:
    await _insert(store, "I use the Rime input method with 雾凇拼音")
    await store.close()
    db = sqlite3.connect(config.db_path)
    db.execute("DELETE FROM memory_fts")
    db.execute("UPDATE meta SET value = '0' WHERE name = 'index_version'")
    db.commit()
    db.close()
    async with Store(config, segmenter) as reopened:
        assert len(await reopened.search_fts('"拼音"*', 10)) == 1
    assert _counts(config) == (1, 1, 0)


async def test_two_connections_write_concurrently_without_loss(config: Config, segmenter: Segmenter) -> None:
    # Two Store objects are two independent SQLite connections, as two server processes would be.
    async with Store(config, segmenter) as a, Store(config, segmenter) as b:

        async def write(store: Store, prefix: str) -> None:
            for i in range(40):
                await _insert(store, f"{prefix} memory number {i}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, a, "alpha")
            tg.start_soon(write, b, "beta")
    assert _counts(config) == (80, 80, 0)


async def test_namespaces_do_not_see_each_other(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter, namespace="alice") as alice, Store(config, segmenter, namespace="bob") as bob:
        seq = await _insert(alice, "Alice's secret recipe uses cardamom")
        assert await bob.get(seq) is None
        assert await bob.search_fts('"cardamom"*', 10) == []
        async with bob.transaction() as tx:
            assert await tx.delete([seq]) == []
        assert await alice.get(seq) is not None


def test_parse_id() -> None:
    assert parse_id("mem_12") == 12
    assert parse_id(" mem_7 ") == 7
    for bad in ("mem_", "mem_x", "memo_1", "12", "mem_-1", "mem_١٢", "mem_" + "9" * 30):
        assert parse_id(bad) is None
