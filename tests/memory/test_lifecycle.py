"""The memory lifecycle on real SQLite files: cleanup rules and keep rules, archive and restore,
forget of archived memories, and session expiry with promotion. Clocks are passed in (`now=`);
what the service cannot set (access counts, old access times) is set on the database file."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput, NotFound
from mcp_memory_server.memory import MemoryService, lifecycle
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import iso, parse_id, utcnow
from mcp_memory_server.text import Segmenter

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

NOW = utcnow()
DAY = timedelta(days=1)


def _sql(config: Config, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return rawdb.rows(config, sql, args)


def _set(config: Config, memory_id: str, **columns: Any) -> None:
    """Set columns of a memory the service manages itself (timestamps, access count)."""
    values = [iso(v) if isinstance(v, datetime) else v for v in columns.values()]
    assignments = ", ".join(f"{name} = ?" for name in columns)
    _sql(config, f"UPDATE memories SET {assignments} WHERE seq = ?", *values, parse_id(memory_id))


def _count(config: Config, table: str) -> int:
    return int(_sql(config, f"SELECT count(*) FROM {table}")[0][0])


async def _fill(service: MemoryService, count: int, start: int = 0) -> list[str]:
    """Fresh memories that no rule selects (created and accessed now), to pass the threshold."""
    return await service.import_memories(
        [
            {"content": f"填充记忆第{i}条: filler note number {i}", "category": "note"}
            for i in range(start, start + count)
        ]
    )


async def _old(service: MemoryService, content: str, days: float = 40, **kw: Any) -> str:
    """A memory created and last accessed `days` ago, never accessed since."""
    return (await service.remember(content=content, now=NOW - days * DAY, **kw)).id


async def _ids_seen(service: MemoryService, query: str) -> set[str]:
    return {h.id for h in (await service.recall(query=query, limit=50, track_access=False)).hits}


async def test_each_cleanup_rule_selects_and_reports_itself(service: MemoryService, config: Config) -> None:
    unused = await _old(service, "用户去年在杭州参加过一次马拉松", importance=0.5)
    low = await _old(service, "The user once asked about the weather in Oslo", days=100, importance=0.3)
    _set(config, low, access_count=5)  # accessed often, but long ago and unimportant
    not_yet = await _old(service, "用户问过一次东京的天气", days=60, importance=0.3)
    _set(config, not_yet, access_count=5)  # unimportant, but not unused for 90 days yet
    keeper, copy, keyed = await service.import_memories(
        [
            {"content": "用户用 Vim 写代码", "importance": 0.6},
            {"content": "用户用 Vim 写代码", "importance": 0.4},
            {"content": "用户用 Vim 写代码", "importance": 0.2, "key": "user.editor"},
        ]
    )
    for memory_id in (keeper, copy, keyed):  # old enough for no keep rule, accessed recently enough
        _set(config, memory_id, created_at=NOW - 20 * DAY, last_accessed=NOW - 20 * DAY)
    await _fill(service, 50)

    result = await lifecycle.cleanup(service.store, now=NOW)
    assert result.applied and result.dry_run and result.archived == 0
    by_id = {c.id: c for c in result.candidates}
    assert set(by_id) == {unused, low, copy} and result.candidate_count == 3
    assert by_id[unused].rules == ["unused"]
    assert by_id[low].rules == ["low_importance"]
    assert (by_id[copy].rules, by_id[copy].duplicate_of) == (["duplicate"], keeper)
    assert by_id[unused].preview == "用户去年在杭州参加过一次马拉松"
    assert [c.id for c in result.candidates] == [low, unused, copy]  # oldest access first
    assert sum(result.kept.values()) == 0


async def test_low_confidence_rule_at_its_boundaries(service: MemoryService, config: Config) -> None:
    """Seed 003: memories of too low confidence are cleared. Below 0.3, not accessed for 30 days;
    a keep rule still wins."""
    cases = {
        "below, long unused": (0.05, 40 * DAY, True),
        "just below, just past 30 days": (0.29, 30 * DAY + timedelta(seconds=1), True),
        "at the threshold": (0.3, 40 * DAY, False),
        "accessed exactly 30 days ago": (0.05, 30 * DAY, False),
        "accessed 29 days ago": (0.05, 29 * DAY, False),
    }
    ids: dict[str, str] = {}
    for n, (name, (confidence, idle, _)) in enumerate(cases.items()):
        text = f"用户可能喜欢第{n}种音乐 the user may like genre {n}"
        ids[name] = await _old(service, text, confidence=confidence, importance=0.6)
        # Used often enough that the rule "unused" never applies: only confidence decides.
        _set(config, ids[name], access_count=5, last_accessed=NOW - idle)
    protected = await _old(service, "用户也许对花生过敏", confidence=0.05, importance=0.8)
    _set(config, protected, access_count=5)
    await _fill(service, 50)

    result = await lifecycle.cleanup(service.store, now=NOW)
    selected = {c.id: c.rules for c in result.candidates}
    assert selected == {ids[name]: ["low_confidence"] for name, (*_, chosen) in cases.items() if chosen}
    assert result.kept["important"] == 1 and protected not in selected


async def test_cleanup_counts_accesses_not_yet_written(service: MemoryService) -> None:
    recalled = await _old(service, "用户常去的那家拉面馆在五道口")
    await _fill(service, 50)
    assert (await service.recall(query="拉面馆")).hits[0].id == recalled  # its access is written later
    assert (await lifecycle.cleanup(service.store, now=NOW)).candidate_count == 0


async def test_each_keep_rule_saves_a_candidate(service: MemoryService, config: Config) -> None:
    important = await _old(service, "用户对青霉素过敏", importance=0.8)
    frequent = await _old(service, "The user's old phone number ended in 42", days=100, importance=0.3)
    _set(config, frequent, access_count=10)
    core = await _old(service, "用户喜欢安静的咖啡馆", category="preference")
    seed_core = await _old(service, "Use four spaces, never tabs", category="coding_style")
    manual = await _old(service, "家里的 Wi-Fi 路由器在书房", source="manual")
    fresh, fresh_copy = await service.import_memories(
        [{"content": "The user reads the news on Hacker News", "importance": 0.6}] * 2
    )
    selected = await _old(service, "用户曾经提到过一家已经关门的书店")
    await _fill(service, 50)

    result = await lifecycle.cleanup(service.store, now=NOW)
    assert [c.id for c in result.candidates] == [selected]
    assert result.kept == {
        "important": 1,
        "frequently_used": 1,
        "recent": 1,
        "core_category": 2,
        "manual": 1,
        "critical": 0,
    }
    assert fresh not in {c.id for c in result.candidates} and fresh_copy not in {c.id for c in result.candidates}
    for memory_id in (important, frequent, core, seed_core, manual):
        assert memory_id not in {c.id for c in result.candidates}


async def test_keep_categories_are_configurable(config: Config, segmenter: Segmenter) -> None:
    custom = config.with_changes(keep_categories=("note",))
    async with Store(custom, segmenter) as store:
        service = MemoryService(store)
        pref = await _old(service, "用户喜欢靠窗的座位", category="preference")
        note = await _old(service, "用户记下了一个过期的会议链接", category="note")
        await _fill(service, 50)
        result = await lifecycle.cleanup(store, now=NOW)
    assert [c.id for c in result.candidates] == [pref]
    assert result.kept["core_category"] == 1 and note != pref


async def test_cleanup_applies_only_above_the_threshold(service: MemoryService) -> None:
    old = await _old(service, "The user once owned a red bicycle")
    await _fill(service, 49)
    below = await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    assert (below.applied, below.memories, below.min_memories) == (False, 50, 50)
    assert below.candidates == [] and below.archived == 0 and "only above 50" in below.detail
    await _fill(service, 1, start=49)
    above = await lifecycle.cleanup(service.store, now=NOW)
    assert above.applied and above.memories == 51 and [c.id for c in above.candidates] == [old]


async def test_dry_run_changes_nothing_and_a_real_run_archives(service: MemoryService, config: Config) -> None:
    gone = [await _old(service, text) for text in ("用户以前住在成都", "The user used to drive a Volvo")]
    await _fill(service, 50)
    tables = ("memories", "memory_fts", "memory_history", "memory_archive", "memory_changes", "sessions")
    before = {t: _sql(config, f"SELECT * FROM {t}") for t in tables}

    dry = await lifecycle.cleanup(service.store, now=NOW)
    assert [c.id for c in dry.candidates] == gone and dry.archived == 0 and "Dry run" in dry.detail
    assert {t: _sql(config, f"SELECT * FROM {t}") for t in tables} == before

    listed = await lifecycle.cleanup(service.store, now=NOW, limit=1)
    assert (listed.candidate_count, len(listed.candidates)) == (2, 1)

    real = await lifecycle.cleanup(service.store, now=NOW, dry_run=False, limit=1)
    assert (real.dry_run, real.archived, real.candidate_count) == (False, 2, 2)
    assert _count(config, "memories") == 50 and _count(config, "memory_fts") == 50
    reasons = _sql(config, "SELECT seq, archive_reason, archived_at FROM memory_archive ORDER BY seq")
    assert reasons == [(parse_id(i), "cleanup: unused", iso(NOW)) for i in gone]
    assert (await service.stats()).archived == 2 and (await service.stats()).total == 50
    again = await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    assert again.candidate_count == 0 and again.archived == 0


async def test_archive_hides_a_memory_and_restore_brings_it_back_whole(service: MemoryService, config: Config) -> None:
    first = await service.remember(content="用户的健身房在西湖区", key="user.gym", now=NOW - 50 * DAY)
    moved = await service.remember(content="用户的健身房搬到了滨江区", key="user.gym", now=NOW - 45 * DAY)
    assert moved.id == first.id and moved.action == "updated"
    memory_id = first.id
    _set(config, memory_id, access_count=0)  # the update was a use: never used, for the unused rule
    await _fill(service, 50)
    assert memory_id in await _ids_seen(service, "健身房")

    result = await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    assert result.archived == 1 and result.candidates[0].id == memory_id
    assert memory_id not in await _ids_seen(service, "健身房")
    assert memory_id not in {m.id for m in (await service.list_memories(limit=200)).items}
    with pytest.raises(NotFound):
        await service.get(memory_id)
    assert _count(config, "memory_history") == 0 and _count(config, "memory_history_archive") == 1

    assert (await service.stats()).archived == 1

    restored = await lifecycle.restore(service.store, [memory_id], now=NOW)
    assert (restored.restored, restored.not_found, restored.conflicts) == ([memory_id], [], [])
    assert memory_id in await _ids_seen(service, "健身房")
    back = await service.get(memory_id)
    assert (back.content, back.key, back.created_at) == ("用户的健身房搬到了滨江区", "user.gym", NOW - 50 * DAY)
    assert back.last_accessed == NOW  # restoring counts as an access: the next cleanup leaves it
    assert [h["content"] for h in await service.history(memory_id)] == ["用户的健身房在西湖区"]
    assert _count(config, "memory_archive") == 0 and _count(config, "memory_history_archive") == 0
    assert (await service.remember(content="用户的健身房搬到了滨江区", key="user.gym")).id == memory_id
    assert (await lifecycle.cleanup(service.store, now=NOW)).candidate_count == 0


async def test_restore_reports_key_conflicts_live_and_unknown_ids(service: MemoryService) -> None:
    old = await _old(service, "The user's locker code is kept in the office", key="user.locker")
    await _fill(service, 50)
    await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    newer = await service.remember(content="The user's locker moved to the gym", key="user.locker")
    assert newer.action == "created" and newer.id != old

    padded = old.replace("_", "_0")  # another spelling of the number names no memory
    result = await lifecycle.restore(service.store, [old, newer.id, "mem_999", "nonsense", old, padded])
    assert result.restored == [] and result.not_found == ["mem_999", "nonsense", padded]
    assert [c.id for c in result.conflicts] == [old, newer.id]
    assert "user.locker" in result.conflicts[0].reason and newer.id in result.conflicts[0].reason
    assert "live" in result.conflicts[1].reason
    assert (await service.get(newer.id)).content == "The user's locker moved to the gym"

    await service.forget([newer.id])
    assert (await lifecycle.restore(service.store, [old])).restored == [old]
    assert (await service.get(old)).key == "user.locker"
    with pytest.raises(InvalidInput):
        await lifecycle.restore(service.store, [])


async def test_two_archived_memories_with_one_key_restore_one(service: MemoryService, config: Config) -> None:
    (a,) = await service.import_memories([{"content": "用户的车位在 B2", "key": "user.parking"}])
    await _fill(service, 50)
    _set(config, a, created_at=NOW - 40 * DAY, last_accessed=NOW - 40 * DAY)
    await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    c = (await service.remember(content="用户的车位换到了 B3", key="user.parking", now=NOW - 40 * DAY)).id
    await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    result = await lifecycle.restore(service.store, [c, a])
    assert result.restored == [c] and [x.id for x in result.conflicts] == [a] and c in result.conflicts[0].reason
    assert (await service.get(c)).key == "user.parking"


async def test_forget_purges_an_archived_memory(service: MemoryService, config: Config) -> None:
    gone = await _old(service, "用户的旧密码提示问题是小学名字", key="user.hint")
    await service.remember(content="用户的旧密码提示问题是宠物名字", key="user.hint", now=NOW - 40 * DAY)
    _set(config, gone, access_count=0)  # the update was a use: never used, for the unused rule
    await _fill(service, 50)
    await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    assert _count(config, "memory_archive") == 1 and _count(config, "memory_history_archive") == 1

    result = await service.forget([gone])
    assert result.deleted == [gone] and result.not_found == []
    assert _count(config, "memory_archive") == 0 and _count(config, "memory_history_archive") == 0
    assert (await lifecycle.restore(service.store, [gone])).not_found == [gone]
    assert (await service.stats()).archived == 0


async def test_a_copy_stays_while_the_copy_it_duplicates_is_archived(service: MemoryService, config: Config) -> None:
    keeper, copy = await service.import_memories(
        [
            {"content": "用户收藏了一篇关于 Rust 的文章", "importance": 0.4},
            {"content": "用户收藏了一篇关于 Rust 的文章"},
        ]
    )
    _set(config, keeper, created_at=NOW - 40 * DAY, last_accessed=NOW - 40 * DAY)  # unused
    _set(config, copy, created_at=NOW - 40 * DAY, last_accessed=NOW - 3 * DAY, importance=0.3, access_count=4)
    await _fill(service, 50)
    result = await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
    assert [c.id for c in result.candidates] == [keeper]
    assert (await service.get(copy)).content == "用户收藏了一篇关于 Rust 的文章"
    # Next time the remaining copy is the only one: nothing is a duplicate any more.
    assert (await lifecycle.cleanup(service.store, now=NOW)).candidate_count == 0


async def test_another_process_sees_archive_and_restore(
    service: MemoryService, config: Config, segmenter: Segmenter
) -> None:
    memory_id = await _old(service, "The user collected cardamom recipes from Linnégatan")
    await _fill(service, 50)
    async with Store(config, segmenter) as other:
        other_service = MemoryService(other)
        assert await _ids_seen(other_service, "cardamom") == {memory_id}  # builds its index now
        await lifecycle.cleanup(service.store, now=NOW, dry_run=False)
        assert await _ids_seen(other_service, "cardamom") == set()
        assert (await other_service.stats()).archived == 1
        await lifecycle.restore(service.store, [memory_id])
        assert await _ids_seen(other_service, "cardamom") == {memory_id}
        # And the other way round: the second store archives, the first one follows.
        _set(config, memory_id, last_accessed=NOW - 40 * DAY)
        await lifecycle.cleanup(other, now=NOW, dry_run=False)
        assert await _ids_seen(service, "cardamom") == set()


async def test_namespaces_do_not_share_the_archive(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter, namespace="alice") as alice, Store(config, segmenter, namespace="bob") as bob:
        secret = await _old(MemoryService(alice), "Alice 的备用钥匙藏在花盆下面")
        await _fill(MemoryService(alice), 50)
        assert (await lifecycle.cleanup(alice, now=NOW, dry_run=False)).archived == 1
        assert (await lifecycle.cleanup(bob, now=NOW)).applied is False
        assert (await lifecycle.restore(bob, [secret])).not_found == [secret]
        assert (await MemoryService(bob).forget([secret])).not_found == [secret]
        assert (await MemoryService(bob).stats()).archived == 0
        assert (await lifecycle.restore(alice, [secret])).restored == [secret]


async def test_idle_sessions_promote_useful_working_memories_and_archive_the_rest(
    service: MemoryService, store: Store, config: Config
) -> None:
    then = NOW - timedelta(hours=2)

    async def working(content: str, importance: float, session: str = "s1", at: datetime = then) -> str:
        result = await service.remember(
            content=content, tier="working", importance=importance, session_id=session, now=at
        )
        return result.id

    important = await working("用户正在排查 Kubernetes Ingress 的 502 错误", 0.7)
    used = await working("The user deploys to staging on Fridays", 0.3)
    idle = await working("用户随口说今天下雨了", 0.3)
    core = (await service.remember(content="The team runs Argo CD", session_id="s1", now=then)).id
    other = await working("另一个会话的临时笔记：午饭吃面", 0.3, session="s2", at=NOW - timedelta(minutes=5))
    for _ in range(2):  # two accesses, still pending in this process: expiry must flush them first
        assert (await service.recall(query="staging Fridays")).hits[0].id == used

    result = await lifecycle.expire_sessions(store, now=NOW)
    (ended,) = result.sessions
    assert (ended.session_id, ended.last_active) == ("s1", then)
    assert (ended.promoted, ended.archived) == ([important, used], [idle])
    assert (await service.get(important)).tier == "core" and (await service.get(used)).tier == "core"
    assert (await service.get(core)).tier == "core" and (await service.get(other)).tier == "working"
    with pytest.raises(NotFound):
        await service.get(idle)
    assert _sql(config, "SELECT archive_reason FROM memory_archive") == [("session expired: s1",)]
    assert await store.session("s1") is None and await store.session("s2") is not None
    assert idle not in await _ids_seen(service, "下雨")
    assert (await lifecycle.expire_sessions(store, now=NOW)).sessions == []

    later = await lifecycle.expire_sessions(store, now=NOW + timedelta(minutes=30))
    assert [(s.session_id, s.archived) for s in later.sessions] == [("s2", [other])]
    assert (await lifecycle.restore(store, [idle])).restored == [idle]
    assert (await service.get(idle)).tier == "working"


async def test_session_idle_time_is_configurable(config: Config, segmenter: Segmenter) -> None:
    async with Store(config.with_changes(session_idle_minutes=120), segmenter) as store:
        service = MemoryService(store)
        await service.remember(content="短期笔记", tier="working", session_id="s", now=NOW - timedelta(minutes=90))
        assert (await lifecycle.expire_sessions(store, now=NOW)).sessions == []
        assert len((await lifecycle.expire_sessions(store, now=NOW + timedelta(minutes=31))).sessions) == 1


async def test_maintain_expires_sessions_then_cleans_up(service: MemoryService, store: Store) -> None:
    note = (await service.remember(content="会话里的临时想法", tier="working", session_id="s1", now=NOW - 40 * DAY)).id
    old = await _old(service, "The user once tried a standing desk")
    await _fill(service, 50)
    result = await lifecycle.maintain(store, now=NOW)
    assert [s.archived for s in result.expiry.sessions] == [[note]]
    assert [c.id for c in result.cleanup.candidates] == [old] and result.cleanup.archived == 1
    assert (await service.stats()).archived == 2 and (await service.stats()).sessions == 0


def test_lifecycle_settings_are_checked(tmp_path: Path) -> None:
    base: dict[str, Any] = {"db_path": tmp_path / "x.db", "cache_dir": tmp_path}
    config = Config.from_env({"MCP_MEMORY_KEEP_CATEGORIES": "identity, note,note"}, **base)
    assert config.lifecycle.keep_categories == ("identity", "note")
    assert Config.from_env({"MCP_MEMORY_SESSION_IDLE_MINUTES": "5"}, **base).lifecycle.session_idle_minutes == 5
    with pytest.raises(InvalidInput, match="MCP_MEMORY_KEEP_CATEGORIES"):
        Config.from_env({"MCP_MEMORY_KEEP_CATEGORIES": "Not A Category"}, **base)
    with pytest.raises(InvalidInput, match="MCP_MEMORY_CLEANUP_MIN_MEMORIES"):
        Config.from_env({"MCP_MEMORY_CLEANUP_MIN_MEMORIES": "-1"}, **base)
    with pytest.raises(InvalidInput, match="promote_importance"):
        config.with_changes(promote_importance=1.5)
    with pytest.raises(InvalidInput, match="cleanup_stale_days"):
        config.with_changes(cleanup_stale_days=0)
