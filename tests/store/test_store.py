"""The store on both backends (a real SQLite file, a real PostgreSQL database): migrations,
transactions, the full-text index staying in sync."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime

import anyio
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import StoreError
from mcp_memory_server.models import Draft
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import parse_id
from mcp_memory_server.store.sqlite.backend import SqliteBackend
from mcp_memory_server.store.sqlite.schema import MIGRATIONS
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import INDEX_VERSION, fingerprint, keyword_query

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")
LATEST = max(version for version, _, _ in MIGRATIONS)
NOW = datetime(2026, 11, 1, tzinfo=UTC)


async def _find(store: Store, word: str) -> list[str]:
    query = keyword_query(word)
    assert query is not None
    return [c.id for c in await store.search_index([query], 10)]


def _draft(content: str, **kw: object) -> Draft:
    return Draft(content=content, **kw)  # type: ignore[arg-type]


async def _insert(store: Store, content: str, **kw: object) -> int:
    async with store.transaction() as tx:
        memory = await tx.insert(_draft(content, **kw), fingerprint(content), NOW)
    seq = parse_id(memory.id)
    assert seq is not None
    return seq


def _counts(config: Config) -> tuple[int, int, int]:
    counts = [rawdb.value(config, f"SELECT count(*) FROM {t}") for t in ("memories", "memory_fts", "memory_history")]
    return counts[0], counts[1], counts[2]


async def test_migrations_are_recorded_once(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as store:
        assert await store.schema_version() == LATEST
    async with Store(config, segmenter) as store:  # reopening applies nothing again
        assert await store.schema_version() == LATEST
    assert rawdb.value(config, "SELECT count(*) FROM schema_migrations") == len(MIGRATIONS)
    assert rawdb.value(config, "SELECT value FROM meta WHERE name = 'index_version'") == str(INDEX_VERSION)
    if config.db_url is None:
        assert rawdb.value(config, "PRAGMA journal_mode") == "wal"


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
    assert await _find(store, "咖啡") == [f"mem_{seq}"]

    async with store.transaction() as tx:
        await tx.replace(seq, _draft("我每天早上喝一杯美式", category="preference"), "h", NOW, "updated")
    assert _counts(config) == (1, 1, 1)
    assert await _find(store, "咖啡") == []
    assert await _find(store, "美式") == [f"mem_{seq}"]

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
    rawdb.execute(config, "DELETE FROM memory_fts", "UPDATE meta SET value = '0' WHERE name = 'index_version'")
    async with Store(config, segmenter) as reopened:
        assert len(await _find(reopened, "拼音")) == 1
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
        assert await _find(bob, "cardamom") == []
        assert await _find(alice, "cardamom") == [f"mem_{seq}"]
        async with bob.transaction() as tx:
            assert await tx.delete([seq]) == []
        assert await alice.get(seq) is not None


def test_parse_id() -> None:
    assert parse_id("mem_12") == 12
    # Only the spelling memory_id writes: one id, one memory (mem_012 is not mem_12).
    spellings = (" mem_7 ", "mem_012", "mem_+12", "MEM_12")
    for bad in ("mem_", "mem_x", "memo_1", "12", "mem_-1", "mem_١٢", "mem_" + "9" * 30, *spellings):
        assert parse_id(bad) is None


async def test_index_follows_writes_of_another_connection(config: Config, segmenter: Segmenter) -> None:
    # Each process keeps its own in-memory index; the change log keeps it in step with the others.
    async with Store(config, segmenter) as a, Store(config, segmenter) as b:
        assert await _find(b, "cardamom") == []  # b builds its index now, before a writes
        seq = await _insert(a, "Cardamom buns from the bakery on Linnégatan")
        assert await _find(b, "cardamom") == [f"mem_{seq}"]
        async with a.transaction() as tx:
            await tx.replace(seq, _draft("Cinnamon buns from the bakery"), "h", NOW, "updated")
        assert await _find(b, "cardamom") == []
        assert await _find(b, "cinnamon") == [f"mem_{seq}"]
        async with a.transaction() as tx:
            await tx.delete([seq])
        assert await _find(b, "cinnamon") == []


def test_bm25_ranks_rare_terms_higher_and_compacts() -> None:
    from mcp_memory_server.index import Bm25Index, KeywordQuery

    index = Bm25Index()
    index.add_many([(1, "tea green"), (2, "tea black"), (3, "coffee black")])
    ranked = index.search([KeywordQuery(("tea",)), KeywordQuery(("green",))], 10, feedback_docs=0)
    assert [seq for seq, _ in ranked] == [1, 2]
    assert index.search([KeywordQuery(("bla",), prefix=True)], 10, feedback_docs=0)[0][0] in (2, 3)
    assert index.search([KeywordQuery(("雾凇", "凇拼"))], 10) == []  # every term of a phrase must occur
    for seq in range(10, 2000):
        index.add(seq, "filler")
    for seq in range(10, 2000):
        index.remove(seq)
    assert index.needs_compaction() and len(index) == 3


async def test_many_writes_from_another_connection_rebuild_the_index(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as a, Store(config, segmenter) as b:
        async with a.transaction() as tx:
            for n in range(1200):
                await tx.insert(_draft(f"note {n} about tea"), fingerprint(f"note {n} about tea"), NOW)
        assert len(await _find(b, "tea")) == 10  # b builds its index
        built = b._live.index
        assert built is not None
        async with a.transaction() as tx:
            for n in range(1600):
                await tx.insert(_draft(f"note {n} about cocoa"), fingerprint(f"note {n} about cocoa"), NOW)
        assert len(await _find(b, "cocoa")) == 10  # more than a quarter new: b rebuilt its index
        assert b._live.index is not built and len(built) == 0  # the old one was emptied first
        assert b._live.index is not None and len(b._live.index) == 2800


@pytest.mark.sqlite_only
async def test_candidate_rows_are_read_on_the_loop_or_the_worker_thread_alike(
    config: Config, segmenter: Segmenter
) -> None:
    """Search reads its candidates through a second, read-only connection on the event loop; when
    that read fails (as when SQLite reports the file busy) the worker thread's connection answers."""
    queries = [q for q in (keyword_query("跑步"), keyword_query("lake")) if q is not None]
    async with Store(config, segmenter) as store, Store(config, segmenter) as other:
        await _insert(store, "我喜欢在周末去西湖边跑步")
        await _insert(other, "Weekend runs by the lake, 10 km")
        fast = [(c.id, c.raw) for c in await store.search_index(queries, 10)]
        assert len(fast) == 2  # the other connection's write is seen too
        db = store._db
        assert isinstance(db, SqliteBackend)
        peeker = db._peeker
        assert peeker is not None
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            peeker.execute("DELETE FROM memories")
        peeker.close()
        db._peeker = sqlite3.connect(":memory:")  # no such table: the read fails with OperationalError
        assert [(c.id, c.raw) for c in await store.search_index(queries, 10)] == fast


@pytest.mark.sqlite_only
async def test_a_write_cancelled_while_it_waits_for_the_lock_leaves_no_transaction_open(
    store: Store, config: Config
) -> None:
    """A write cancelled while its BEGIN waits for another process's lock (a client gone, the
    server shutting down): the BEGIN still runs once the lock is free, and must not leave a
    transaction open that makes every later write fail."""
    other = sqlite3.connect(config.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock

    async def release() -> None:
        await anyio.sleep(0.5)
        other.execute("COMMIT")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(release)
        with anyio.move_on_after(0.2):
            async with store.transaction() as tx:
                await tx.insert(_draft("never written: the caller gave up"), "digest-1", NOW)
    other.close()
    async with store.transaction() as tx:
        await tx.insert(_draft("later writes still work / 之后的写入照常"), "digest-2", NOW)
    with sqlite3.connect(config.db_path) as check:
        stored = [row[0] for row in check.execute("SELECT content FROM memories")]
    assert stored == ["later writes still work / 之后的写入照常"]


@pytest.mark.sqlite_only
async def test_closing_while_the_delayed_access_write_waits_for_the_lock_loses_nothing(
    config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall's access counts are written a moment later, in the background. If the store closes
    while that write waits for another process's write lock, the close waits for it: the counts
    are stored and the database is not shut under the write ("Cannot operate on a closed
    database" in a task nobody awaits)."""
    from mcp_memory_server.store import access_counts

    monkeypatch.setattr(access_counts, "TOUCH_DELAY", 0.05)
    store = Store(config, segmenter)
    await store.open()
    seq = await _insert(store, "喝咖啡 coffee in the morning")
    failures: list[BaseException] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: failures.append(context.get("exception") or Exception()))
    other = sqlite3.connect(config.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    store.touch([seq], NOW)
    await anyio.sleep(0.3)  # the delayed write has started and waits for the lock

    async def release() -> None:
        await anyio.sleep(0.3)
        other.execute("COMMIT")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(release)
        await store.close()
    other.close()
    await anyio.sleep(0.1)
    loop.set_exception_handler(None)
    assert failures == []
    assert rawdb.value(config, f"SELECT access_count FROM memories WHERE seq = {seq}") == 1
