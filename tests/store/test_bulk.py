"""Bulk import: one transaction, all or nothing, and the full-text index, the change log and the
in-memory index agreeing with the memories afterwards."""

from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput, StoreError
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store import draft_values as draft_rows
from mcp_memory_server.store import tx as tx_module
from mcp_memory_server.store.postgres.backend import PgBackend
from mcp_memory_server.store.rows import iso, utcnow
from mcp_memory_server.store.sqlite.backend import SqliteBackend
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import fingerprint, index_text, keyword_query, normalize

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

TEXTS = [
    "我每天早上喝一杯拿铁咖啡",
    "The user prefers dark mode in every editor.",
    "用户住在上海，工作日骑车去公司。",
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "ＦＵＬＬ－ＷＩＤＴＨ Ｐｙｔｈｏｎ ３．１１ 和全角标点！？",
    "!!! ??? ...",
    "café naïve façade",
    'Tabs\tand\nnew lines, a backslash \\N and \\. as COPY would misread them; 50% "quoted"',
]


def _db(config: Config) -> sqlite3.Connection:
    return sqlite3.connect(config.db_path)


def _counts(config: Config) -> tuple[int, int, int]:
    counts = [rawdb.value(config, f"SELECT count(*) FROM {t}") for t in ("memories", "memory_fts", "memory_changes")]
    return counts[0], counts[1], counts[2]


def _items(count: int) -> list[dict[str, object]]:
    return [
        {"content": f"{TEXTS[i % len(TEXTS)]} #{i}", "category": "fact" if i % 3 else "preference", "tags": ["t"]}
        for i in range(count)
    ]


async def test_import_writes_memories_index_and_log_in_step(
    service: MemoryService, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tx_module, "_BATCH", 4)  # several batches, the last one short
    items = _items(23) + [{"content": t, "key": f"k{i}", "importance": 0.1 * i} for i, t in enumerate(TEXTS)]
    ids = await service.import_memories(items, client="importer")
    assert ids == [f"mem_{n}" for n in range(1, len(items) + 1)]
    assert _counts(config) == (len(items),) * 3

    rows = rawdb.rows(
        config,
        "SELECT m.seq, m.content, m.key, m.tags, m.category, m.content_hash, f.content, f.key, f.tags, f.category"
        " FROM memories m JOIN memory_fts f ON f.rowid = m.seq ORDER BY m.seq",
    )
    log = [r[0] for r in rawdb.rows(config, "SELECT seq FROM memory_changes ORDER BY change")]
    assert log == list(range(1, len(items) + 1))
    for _seq, content, key, tags, category, digest, *fts in rows:
        assert fingerprint(content) == digest
        assert fts == [index_text(content), index_text(key or ""), index_text(" ".join(json.loads(tags))), category]

    for item, memory_id in zip(items, ids, strict=True):
        memory = await service.get(memory_id)
        assert memory.content == item["content"] and memory.client == "importer"
        assert memory.importance == item.get("importance", 0.5)
    hits = await service.store.search_index([q for q in [keyword_query("拿铁")] if q], 50)
    assert {h.id for h in hits} == {ids[n] for n, item in enumerate(items) if "拿铁" in str(item["content"])}


async def test_import_is_all_or_nothing(service: MemoryService, config: Config) -> None:
    await service.import_memories([{"content": "kept", "key": "user.city"}])
    before = _counts(config)
    bad_items = [
        [*_items(5), {"content": "   "}],
        [*_items(5), {"content": "x", "importance": 2}],
        [*_items(5), {"content": "x", "colour": "red"}],
        [*_items(5), {"content": "a", "key": "k"}, {"content": "b", "key": "k"}],
        [*_items(5), {"content": "again", "key": "user.city"}],
    ]
    for items in bad_items:
        with pytest.raises(InvalidInput):
            await service.import_memories(items)
        assert _counts(config) == before
    with pytest.raises(InvalidInput, match=r"'user\.city' already exists"):
        await service.import_memories([{"content": "c", "key": "user.other"}, {"content": "d", "key": "user.city"}])


async def test_a_failing_write_rolls_back_every_batch(
    service: MemoryService, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tx_module, "_BATCH", 3)
    if config.db_url is not None:
        with psycopg.connect(config.db_url, autocommit=True) as pg:
            pg.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF new.content = 'boom' THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN new; END $$"
            )
            pg.execute("CREATE TRIGGER refuse BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION refuse()")
    else:
        db = _db(config)
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON memories WHEN new.content = 'boom'"
            " BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
        )
        db.commit()
        db.close()
    items = [*_items(7), {"content": "boom"}, *_items(5)]  # the third batch fails, later ones are queued
    with pytest.raises(StoreError, match="refused by test"):
        await service.import_memories(items)
    assert _counts(config) == (0, 0, 0)
    rawdb.execute(config, "DROP TRIGGER refuse" + (" ON memories" if config.db_url is not None else ""))
    ids = await service.import_memories(_items(4))  # the connection is still usable
    assert _counts(config) == (4, 4, 4)
    if config.db_url is None:
        assert ids[0] == "mem_1"  # nothing was committed, so nothing was used up
    # (PostgreSQL's sequences are not transactional: a rolled-back write leaves a gap in the ids)


async def test_imported_ids_are_never_reused(service: MemoryService) -> None:
    ids = await service.import_memories(_items(3))
    await service.forget(ids[1:])
    assert await service.import_memories(_items(2)) == ["mem_4", "mem_5"]
    created = await service.remember(content="one more, remembered")
    assert created.id == "mem_6"


async def test_other_processes_follow_an_import(service: MemoryService, config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as other:
        query = keyword_query("咖啡")
        assert query is not None
        assert await other.search_index([query], 10) == []
        ids = await service.import_memories([{"content": "我喜欢喝咖啡"}, {"content": "unrelated"}])
        assert [c.id for c in await other.search_index([query], 10)] == ids[:1]


async def test_remember_returns_the_row_as_stored(service: MemoryService) -> None:
    result = await service.remember(content="我喜欢喝咖啡", tags=["Drinks", "晨间"], key="drink", session_id="s1")
    assert result.memory == await service.get(result.id)


def test_fast_normalisation_is_normalize() -> None:
    full_width = "".join(chr(c) for c in (*range(0xFF01, 0xFF5F), 0x3000))
    samples = [*TEXTS, "", "ｶﾞ", "ｶﾞＡ", "Ａ\u0301", "e\uff0e\u0301", "\u3000\u0301", full_width, full_width[::-1]]
    samples += [f"{chr(c)}{w}{chr(c)}" for c in range(0x20, 0x3100) for w in ("，", "Ａ")]
    samples += [f"{w}{chr(c)}" for c in range(0x300, 0x370) for w in full_width[::7]]  # combining marks after them
    for text in samples:
        assert draft_rows.normalized(text) == normalize(text), repr(text)


def test_digest_equals_the_fingerprint() -> None:
    samples = [*TEXTS, "", " ", "！？", "\u3040", "a\u200bb", "ǅ", "ﬁ", "Ⅻ", "①②", "😀", "_", "__x__"]
    samples += [chr(c) for c in range(0x20, 0x3100)] + [chr(c) for c in range(0xF900, 0xFFFF)]
    for text in samples:
        assert draft_rows.digest(text, normalize(text)) == fingerprint(text), repr(text)


@pytest.mark.fresh_database  # the schema of the release before migration 3, built here
async def test_migration_upgrades_an_existing_database(
    config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = PgBackend if config.db_url is not None else SqliteBackend
    migrations = backend.migrations
    with monkeypatch.context() as m:
        m.setattr(backend, "migrations", migrations[:2])  # a database made before migration 3
        async with Store(config, segmenter) as old:
            assert await old.schema_version() == 2
    # Rows as that release wrote them (today's writes need today's columns); the full-text index
    # is built again on open, as after any release that changed how text is indexed.
    for item in _items(5):
        rawdb.rows(
            config,
            "INSERT INTO memories (content, category, tier, importance, confidence, source, content_hash,"
            " created_at, updated_at, last_accessed) VALUES (?, 'fact', 'core', 0.5, 0.8, 'user', ?, ?, ?, ?)",
            (item["content"], fingerprint(str(item["content"])), *[iso(utcnow())] * 3),
        )
    rawdb.rows(config, "UPDATE meta SET value = '0' WHERE name = 'index_version'")
    ids = [f"mem_{n}" for n in range(1, 6)]
    if config.db_url is None:
        db = _db(config)
        assert db.execute("SELECT * FROM memory_fts_config WHERE k = 'hashsize'").fetchall() == []
        db.close()

    async with Store(config, segmenter) as store:
        assert await store.schema_version() == migrations[-1][0]
        service = MemoryService(store)
        assert (await service.get(ids[0])).content == _items(1)[0]["content"]
        more = await service.import_memories(_items(3))
        assert more == ["mem_6", "mem_7", "mem_8"]
    if config.db_url is None:
        db = _db(config)
        assert db.execute("SELECT v FROM memory_fts_config WHERE k = 'hashsize'").fetchone()[0] == 8 * 1024 * 1024
        assert db.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')") is not None
        db.close()
    assert rawdb.value(config, "SELECT count(*) FROM schema_migrations") == len(migrations)
    assert _counts(config) == (8, 8, 8)


async def test_the_change_log_stays_bounded(
    service: MemoryService, config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tx_module, "_LOG_KEEP", 10)
    monkeypatch.setattr(tx_module, "_PRUNE_EVERY", 4)
    async with Store(config, segmenter) as other:
        query = keyword_query("coffee")
        assert query is not None
        assert await other.search_index([query], 50) == []  # builds its index now, follows the log later
        for n in range(30):
            await service.remember(content=f"coffee number {n} in the morning", key=f"k{n}")
            assert _counts(config)[2] <= 10 + 4
        ids = await service.import_memories([{"content": f"more coffee {n}"} for n in range(25)])
        assert _counts(config)[2] == 10  # an import prunes at its end
        # The other store fell more than the log's length behind: it rebuilds and finds everything.
        assert len(await other.search_index([query], 100)) == 30 + len(ids)
