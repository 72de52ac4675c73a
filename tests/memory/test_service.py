"""remember / recall / forget / list through the service layer, on a real SQLite file."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput, NotFound
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import utcnow
from mcp_memory_server.store.sqlite.schema import MIGRATIONS

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")


def _rows(config: Config) -> int:
    return int(rawdb.value(config, "SELECT count(*) FROM memories"))


async def test_remember_reports_created_updated_merged_unchanged(service: MemoryService) -> None:
    first = await service.remember(content="我每天早上喝一杯拿铁咖啡", category="preference")
    assert (first.action, first.id) == ("created", "mem_1")
    again = await service.remember(content="我每天早上喝一杯拿铁咖啡。", category="preference")
    assert (again.action, again.id) == ("unchanged", "mem_1")
    tagged = await service.remember(content="我每天早上喝一杯拿铁咖啡", category="preference", tags=["Coffee"])
    assert (tagged.action, tagged.memory.tags) == ("merged", ["coffee"])

    city = await service.remember(content="The user lives in Berlin", key="user.city", category="identity")
    moved = await service.remember(content="The user lives in Shanghai", key="user.city", category="identity")
    assert (moved.action, moved.id) == ("updated", city.id)
    assert moved.memory.content == "The user lives in Shanghai"
    history = await service.history(city.id)
    assert [h["content"] for h in history] == ["The user lives in Berlin"]
    same = await service.remember(content="The user lives in Shanghai", key="user.city", category="identity")
    assert same.action == "unchanged"


async def test_merge_never_demotes(service: MemoryService) -> None:
    core = await service.remember(content="用户对花生过敏", category="fact", importance=0.9, source="assistant")
    again = await service.remember(content="用户对花生过敏！", category="fact", importance=0.3, tier="working")
    assert (again.action, again.id) == ("merged", core.id)
    assert (again.memory.tier, again.memory.importance, again.memory.source) == ("core", 0.9, "both")


async def test_near_identical_content_merges_but_different_meaning_does_not(service: MemoryService) -> None:
    long_text = (
        "The user's home lab runs Proxmox on three Intel NUCs with 64 GB of RAM each, backs up "
        "nightly to a Synology NAS and exposes services through a Cloudflare tunnel."
    )
    first = await service.remember(content=long_text, category="fact")
    edited = await service.remember(content=long_text.replace("nightly", "every night"), category="fact")
    assert (edited.action, edited.id) == ("merged", first.id)
    assert "every night" in edited.memory.content

    like = await service.remember(content="我喜欢喝拿铁", category="preference")
    dislike = await service.remember(content="我不喜欢喝拿铁", category="preference")
    assert dislike.action == "created" and dislike.id != like.id
    other_category = await service.remember(content="我喜欢喝拿铁", category="fact")
    assert other_category.action == "created"


async def test_bad_input_is_refused_and_changes_nothing(service: MemoryService, config: Config) -> None:
    await service.remember(content="baseline")
    cases = [
        {"content": "x" * (config.limits.max_content_chars + 1)},
        {"content": "   "},
        {"content": "ok", "category": "Not A Category!"},
        {"content": "ok", "importance": 1.5},
        {"content": "ok", "confidence": float("nan")},
        {"content": "ok", "source": "somebody"},
        {"content": "ok", "tier": "forever"},
        {"content": "ok", "tags": [f"tag{i}" for i in range(config.limits.max_tags + 1)]},
        {"content": "ok", "tags": ["x" * (config.limits.max_tag_chars + 1)]},
        {"content": "ok", "key": "k" * 201},
    ]
    for case in cases:
        with pytest.raises(InvalidInput):
            await service.remember(**case)  # type: ignore[arg-type]
    assert _rows(config) == 1


async def test_limit_message_names_the_limit(service: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="limit is 2,000"):
        await service.remember(content="长" * 2001)


async def test_normalisation_of_category_source_and_tags(service: MemoryService) -> None:
    result = await service.remember(
        content="用户是前端工程师", category="Project-State", source="用户输入", tags=[" Work ", "work", "前端"]
    )
    assert result.memory.category == "project_state"
    assert result.memory.source == "user"
    assert result.memory.tags == ["work", "前端"]
    assert (await service.remember(content="AI 给出的结论", source="AI输出")).memory.source == "assistant"
    assert (await service.remember(content="stated", source="user_stated")).memory.source == "user"


async def test_recall_in_chinese_english_and_mixed(service: MemoryService) -> None:
    coffee = await service.remember(content="我每天早上喝一杯拿铁咖啡", category="preference")
    python = await service.remember(content="我喜欢用Python写代码", category="preference")
    rime = await service.remember(content="我在用雾凇拼音输入法", category="fact")
    editor = await service.remember(content="I write Python in Neovim with the LazyVim distribution", category="fact")
    await service.remember(content="周末常去西湖边跑步", category="preference")

    async def top(query: str) -> str:
        result = await service.recall(query=query)
        assert result.hits, f"nothing found for {query!r} (keywords {result.keywords})"
        return result.hits[0].id

    assert await top("咖啡") == coffee.id
    assert await top("我喝什么咖啡") == coffee.id
    assert await top("python") in (python.id, editor.id)
    assert await top("我喜欢用Python写代码") == python.id
    assert await top("雾凇") == rime.id
    assert await top("拼音") == rime.id
    assert await top("which editor, neovim?") == editor.id
    found = {h.id for h in (await service.recall(query="Python", limit=10)).hits}
    assert {python.id, editor.id} <= found


async def test_one_character_chinese_words_still_count(service: MemoryService) -> None:
    # 住 and 喝 are too short to be keywords (SPEC 3.1) but carry the question's meaning.
    home = await service.remember(content="用户住在杭州滨江区，租的是一室一厅", category="fact")
    drink = await service.remember(content="用户每天早上喝一杯燕麦拿铁，不加糖", category="preference")
    await service.remember(content="早上好！今天天气真好，早上去公园跑步了，早上的空气很好", category="context")
    lives = await service.recall(query="我现在住哪儿")
    assert lives.keywords == [] and lives.stage == "keyword" and lives.hits[0].id == home.id
    drinks = await service.recall(query="我早上一般喝啥")
    assert drinks.keywords == ["早上"] and drinks.hits[0].id == drink.id
    # Only function words and stopwords: nothing to search for.
    assert (await service.recall(query="我的是什么")).stage == "none"


async def test_recall_prefix_and_like_fallback(service: MemoryService) -> None:
    memory = await service.remember(content="Deploys go through GitHub Actions to Kubernetes")
    assert (await service.recall(query="kubern")).hits[0].id == memory.id  # prefix match
    weird = await service.remember(content="门牌号是ABC-7788X", category="fact")
    result = await service.recall(query="7788x")
    assert result.stage in ("keyword", "like") and result.hits[0].id == weird.id
    # Inside a Chinese word jieba would keep whole: the bigram index finds it.
    latte = await service.remember(content="喝拿铁", category="note")
    inside = await service.recall(query="拿铁")
    assert inside.stage == "keyword" and inside.hits[0].id == latte.id
    # The middle of a word is not an index term: only the substring fallback finds it.
    fallback = await service.recall(query="88x")
    assert fallback.stage == "like" and fallback.hits[0].id == weird.id


async def test_recall_breakdown_matches_the_formula(service: MemoryService, config: Config) -> None:
    await service.remember(content="我喜欢深色主题", category="preference", confidence=0.9)
    hit = (await service.recall(query="深色主题")).hits[0]
    b = hit.breakdown
    assert b.keyword == 1.0 and b.category == 1.5 and b.confidence == 0.9 and b.topic_boost == 1.0
    assert b.frequency == 0.0 and 0.99 < b.recency <= 1.0  # never used before
    w = config.recall.weights
    expected = (
        w.keyword * b.keyword
        + w.category * b.category
        + w.recency * b.recency
        + w.frequency * b.frequency
        + w.confidence * b.confidence
    )
    assert hit.score == pytest.approx(expected, abs=1e-3)


async def test_recall_tracks_access_and_filters(service: MemoryService) -> None:
    a = await service.remember(content="Project Atlas uses PostgreSQL", category="project_state", tags=["atlas"])
    b = await service.remember(content="Project Borealis uses PostgreSQL", category="fact", tags=["borealis"])
    only_state = await service.recall(query="postgresql", category="project_state")
    assert [h.id for h in only_state.hits] == [a.id]
    only_tag = await service.recall(query="postgresql", tags=["borealis"])
    assert [h.id for h in only_tag.hits] == [b.id]
    await service.store.flush()  # access is recorded in the background, after the answer
    assert (await service.get(a.id)).access_count == 1
    assert (await service.get(b.id)).access_count == 1
    await service.recall(query="postgresql", track_access=False)
    await service.store.flush()
    assert (await service.get(a.id)).access_count == 1


async def test_searches_while_accesses_are_written_see_each_access_once(service: MemoryService, store: Store) -> None:
    """A search running alongside the write of the pending access counts (PostgreSQL reads do)
    sees each access once: still pending, or in the row, never in neither nor in both."""
    await service.remember(content="Project Atlas 使用 PostgreSQL 数据库")
    [found] = await store.search_like(["atlas"], 5)
    seq = found.row.seq
    for expected in range(1, 6):
        store.touch([seq], utcnow())
        seen: list[int] = []
        done = anyio.Event()

        async def flush(done: anyio.Event = done) -> None:
            await store.flush()
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(flush)
            while not done.is_set():
                seen.append((await store.search_like(["数据库"], 5))[0].row.access_count)
        seen.append((await store.search_like(["atlas"], 5))[0].row.access_count)
        assert set(seen) == {expected}, seen


async def test_recency_and_topic_change_the_ranking(service: MemoryService, store: Store) -> None:
    old = await service.remember(content="The user plays tennis on Sundays", now=utcnow() - timedelta(days=60))
    new = await service.remember(content="The user plays tennis with Anna")
    ranked = (await service.recall(query="tennis")).hits
    assert [h.id for h in ranked] == [new.id, old.id]
    assert ranked[1].breakdown.recency < 0.01

    async with store.transaction() as tx:
        await tx.set_topic("s1", "weekend sundays plans", datetime.now(UTC))
    boosted = (await service.recall(query="tennis", session_id="s1")).hits
    assert boosted[0].id == old.id and boosted[0].breakdown.topic_boost == 1.3
    assert "sundays" in (await service.recall(query="tennis", session_id="s1")).keywords


@pytest.mark.parametrize(
    "query", ['"', "*", "AND", "OR NOT", "NEAR(", "^", ":", "(", "😀", "a\x00b", "x" * 2000, "的", "the a an"]
)
async def test_hostile_queries_never_fail(service: MemoryService, query: str) -> None:
    await service.remember(content="and or not near python (test) 'quotes' \"double\"")
    result = await service.recall(query=query)
    assert result.stage in ("keyword", "like", "none")


async def test_overlong_and_empty_queries_are_clear_errors(service: MemoryService, config: Config) -> None:
    with pytest.raises(InvalidInput, match="query is"):
        await service.recall(query="x" * (config.limits.max_query_chars + 1))
    with pytest.raises(InvalidInput, match="query is empty"):
        await service.recall(query=" \x00 ")
    with pytest.raises(InvalidInput, match="limit"):
        await service.recall(query="x", limit=0)


async def test_forget_leaves_nothing_behind(service: MemoryService, config: Config) -> None:
    keep = await service.remember(content="keep me")
    gone = await service.remember(content="forget my old address 12 Baker Street", key="user.address")
    await service.remember(content="my new address is 221B Baker Street", key="user.address")
    result = await service.forget([gone.id, "mem_999", "nonsense", gone.id])
    assert result.deleted == [gone.id]
    assert result.not_found == ["mem_999", "nonsense"]
    assert rawdb.value(config, "SELECT count(*) FROM memory_history") == 0
    assert rawdb.value(config, "SELECT count(*) FROM memory_fts") == 1
    assert rawdb.value(config, "SELECT count(*) FROM memory_fts WHERE content LIKE '%baker%'") == 0
    assert (await service.recall(query="Baker Street")).hits == []
    with pytest.raises(NotFound):
        await service.get(gone.id)
    assert (await service.get(keep.id)).content == "keep me"
    with pytest.raises(InvalidInput):
        await service.forget([])


async def test_ids_are_never_reused(service: MemoryService) -> None:
    first = await service.remember(content="one")
    await service.forget([first.id])
    second = await service.remember(content="two")
    assert second.id != first.id


async def test_list_pages_through_everything_once(service: MemoryService) -> None:
    ids = [(await service.remember(content=f"memory {i} 第{i}条", importance=(i % 5) / 5)).id for i in range(23)]
    for order in ("updated", "created", "importance", "accessed"):
        seen: list[str] = []
        cursor = None
        while True:
            page = await service.list_memories(order_by=order, limit=5, cursor=cursor)  # type: ignore[arg-type]
            assert page.total == 23
            seen += [m.id for m in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    by_importance = (await service.list_memories(order_by="importance", limit=23)).items
    assert [m.importance for m in by_importance] == sorted((m.importance for m in by_importance), reverse=True)
    with pytest.raises(InvalidInput, match="cursor"):
        await service.list_memories(cursor="garbage")
    page = await service.list_memories(order_by="created", limit=2)
    with pytest.raises(InvalidInput, match="cursor"):
        await service.list_memories(order_by="importance", cursor=page.next_cursor)


@pytest.mark.parametrize(
    "parts",
    [
        ["updated", "2020-01-01T00:00:00+00:00", 2**63],  # SQLite integers have 64 bits
        ["updated", 10**30, 1],
        ["importance", float("nan"), 1],
        ["importance", float("inf"), 1],
        ["updated", "2020-01-01T00:00:00+00:00", True],
        ["updated", ["x"], 1],
    ],
)
async def test_a_forged_cursor_is_invalid_input_not_a_crash(service: MemoryService, parts: list[object]) -> None:
    """Found by tests/server/test_hostile_input.py: a cursor holding a 65-bit integer reached SQLite,
    whose OverflowError came back as an internal error."""
    await service.remember(content="one memory")
    raw = json.dumps(parts).encode()  # NaN and Infinity as Python's json writes (and reads) them
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    with pytest.raises(InvalidInput, match="cursor is not valid"):
        await service.list_memories(order_by=parts[0], cursor=cursor)  # type: ignore[arg-type]


async def test_list_filters(service: MemoryService) -> None:
    await service.remember(content="a", category="todo", tags=["home"])
    await service.remember(content="b", category="todo", tier="working")
    await service.remember(content="c", category="fact", tags=["home", "garden"])
    assert (await service.list_memories(category="todo")).total == 2
    assert (await service.list_memories(tier="working")).total == 1
    assert (await service.list_memories(tags=["home"])).total == 2
    assert (await service.list_memories(tags=["home", "garden"])).total == 1


async def test_stats(service: MemoryService, config: Config) -> None:
    await service.remember(content="x", category="fact", session_id="s1")
    await service.remember(content="y", category="preference")
    stats = await service.stats()
    assert stats.total == 2 and stats.by_category == {"fact": 1, "preference": 1}
    assert (
        stats.sessions == 1
        and stats.db_path == config.database
        and stats.schema_version == max(v for v, _, _ in MIGRATIONS)
    )
