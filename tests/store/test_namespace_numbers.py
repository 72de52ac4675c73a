"""A database written before memory ids were counted per namespace (one seq for the whole
database: alice's memories were mem_1, mem_3, ..., bob's mem_2, mem_4, ...) upgrades in place on
both backends: every id given out before still names the same memory, archived and deleted ones
included, and no namespace ever hands out one of the old ids again, a namespace new to the
database included."""

from __future__ import annotations

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import NotFound
from mcp_memory_server.memory import MemoryService, lifecycle
from mcp_memory_server.store import Store, extraction_log
from mcp_memory_server.store.postgres.backend import PgBackend
from mcp_memory_server.store.sqlite.backend import SqliteBackend
from mcp_memory_server.store.sqlite.schema import MIGRATIONS
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import fingerprint

from .. import rawdb

pytestmark = [pytest.mark.anyio, pytest.mark.fresh_database]  # each builds an older schema itself
BACKENDS = ("sqlite", "postgresql")

NUMBERED = 11  # the migration that counts ids per namespace
# (namespace, content, key, category) in the order the old release wrote them: seqs 1 to 6.
OLD = [
    ("alice", "我最喜欢的茶是冻顶乌龙", "drink.tea", "preference"),
    ("bob", "Bob plays the saxophone in a jazz band", None, "hobby"),
    ("alice", "I run along the river every morning", None, "habit"),
    ("bob", "鲍勃住在北京朝阳区", "user.city", "identity"),
    ("alice", "Alice 的旧车是红色的 (archived by cleanup)", None, "fact"),
    ("alice", "Alice deleted this one 已删除", None, "fact"),
]
T = "2026-03-01T08:30:00.000000+00:00"


async def _old_database(config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema of the release before, with rows as it wrote them."""
    backend = PgBackend if config.db_url is not None else SqliteBackend
    with monkeypatch.context() as m:
        m.setattr(backend, "migrations", [g for g in backend.migrations if g[0] < NUMBERED])
        async with Store(config, segmenter) as old:
            assert await old.schema_version() < NUMBERED
    for namespace, content, key, category in OLD:
        rawdb.rows(
            config,
            "INSERT INTO memories (namespace, content, key, category, tier, importance, confidence, source,"
            " content_hash, created_at, updated_at, last_accessed) VALUES (?, ?, ?, ?, 'core', 0.6, 0.9, 'user',"
            " ?, ?, ?, ?)",
            (namespace, content, key, category, fingerprint(content), T, T, T),
        )
    rawdb.rows(
        config,
        "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
        " reason, changed_at) VALUES (1, '我最喜欢的茶是绿茶', 'drink.tea', 'preference', 0.5, 0.8, '[]', 'user',"
        " 'updated', ?)",
        (T,),
    )
    # Cleanup moved seq 5 to the archive; seq 6 was forgotten.
    rawdb.rows(config, "INSERT INTO memory_archive SELECT *, updated_at, 'cleanup: unused' FROM memories WHERE seq = 5")
    rawdb.rows(config, "DELETE FROM memories WHERE seq IN (5, 6)")
    report = '{"outcome": "stored", "detail": "d", "items": []}'
    for namespace, note in (("alice", 3), ("bob", None)):
        rawdb.rows(
            config,
            "INSERT INTO extraction_log (namespace, digest, status, input, fast, deep, note_seq, created_at,"
            ' updated_at) VALUES (?, \'d\', \'done\', \'{"user": "你好", "assistant": "hi"}\', ?, ?, ?, ?, ?)',
            (namespace, report, report, note, T, T),
        )
    rawdb.rows(config, "UPDATE meta SET value = '0' WHERE name = 'index_version'")  # rebuilt on open


async def test_every_id_given_before_the_upgrade_names_the_same_memory(
    config: Config, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _old_database(config, segmenter, monkeypatch)
    async with (
        Store(config, segmenter, "alice") as alice_store,
        Store(config, segmenter, "bob") as bob_store,
        Store(config, segmenter, "carol") as carol_store,
    ):
        assert await alice_store.schema_version() == MIGRATIONS[-1][0]
        alice, bob, carol = MemoryService(alice_store), MemoryService(bob_store), MemoryService(carol_store)
        for seq, (namespace, content, key, category) in enumerate(OLD[:4], 1):
            owner, other = (alice, bob) if namespace == "alice" else (bob, alice)
            memory = await owner.get(f"mem_{seq}")
            assert (memory.content, memory.key, memory.category) == (content, key, category)
            with pytest.raises(NotFound):
                await other.get(f"mem_{seq}")  # the other namespace never had that id
        assert [h["content"] for h in await alice.history("mem_1")] == ["我最喜欢的茶是绿茶"]
        hits = (await alice.recall(query="冻顶乌龙", track_access=False)).hits
        assert [h.id for h in hits] == ["mem_1"]
        assert (await bob.recall(query="saxophone jazz", track_access=False)).hits[0].id == "mem_2"

        # The archived memory comes back under its id; the forgotten one stays gone.
        assert (await lifecycle.restore(alice_store, ["mem_5"])).restored == ["mem_5"]
        assert (await alice.get("mem_5")).content == OLD[4][1]
        assert (await alice.forget(["mem_6"])).not_found == ["mem_6"]

        # No namespace hands out an id of the old numbering again, a new namespace included.
        assert (await alice.remember(content="Alice 的新车是白色的")).id == "mem_7"
        assert (await bob.remember(content="Bob's cat is called 小米")).id == "mem_7"
        assert (await carol.remember(content="Carol joined the team in March 三月")).id == "mem_7"
        assert (await alice.remember(content="Alice 下周去杭州出差")).id == "mem_8"

        # Listing pages follow each other across the old and the new ids.
        first = await alice.list_memories(limit=2, order_by="created")
        assert first.next_cursor is not None
        rest = await alice.list_memories(limit=10, order_by="created", cursor=first.next_cursor)
        assert sorted(m.id for m in first.items + rest.items) == ["mem_1", "mem_3", "mem_5", "mem_7", "mem_8"]

        # Sieve runs keep their ids and fallback notes; new runs count on in their namespace.
        async with alice_store.reading() as tx:
            (logged,) = await extraction_log.recent(tx, 5)
        assert (logged.run, logged.fallback_note) == ("run_1", "mem_3")
        async with bob_store.reading() as tx:
            assert [e.run for e in await extraction_log.recent(tx, 5)] == ["run_2"]
        async with alice_store.transaction() as tx:
            report = extraction_log.ChannelReport(outcome="nothing", detail="无 none", items=[])
            number = await extraction_log.insert(
                tx,
                digest="d2",
                session_id=None,
                client=None,
                previews=("x", "y"),
                fast=report,
                deep=report,
                note_seq=None,
                moment=logged.created_at,
            )
        assert number == 2

    assert rawdb.rows(config, "SELECT count(*) FROM memories WHERE number <> seq AND seq <= 4") == [(0,)]
