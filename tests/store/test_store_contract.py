"""The store's contract, the same on both backends: one script of every store operation (Store's
and Tx's public methods, store/archive.py, export_import.py, profile_data.py, extraction_log.py)
runs against a real SQLite file and a real PostgreSQL database, each answer is checked, and the
two backends' answers must be the same, row for row (times as the same ISO 8601 text, JSON as
the same values). Also: a PostgreSQL database written by the release before the native schema
upgrades in place and reads back the same."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from mcp_memory_server.config.config import Config
from mcp_memory_server.models import Draft
from mcp_memory_server.store import archive, export_import, extraction_log, profile_data
from mcp_memory_server.store.export_import import Earlier
from mcp_memory_server.store.postgres.schema import MIGRATIONS as PG_MIGRATIONS
from mcp_memory_server.store.rows import SessionRow, iso, parse_id
from mcp_memory_server.store.store import Store
from mcp_memory_server.text.segmenter import Segmenter
from mcp_memory_server.text.tokens import fingerprint, fts_query, keyword_query
from mcp_memory_server.transfer.json_format import EarlierValue

from .. import rawdb

pytestmark = pytest.mark.anyio
T0 = datetime(2026, 3, 1, 8, 30, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


_MODEL, _DIM = "test-model@1", 8


def _unit_vectors(n: int) -> Any:
    """n fixed, different, L2-normalised vectors of _DIM dimensions."""
    rows = np.array([[math.sin(i * 1.7 + j) for j in range(_DIM)] for i in range(1, n + 1)], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _draft(content: str, **kw: Any) -> Draft:
    return Draft(content=content, **kw)


@dataclass
class _Imported:
    number: int
    draft: Draft
    content_hash: str
    created_at: str
    updated_at: str
    last_accessed: str
    access_count: int
    history: list[Earlier] = field(default_factory=list)
    archived: tuple[str, str] | None = None


def _report(outcome: str) -> extraction_log.ChannelReport:
    return extraction_log.ChannelReport(outcome=outcome, detail="细节 detail", items=[])  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    """A result as comparable data: models dumped, tuples as lists, JSON text parsed (objects'
    keys have no order in jsonb)."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return {"json": json.loads(value)}
        except ValueError:
            return value
    return value


async def _script(store: Store) -> dict[str, Any]:
    """Every store operation once or more, in a fixed order with fixed times; what each answered."""
    out: dict[str, Any] = {}
    segs: dict[str, int] = {}

    async def seq_of(content: str, **kw: Any) -> int:
        async with store.transaction() as tx:
            memory = await tx.insert(_draft(content, **kw), fingerprint(content), _at(len(segs)))
        seq = parse_id(memory.id)
        assert seq is not None
        segs[content] = seq
        return seq

    tea = await seq_of("我最喜欢的茶是冻顶乌龙", key="drink.tea", category="preference", tags=("饮品", "tea"))
    run = await seq_of("I run along the West Lake every weekend", category="habit", tags=("sport",))
    mix = await seq_of("周末用Python写代码 on weekends", category="fact", session_id="s1", tier="working")
    await seq_of("临时笔记 scratch note", category="context", session_id="s1", tier="working", importance=0.2)
    async with store.transaction() as tx:
        out["get"] = await tx.get(tea)
        out["by_key"] = await tx.by_key("drink.tea")
        out["taken_keys"] = await tx.taken_keys(["drink.tea", "nope", "键"])
        out["hashes"] = await tx.hashes([fingerprint("我最喜欢的茶是冻顶乌龙"), "x"])
        out["by_hash"] = await tx.by_hash("preference", fingerprint("我最喜欢的茶是冻顶乌龙"))
        out["similar"] = await tx.similar_in_category(fts_query(["乌龙", "冻顶"]), "preference", 5)
        out["similar_none"] = await tx.similar_in_category("", "preference", 5)
        out["replace"] = await tx.replace(
            tea,
            _draft("我最喜欢的茶是正山小种", key="drink.tea", category="preference"),
            fingerprint("正山小种"),
            _at(10),
            "updated",
        )
        out["tx_history"] = await tx.history(tea)
        out["core_lines"] = await tx.core_lines()
        await tx.touch_session("s1", _at(11))
        await tx.set_topic("s1", "编程 coding", _at(12))
        await tx.update_session("s1", _at(13), topic=None, emotion="开心", variables='{"语言": "Python", "a": 1}')
        out["session_variables"] = await tx.session_variables("s1")
        out["insert_many"] = await tx.insert_many(
            [_draft(f"批量笔记 {n} bulk note", category="fact", tags=("批量",)) for n in range(5)], _at(14)
        )
        await tx.touch({run: 3, mix: 1}, iso(_at(15)), ["s1"])
    out["change"] = tx.change
    out["store_get"] = await store.get(run)
    out["store_history"] = await store.history(tea)
    query = keyword_query("乌龙")
    assert query is not None
    out["search_index"] = [(c.id, c.row) for c in await store.search_index([query], 5)]
    west = keyword_query("West Lake")
    assert west is not None
    out["search_index_filtered"] = [c.id for c in await store.search_index([west], 5, category="habit", tags=["sport"])]
    out["search_like"] = [(c.id, c.raw) for c in await store.search_like(["正山", "west lake"], 5)]
    out["search_like_tags"] = [c.id for c in await store.search_like(["笔记"], 10, tags=["批量"])]
    first = await store.list_page(category=None, tier=None, tags=None, order_by="updated", limit=3, after=None)
    second = await store.list_page(category=None, tier=None, tags=None, order_by="updated", limit=3, after=first.last)
    out["pages"] = (first, second)
    out["page_filtered"] = await store.list_page(
        category="fact", tier="working", tags=None, order_by="created", limit=5, after=None, session_id="s1"
    )
    out["session"] = await store.session("s1")
    stats = await store.stats()
    out["stats"] = stats.model_dump(mode="json", exclude={"db_path", "db_bytes"})
    out["schema_version"] = await store.schema_version()

    async with store.transaction() as tx:
        await profile_data.save(tx, '{"summary": {"text": "喜欢茶", "sources": ["mem_1"]}}', "{}", iso(_at(20)))
        out["profile"] = await profile_data.profile(tx)
        out["core_memories"] = await profile_data.core_memories(tx, 10)
        out["live_ids"] = await profile_data.live_ids(tx, [f"mem_{tea}", "mem_99999"])
        out["changed_since"] = [await profile_data.changed_since(tx, iso(_at(m))) for m in (-100_000, 100_000)]
        await tx.profile_stale()
        out["profile_stale"] = await profile_data.profile(tx)
        await profile_data.save_manual_edits(tx, '{"notes": ["手动"]}', iso(_at(21)), empty="{}")
        out["manual_edits"] = await profile_data.manual_edits(tx)

    async with store.transaction() as tx:
        out["cleanup_rows"] = await archive.cleanup_rows(
            tx,
            unused_before=iso(_at(100)),
            unused_accesses=2,
            stale_before=iso(_at(100)),
            low_importance=0.3,
            unsure_before=iso(_at(100)),
            low_confidence=0.9,
        )
        out["idle_sessions"] = await archive.idle_sessions(tx, iso(_at(100)))
        out["working"] = await archive.working_memories(tx, "s1")
        out["archive"] = await archive.archive(tx, {run: "cleanup: 未使用 unused"}, iso(_at(30)))
        out["archived"] = await archive.archived(tx, [run, tea])
        out["live_numbers"] = await archive.live_numbers(tx, [run, tea, mix])
        out["key_holders"] = await archive.key_holders(tx, ["drink.tea", "无"])
        out["live_count"] = await archive.live_count(tx)
        await archive.promote(tx, [mix])
        await archive.end_session(tx, "s1")
        await archive.restore(tx, [run], iso(_at(31)))
        out["restored"] = await tx.get(run)
        await archive.archive(tx, {mix: "session ended"}, iso(_at(32)))

    async with store.snapshot() as tx:
        out["exported"] = await export_import.exported(tx)
    async with store.transaction() as tx:
        digests = [fingerprint("我最喜欢的茶是正山小种"), fingerprint("周末用Python写代码 on weekends")]
        out["present"] = await export_import.present_memories(tx, digests)
        out["held"] = await export_import.held_hashes(tx, digests)
        out["holders_in_full"] = await export_import.key_holders_in_full(tx, ["drink.tea"])
        # Taken here: tea (live) and mix (archived) get new numbers; 90000 is kept.
        out["numbers_for"] = await export_import.numbers_for(tx, [tea, mix, 90000])
        top = max(out["numbers_for"].values())
        out["top_number"] = top
        row = SessionRow("s2", "旅行", '{"城市": "杭州"}', 2, None, iso(_at(40)), iso(_at(41)))
        out["add_session"] = (await export_import.add_session(tx, row), await export_import.add_session(tx, row))
        earlier = EarlierValue("旧的值 old", None, "fact", 0.4, 0.7, '["旧"]', "user", "updated", iso(_at(1)))
        records = [
            _Imported(
                1,
                _draft("导入的记忆 imported", tags=("导入",)),
                fingerprint("导入的记忆 imported"),
                iso(_at(2)),
                iso(_at(3)),
                iso(_at(4)),
                2,
                [earlier],
            ),
            _Imported(
                2,
                _draft("归档的导入 archived import"),
                fingerprint("归档的导入 archived import"),
                iso(_at(2)),
                iso(_at(3)),
                iso(_at(4)),
                0,
                [earlier],
                (iso(_at(5)), "imported archived"),
            ),
        ]
        await export_import.insert_imported(tx, records, {1: top + 10, 2: top + 11}, arrived=iso(_at(6)))
        out["imported"] = (await tx.get(top + 10), await tx.history(top + 10), await archive.archived(tx, [top + 11]))
        await tx._conn.execute(tx._sql.numbers_after, (tx.namespace, top + 11))  # as numbers_for does
    async with store.transaction() as tx:
        out["new_numbers"] = await export_import.new_numbers(tx, 2)
        fresh = await tx.insert(_draft("导入之后 after import"), fingerprint("导入之后 after import"), _at(50))
        out["seq_after_import"] = fresh.id
        out["deleted"] = await tx.delete([top + 10, top + 11, 424242])
        await tx.drop_history(tea)
        out["history_dropped"] = await tx.history(tea)

    # The semantic stage's vectors: what has none, written back, searched, made stale by an edit.
    pending = await store.pending_vectors(_MODEL, 0, 100)
    out["vectors_pending"] = pending
    vectors = _unit_vectors(len(pending))
    out["vectors_written"] = await store.write_vectors(_MODEL, pending, vectors)
    out["vectors_pending_after"] = await store.pending_vectors(_MODEL, 0, 100)
    out["vectors_other_model"] = len(await store.pending_vectors("another-model", 0, 100))
    store.use_vectors(_MODEL, _DIM)
    out["vector_search"] = await store.vector_search(vectors[0], 3)
    out["vector_scores"] = await store.vector_scores(vectors[1], [p.seq for p in pending] + [424242])
    # Across scripts: the Latin memories' cosines offset for a CJK query, the same on both backends.
    out["vector_search_across"] = await store.vector_search(vectors[0], 5, 1, 0.05)
    out["vector_scores_across"] = await store.vector_scores(vectors[1], [p.seq for p in pending], 0, 0.05)
    async with store.transaction() as tx:
        edited = pending[0]
        await tx.replace(
            edited.seq, _draft("换了内容 changed content"), fingerprint("换了内容 changed content"), _at(55), "updated"
        )
    out["vector_search_after_edit"] = await store.vector_search(vectors[0], 3)
    out["vectors_pending_of"] = await store.pending_vectors_of(_MODEL, [p.seq for p in pending])
    out["vectors_stale_write"] = await store.write_vectors(_MODEL, [edited], vectors[:1])
    out["vector_progress"] = await store.vector_progress(_MODEL)

    async with store.transaction() as tx:
        run_id = await extraction_log.insert(
            tx,
            digest="d1",
            session_id="s1",
            client="客户端",
            previews=("用户说 hi", "助手答"),
            fast=_report("stored"),
            deep=_report("pending"),
            note_seq=tea,
            moment=_at(60),
        )
        out["log_pending"] = await extraction_log.pending(tx, "d1")
        await extraction_log.settle(tx, f"run_{run_id}", _report("extracted"), _at(61))
        await extraction_log.insert(
            tx,
            digest="d2",
            session_id=None,
            client=None,
            previews=("x", "y"),
            fast=_report("nothing"),
            deep=_report("pending"),
            note_seq=None,
            moment=_at(62),
        )
        out["log_abandoned"] = await extraction_log.settle_abandoned(tx, _at(70), _at(71))
        out["log_recent"] = await extraction_log.recent(tx, 10)
        out["before_use"] = await tx.get(tea)
        await archive.count_use(tx, tea, iso(_at(63)))
        out["used"] = await tx.get(tea)
        words = "忘掉的文字 forgotten words"
        quoted = await tx.insert(_draft(words), fingerprint(words), _at(64))
        item = extraction_log.ExtractedItem(
            content=words,
            category="fact",
            importance=0.5,
            source="user",
            pattern=None,
            value=None,
            decision="store",
            id=quoted.id,
            action="created",
            reason="写下 written",
        )
        await extraction_log.insert(
            tx,
            digest="d3",
            session_id=None,
            client=None,
            previews=(f"我说：{words}", "好的 fine"),
            fast=extraction_log.ChannelReport(outcome="stored", detail="细节 detail", items=[item]),
            deep=_report("skipped"),
            note_seq=None,
            moment=_at(65),
        )
        out["deleted_quoted"] = await tx.delete([int(quoted.id.removeprefix("mem_"))])
        out["log_forgotten"] = await extraction_log.recent(tx, 2)
    out["final_stats"] = (await store.stats()).model_dump(mode="json", exclude={"db_path", "db_bytes"})
    return out


def _checks(out: dict[str, Any]) -> None:
    """What each backend must answer, whatever the other does."""
    assert out["used"].access_count == out["before_use"].access_count + 1 and out["used"].last_accessed == _at(63)
    forgotten, earlier = out["log_forgotten"]
    assert forgotten.user_preview == forgotten.assistant_preview == extraction_log.FORGOTTEN
    assert forgotten.fast.items[0].content == extraction_log.FORGOTTEN
    assert earlier.user_preview == "x", "a run that never held the text keeps its previews"
    assert out["get"].key == "drink.tea" and out["get"].tags == ["饮品", "tea"]
    assert out["by_key"] == out["get"] and out["taken_keys"] == {"drink.tea"}
    assert len(out["hashes"]) == 1 and [m.id for m in out["by_hash"]] == [out["get"].id]
    assert [m.id for m in out["similar"]] == [out["get"].id] and out["similar_none"] == []
    assert out["replace"].content == "我最喜欢的茶是正山小种"
    assert (
        [h["content"] for h in out["tx_history"]]
        == ["我最喜欢的茶是冻顶乌龙"]
        == [h["content"] for h in out["store_history"]]
    )
    assert out["session_variables"] == {"语言": "Python", "a": 1}
    assert len(out["insert_many"]) == 5
    assert out["store_get"].access_count == 3 and out["store_get"].last_accessed == _at(15)
    assert out["search_index_filtered"] == [out["store_get"].id]
    assert out["search_like_tags"] and len(out["search_like_tags"]) == 5
    assert out["pages"][0].total == 9 and len(out["pages"][1].items) == 3
    assert out["session"].current_topic == "编程 coding" and out["session"].turn_count == 1
    assert out["session"].updated_at == _at(15)  # touched by the recall's access write
    assert out["profile"].stale is False and out["profile_stale"].stale is True
    assert out["live_ids"] == {out["get"].id}
    assert out["changed_since"] == [True, False]  # memories about the user written at T0 + minutes
    assert out["manual_edits"] == '{"notes": ["手动"]}'
    assert out["archive"] == [parse_id(out["store_get"].id)]
    assert out["restored"].last_accessed == _at(31)
    assert out["add_session"] == (True, False)
    assert out["numbers_for"] == {1: 90001, 3: 90002, 90000: 90000}  # tea and mix are taken, 90000 is kept
    assert out["new_numbers"] == [out["top_number"] + 12, out["top_number"] + 13]
    assert out["seq_after_import"] == f"mem_{out['top_number'] + 14}"  # imported numbers are never handed out again
    assert out["log_abandoned"] == 1 and [e.status for e in out["log_recent"]] == ["done", "done"]
    assert out["schema_version"] == PG_MIGRATIONS[-1][0]
    pending = out["vectors_pending"]
    assert len(pending) >= 8 and [p.seq for p in pending] == sorted(p.seq for p in pending)
    assert out["vectors_written"] == len(pending) and out["vectors_pending_after"] == []
    assert out["vectors_other_model"] == len(pending)  # another model's vectors are none of this one's
    best = out["vector_search"][0]
    assert best.seq == pending[0].seq and abs(best.cosine - 1.0) < 0.02 and len(out["vector_search"]) == 3
    assert set(out["vector_scores"]) == {p.seq for p in pending}  # the unknown seq has no score
    assert abs(out["vector_scores"][pending[1].seq] - 1.0) < 0.02
    assert pending[0].seq not in [n.seq for n in out["vector_search_after_edit"]]  # stale: never used
    assert [p.seq for p in out["vectors_pending_of"]] == [pending[0].seq]
    assert out["vectors_pending_of"][0].content == "换了内容 changed content"
    assert out["vectors_stale_write"] == 0  # computed from the old content: not stored
    assert out["vector_progress"] == (len(pending) - 1, len(pending))


async def test_every_operation_answers_the_same_on_both_backends(
    tmp_path: Path, cache_dir: Path, pg_db: str, segmenter: Segmenter
) -> None:
    answers = []
    for db in (tmp_path / "memory.db", pg_db):
        async with Store(Config.from_env({}, db_path=db, cache_dir=cache_dir), segmenter) as store:
            answers.append(await _script(store))
    sqlite, postgres = answers
    _checks(sqlite)
    _checks(postgres)
    assert sqlite.keys() == postgres.keys()
    for name in sqlite:
        assert _plain(sqlite[name]) == _plain(postgres[name]), name


async def test_string_literals_and_percent_signs_pass_through_untouched(
    tmp_path: Path, cache_dir: Path, pg_db: str, segmenter: Segmenter
) -> None:
    """Text holding what a dialect would read as SQL (`?`, `%s`, `:name`, quotes, LIKE's `%`
    and `_`) is stored and found as it was, on both backends: parameters are never spliced in."""
    tricky = "100% 确定? it's :name %s %(x)s 'quoted' _under_ \\back"
    for db in (tmp_path / "memory.db", pg_db):
        async with Store(Config.from_env({}, db_path=db, cache_dir=cache_dir), segmenter) as store:
            async with store.transaction() as tx:
                memory = await tx.insert(_draft(tricky, key="k?%:x"), fingerprint(tricky), T0)
            assert (await store.get(parse_id(memory.id) or 0)) == memory
            assert [c.row.content for c in await store.search_like(["100% 确定?", "'quoted'"], 5)] == [tricky]
            assert [c.row.content for c in await store.search_like(["0%_"], 5)] == []  # % and _ are literal


async def test_a_database_of_the_text_schema_upgrades_in_place(
    pg_db: str, cache_dir: Path, segmenter: Segmenter
) -> None:
    """A PostgreSQL database written by the release before migration 7 (times and JSON as text,
    the profile's flag 0 or 1) is converted in place when the new store opens it: every row reads
    back the same, and the columns have their native types."""
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for version, name, statements in PG_MIGRATIONS[:6]:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
            if version == 1:
                conn.execute("INSERT INTO meta VALUES ('index_version', '0')")  # rebuilt on open
            conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)", (version, name, iso(T0)))
        # Rows as the text-schema release wrote them.
        conn.execute(
            "INSERT INTO memories (namespace, content, key, category, tier, importance, confidence, source, tags,"
            " session_id, client, content_hash, created_at, updated_at, last_accessed, access_count) VALUES"
            " ('', '我喜欢冻顶乌龙', 'drink.tea', 'preference', 'core', 0.8, 0.9, 'user', '[\"饮品\", \"tea\"]',"
            " 's1', 'cli', %s, %s, %s, %s, 2)",
            (fingerprint("我喜欢冻顶乌龙"), iso(_at(1)), iso(_at(2)), iso(_at(3))),
        )
        conn.execute(
            "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
            " reason, changed_at) VALUES (1, '我喜欢绿茶', 'drink.tea', 'preference', 0.5, 0.8, '[]', 'user',"
            " 'updated', %s)",
            (iso(_at(2)),),
        )
        conn.execute(
            "INSERT INTO sessions VALUES ('', 's1', '茶', '{\"城市\": \"杭州\"}', 3, NULL, %s, %s)",
            (iso(_at(0)), iso(_at(3))),
        )
        conn.execute("INSERT INTO profile VALUES ('', '{\"summary\": {}}', '{}', 0, %s)", (iso(_at(4)),))
        conn.execute(
            "INSERT INTO extraction_log (namespace, digest, status, input, fast, deep, created_at, updated_at)"
            " VALUES ('', 'd', 'done', '{\"user\": \"你好\", \"assistant\": \"hi\"}', %s, %s, %s, %s)",
            (_report("stored").model_dump_json(), _report("empty").model_dump_json(), iso(_at(5)), iso(_at(6))),
        )
    config = Config.from_env({}, db_path=pg_db, cache_dir=cache_dir)
    async with Store(config, segmenter) as store:
        assert await store.schema_version() == PG_MIGRATIONS[-1][0]
        memory = await store.get(1)
        assert memory is not None
        assert (memory.content, memory.tags, memory.access_count) == ("我喜欢冻顶乌龙", ["饮品", "tea"], 2)
        assert (memory.created_at, memory.updated_at, memory.last_accessed) == (_at(1), _at(2), _at(3))
        assert [(h["content"], h["changed_at"]) for h in await store.history(1)] == [("我喜欢绿茶", iso(_at(2)))]
        session = await store.session("s1")
        assert session is not None and session.context_variables == {"城市": "杭州"}
        assert (session.created_at, session.updated_at) == (_at(0), _at(3))
        async with store.reading() as tx:
            profile = await profile_data.profile(tx)
            log = await extraction_log.recent(tx, 5)
        assert profile is not None and profile.stale is False and json.loads(profile.data) == {"summary": {}}
        assert [(e.user_preview, e.created_at, e.deep.outcome) for e in log] == [("你好", _at(5), "empty")]
        query = keyword_query("乌龙")
        assert query is not None
        assert [c.id for c in await store.search_index([query], 5)] == ["mem_1"]
    types = dict(
        rawdb.rows(
            config,
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public'",
        )
    )
    assert types["memories.created_at"] == "timestamp with time zone" == types["memory_archive.archived_at"]
    assert types["memories.tags"] == "jsonb" == types["sessions.context_variables"] == types["extraction_log.deep"]
    assert types["profile.stale"] == "boolean"
