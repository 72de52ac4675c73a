"""Property: export -> import into a fresh database -> export gives the same data (apart from
exported_at), recall over both databases finds the same memories, and importing the same file a
second time changes nothing. The memories come from real writes: remember (Chinese, English,
mixed, emoji, keys, tags, sessions), updates by key and merges (history), cleanup's archive,
forget, recall (access counts) and manual profile edits."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.profile import edit_profile
from mcp_memory_server.store import Store, archive
from mcp_memory_server.store.profile_scrub import PROFILE_KEY
from mcp_memory_server.store.rows import iso, parse_id, utcnow
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer.json_transfer import export_data, export_json, import_file

WORDS = [
    *("咖啡", "拿铁", "杭州", "西湖", "项目", "数据库", "跑步", "早餐", "会议", "代码", "出差", "周末", "猫"),
    *("coffee", "latte", "project", "database", "running", "breakfast", "meeting", "Python", "Rust", "editor"),
    *("😀", "🐱", "☕", "🚀", "VS Code", "API", "2026年3月"),
]
TABLES = ("memories", "memory_history", "memory_archive", "memory_history_archive", "sessions", "profile")

texts = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map("".join),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40),
)
remember = st.tuples(
    st.just("remember"),
    texts,
    st.sampled_from(["preference", "fact", "identity", "note", "project_state", "todo"]),
    st.none() | st.sampled_from(["user.city", "user.editor", "项目.名称", "user.theme"]),
    st.lists(st.sampled_from(["咖啡", "work", "家人", "python", "ui", "🎉"]), max_size=3),
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.sampled_from([("core", None), ("working", "会话-1"), ("core", "session-2")]),
)
operation = st.one_of(
    remember,
    remember,
    st.tuples(st.just("archive"), st.integers(0, 50)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("recall"), st.sampled_from(WORDS)),
    st.tuples(st.just("recall"), st.sampled_from(WORDS)),
    st.tuples(
        st.just("profile"),
        st.sampled_from(["domains", "active_projects", "summary"]),
        st.sampled_from(WORDS),
    ),
)
# Memories first, so that archive, forget and recall have something to act on; then anything.
scripts = st.tuples(st.lists(remember, min_size=3, max_size=8), st.lists(operation, max_size=10)).map(
    lambda parts: parts[0] + parts[1]
)


async def _live_ids(store: Store) -> list[str]:
    with contextlib.closing(sqlite3.connect(store.config.db_path)) as connection:  # what the store committed
        return [f"mem_{seq}" for (seq,) in connection.execute("SELECT seq FROM memories ORDER BY seq")]


async def _apply(service: MemoryService, op: tuple[Any, ...]) -> None:
    store = service.store
    try:
        if op[0] == "remember":
            _, content, category, key, tags, importance, (tier, session) = op
            await service.remember(
                content=content,
                category=category,
                key=key,
                tags=tags,
                importance=importance,
                tier=tier,
                session_id=session,
                client="hypothesis",
            )
        elif op[0] in ("archive", "forget"):
            ids = await _live_ids(store)
            if not ids:
                return
            chosen = ids[op[1] % len(ids)]
            if op[0] == "forget":
                await service.forget([chosen])
            else:
                seq = parse_id(chosen)
                assert seq is not None
                async with store.transaction() as tx:
                    await archive.archive(tx, {seq: "cleanup: unused"}, iso(utcnow()))
        elif op[0] == "recall":
            await service.recall(query=op[1], session_id="会话-1")
        else:
            _, field, text = op
            await edit_profile(store, field, "set" if field == "summary" else "add", text)
    except InvalidInput:  # an empty text, a secret: remember refuses it, and so does the property
        pass


def _dump(path: Path) -> dict[str, Any]:
    connection = sqlite3.connect(path)
    try:
        tables = {t: connection.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
        tables["sqlite_sequence"] = connection.execute("SELECT * FROM sqlite_sequence ORDER BY name").fetchall()
        tables["changes"] = connection.execute("SELECT count(*), max(change) FROM memory_changes").fetchall()
        tables["fts"] = connection.execute("SELECT rowid, * FROM memory_fts ORDER BY rowid").fetchall()
        return tables
    finally:
        connection.close()


def _without_time(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "exported_at"}


async def _scenario(root: Path, cache_dir: Path, segmenter: Segmenter, ops: list[tuple[Any, ...]]) -> None:
    source = Config.from_env({}, db_path=root / "a.db", cache_dir=cache_dir)
    target = source.with_changes(db_path=root / "b.db")
    async with Store(source, segmenter) as a:
        service = MemoryService(a)
        for op in ops:
            await _apply(service, op)
        async with a.reading() as tx:
            mirror = await tx.by_key(PROFILE_KEY)
        if mirror is not None:  # the profile's own memory is not exported (it is made again): not compared
            await service.forget([mirror.id])
        await a.flush()  # recall's access counts are written in the background: in the file first
        text = await export_json(a)
    first = json.loads(text)

    # Both opened afresh, as two new server processes would see them: a process that has archived
    # or forgotten memories itself keeps them in its in-memory index's statistics until it
    # compacts it, and may rank some candidates differently from a fresh one.
    async with Store(source, segmenter) as a, Store(target, segmenter) as b:
        report = await import_file(b, text)
        assert report.present == 0 and report.renamed == {} and report.refused == []
        assert report.memories == len(first["memories"]) and report.archived == len(first["archived"])
        second = await export_data(b)
        assert _without_time(second) == _without_time(first)

        original, imported = MemoryService(a), MemoryService(b)
        for memory in first["memories"]:
            query = memory["content"][:200]
            here = await original.recall(query=query, limit=50, track_access=False)
            there = await imported.recall(query=query, limit=50, track_access=False)
            assert {h.id for h in here.hits} == {h.id for h in there.hits}, query

        before = _dump(target.db_path)
        again = await import_file(b, text)
        assert again.created == [] and again.present == report.memories + report.archived
        assert again.sessions_added == 0 and not again.profile_edits
        assert _dump(target.db_path) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=scripts)
def test_export_import_export_is_lossless_and_import_is_idempotent(
    cache_dir: Path, segmenter: Segmenter, ops: list[tuple[Any, ...]]
) -> None:
    with tempfile.TemporaryDirectory() as root:  # a fresh pair of databases for every example
        anyio.run(_scenario, Path(root), cache_dir, segmenter, ops)
