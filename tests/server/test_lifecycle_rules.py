"""The lifecycle rules through the MCP client: forget leaves no text in the extraction log, an
update counts as a use for cleanup, a model's del obeys the keep rules (forget does not), and
cleanup archives low-confidence memories (seed 003)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.http import dashboard_api
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.sessions import Sessions
from mcp_memory_server.runtime.namespaces import AppState
from mcp_memory_server.server import build_server
from mcp_memory_server.sieve.sieve import Sieve
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import iso, utcnow
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call
from ..samplers import answering_with

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")
LONG_AGO = "2020-01-01T00:00:00.000000+00:00"
FORGOTTEN = "[forgotten]"


def _age(config: Config, ids: list[str], **columns: Any) -> None:
    """Set columns of memories (by id) as if written long ago; before the server starts."""
    sets = ", ".join(
        f"{name} = '{value}'" if isinstance(value, str) else f"{name} = {value}" for name, value in columns.items()
    )
    numbers = ", ".join(i.removeprefix("mem_") for i in ids)
    rawdb.rows(config, f"UPDATE memories SET {sets} WHERE number IN ({numbers})")


async def _log_text(client: Client) -> str:
    return (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]


async def test_forget_leaves_no_text_in_the_extraction_log(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        zh = await call(client, "extract", user_message="记住：我住在杭州西湖区。", assistant_message="好的，记住了。")
        en = await call(
            client, "extract", user_message="Remember: I live in Hangzhou near West Lake.", assistant_message="Noted."
        )
        kept = await call(client, "extract", user_message="记住：我每天喝乌龙茶。", assistant_message="好的。")
        # A keyed memory whose earlier value only its history holds, quoted by a later exchange.
        cafe = await call(client, "remember", content="My favourite café is Blue Bottle", key="user.cafe")
        await call(client, "remember", content="My favourite café is Arabica", key="user.cafe")
        await call(
            client,
            "extract",
            user_message="Which café did I mention last month?",
            assistant_message="You said: My favourite café is Blue Bottle.",
        )
        # Both sentences state user.city: the English one updates the Chinese one's memory, whose
        # history keeps 杭州西湖区.
        written = list(dict.fromkeys(i["id"] for r in (zh, en) for i in r["items"] if i["id"]))
        assert len(written) == 1 and all(i["id"] for i in kept["items"])
        before = await _log_text(client)
        assert "杭州" in before and "Hangzhou" in before and "Blue Bottle" in before

        forgot = await call(client, "forget", ids=[*written, cafe["id"]])
        assert forgot["deleted"] == [*written, cafe["id"]]
        after = await _log_text(client)
    for text in ("杭州", "西湖", "Hangzhou", "West Lake", "Blue Bottle", "Arabica"):
        assert text not in after, text
    assert FORGOTTEN in after and "乌龙茶" in after, "only the forgotten memories' text goes"
    entries = json.loads(after)
    assert {e["user_preview"] for e in entries} >= {FORGOTTEN, "记住：我每天喝乌龙茶。"}

    # The dashboard's log, on the same database: the same.
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        state = AppState(config=config, store=store, service=service, sessions=Sessions(service), sieve=Sieve(service))
        dashboard = json.dumps(await dashboard_api.extraction_log(state, {}), ensure_ascii=False)
    for text in ("杭州", "Hangzhou", "Blue Bottle"):
        assert text not in dashboard, text
    assert "乌龙茶" in dashboard
    # Nowhere else in the database either: history, full-text index, archive, log.
    for table, column in (
        ("memories", "content"),
        ("memory_history", "content"),
        ("memory_archive", "content"),
        ("extraction_log", "input"),
        ("extraction_log", "fast"),
    ):
        for text in ("杭州", "Hangzhou", "Blue Bottle"):
            found = rawdb.rows(config, f"SELECT count(*) FROM {table} WHERE CAST({column} AS TEXT) LIKE '%{text}%'")
            assert found == [(0,)], (table, text, rawdb.rows(config, f"SELECT * FROM {table}"))


@pytest.mark.parametrize(
    ("message", "reworded", "words"),
    [
        (
            "记住：我的车牌号是沪A·D12345，我家住在上海市徐汇区漕溪北路88号",
            "用户的车牌号是沪A·D12345，家住上海市徐汇区漕溪北路88号",
            ("D12345", "漕溪北路"),
        ),
        (
            "Remember: my licence plate is KX19 ABC and I live at 42 Wren Lane, Bristol",
            "My licence plate is KX19 ABC and I live at 42 Wren Lane in Bristol",
            ("KX19", "Wren Lane"),
        ),
    ],
)
async def test_forget_takes_a_skipped_rewording_from_the_log(
    config: Config, segmenter: Segmenter, message: str, reworded: str, words: tuple[str, ...]
) -> None:
    """The client's model rewords what the fast channel stored; the rewording is skipped as a
    near-duplicate (not an exact repeat). Forgetting the memory takes the rewording too."""
    deep = json.dumps({"memories": [{"content": reworded, "category": "fact", "importance": 0.8}]}, ensure_ascii=False)
    server = build_server(config.with_changes(maintenance_minutes=0), segmenter)
    async with Client(server, mode="legacy", sampling_callback=answering_with(deep)) as client:
        run = await call(client, "extract", user_message=message, assistant_message="OK.", session_id="s1")
        skipped = [i for i in run["items"] if i["channel"] == "deep"]
        before = await _log_text(client)
        assert [i["decision"] for i in skipped] == ["skip"] and all(w in before for w in words)
        stored = [m["id"] for m in (await call(client, "list"))["items"]]
        assert skipped[0]["id"] in stored, "the skip names the memory it repeats"
        await call(client, "forget", ids=stored)
        after = await _log_text(client)
    for word in words:
        assert word not in after, word
        for column in ("input", "fast", "deep"):
            found = rawdb.rows(
                config, f"SELECT count(*) FROM extraction_log WHERE CAST({column} AS TEXT) LIKE '%{word}%'"
            )
            assert found == [(0,)], (column, word)


async def test_forget_leaves_no_text_in_the_answers_kept_for_retries(config: Config, segmenter: Segmenter) -> None:
    """The request ledger keeps each answer for a retry with the same request_id; a remember's
    answer holds the memory. Forgetting it takes its texts (the earlier values too) out of the
    kept answers, and a retry is answered without them."""
    first = {"content": "我住在杭州西湖区", "key": "user.city", "request_id": "r1"}
    async with Client(build_server(config, segmenter)) as client:
        stored = await call(client, "remember", **first)
        await call(client, "remember", content="I moved to Berlin, near Tempelhof", key="user.city", request_id="r2")
        kept = await call(client, "remember", content="I drink oolong tea every morning", request_id="r3")
        assert "杭州" in json.dumps(rawdb.rows(config, "SELECT answer FROM write_requests"), ensure_ascii=False)
        await call(client, "forget", ids=[stored["id"]], request_id="r4")
        answers = json.dumps(rawdb.rows(config, "SELECT answer FROM write_requests"), ensure_ascii=False)
        for text in ("杭州", "西湖", "Berlin", "Tempelhof"):
            assert text not in answers, text
        assert "oolong" in answers, "only the forgotten memory's texts go"
        retried = await call(client, "remember", **first)  # the same call again: answered from the ledger
        assert retried["id"] == stored["id"] and "杭州" not in json.dumps(retried, ensure_ascii=False)
        assert (await call(client, "list"))["total"] == 1 and kept["id"] != stored["id"]


@pytest.mark.sqlite_only
async def test_an_update_counts_as_a_use_for_cleanup(
    config: Config, segmenter: Segmenter, service: MemoryService
) -> None:
    city = await service.remember(content="用户住在杭州", key="user.city", category="fact", importance=0.3)
    tool = await service.remember(content="The user writes notes in Obsidian", category="fact", importance=0.3)
    again = await service.remember(content="用户每周五下午开周会", category="event", importance=0.3)
    by_key = await service.remember(content="The team deploys on Thursdays", key="team.deploy", importance=0.3)
    idle_zh = await service.remember(content="用户去年看过一场话剧", category="event", importance=0.3)
    idle_en = await service.remember(content="The user once tried a standing desk", category="event", importance=0.3)
    targets = [city.id, tool.id, again.id, by_key.id, idle_zh.id, idle_en.id]
    await service.import_memories([{"content": f"填充 filler {i}", "category": "note"} for i in range(40)])
    _age(config, targets, created_at=LONG_AGO, updated_at=LONG_AGO, last_accessed=LONG_AGO, access_count=0)
    await service.store.close()

    # 46 memories at start: cleanup does not apply yet, whenever the start's maintenance runs.
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        moved = await call(client, "remember", content="用户搬到了柏林", key="user.city")
        assert moved["action"] == "updated"
        replaced = await call(
            client,
            "apply_changes",
            ops=[
                {
                    "key": tool.id,
                    "action": "add",
                    "category": "fact",
                    "payload": "The user writes notes in Logseq",
                    "importance": 3,
                    "source": "user",
                },
                {
                    "key": "team.deploy",
                    "action": "add",
                    "category": "fact",
                    "payload": "The team deploys on Thursdays",
                    "importance": 3,
                    "source": "user",
                },
            ],
        )
        assert [o["action"] for o in replaced["applied"]] == ["updated", "unchanged"]
        same = await call(client, "remember", content="用户每周五下午开周会", category="event", importance=0.3)
        assert same["action"] == "unchanged" and same["id"] == again.id
        for i in range(10):  # now above 50: cleanup applies
            await call(client, "remember", content=f"新的记忆 new memory {i}", category="note")
        cleaned = await call(client, "cleanup", dry_run=False)
        archived = {c["id"] for c in cleaned["candidates"]}
        listed = await call(client, "list", limit=200)
    assert archived <= {idle_zh.id, idle_en.id}  # the start's maintenance may have taken them first
    live = {m["id"] for m in listed["items"]}
    assert {city.id, tool.id, again.id, by_key.id} <= live, "a memory just updated is in use"
    assert not {idle_zh.id, idle_en.id} & live, "the same memories, not updated, are archived as unused"
    (count, accessed) = rawdb.rows(
        config, f"SELECT access_count, last_accessed FROM memories WHERE number = {city.id[4:]}"
    )[0]
    assert count == 1 and str(accessed) > LONG_AGO, "the update is one use, now"


@pytest.mark.sqlite_only
async def test_a_model_s_del_obeys_the_keep_rules_and_forget_does_not(
    config: Config, segmenter: Segmenter, service: MemoryService
) -> None:
    important = await service.remember(content="用户对青霉素过敏", category="fact", importance=0.9)
    used = await service.remember(content="The user's build command is make check", category="fact")
    recent = await service.remember(content="用户刚买了一辆自行车", category="fact")
    core = await service.remember(content="The user prefers dark mode", category="preference")
    manual = await service.remember(content="用户手写的笔记：周三交报告", category="fact", source="manual")
    plain = await service.remember(content="The user once visited Lisbon", category="fact")
    old = [important.id, used.id, core.id, manual.id, plain.id]
    _age(config, old, created_at=LONG_AGO)
    _age(config, [used.id], access_count=12)
    await service.store.close()

    protected = {
        important.id: "important",
        used.id: "frequently_used",
        recent.id: "recent",
        core.id: "core_category",
        manual.id: "manual",
    }
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        categories = {
            important.id: "fact",
            used.id: "fact",
            recent.id: "fact",
            core.id: "preference",
            manual.id: "fact",
            plain.id: "fact",
        }
        ops = [{"key": i, "action": "del", "category": c} for i, c in categories.items()]
        result = await call(client, "apply_changes", ops=ops)
        outcomes = {o["id"]: o for o in result["applied"]}
        for memory, rule in protected.items():
            assert outcomes[memory]["action"] == "kept", memory
            assert outcomes[memory]["reason"].startswith(f"keep rule {rule!r}"), outcomes[memory]["reason"]
        assert outcomes[plain.id]["action"] == "deleted" and "1 deleted, 5 kept" in result["detail"]
        listed = await call(client, "list", limit=50)
        assert {m["id"] for m in listed["items"]} == set(protected)
        # The user's own wish: forget deletes whatever a keep rule protects.
        forgot = await call(client, "forget", ids=list(protected))
        assert forgot["deleted"] == list(protected)
        assert (await call(client, "list"))["total"] == 0


@pytest.mark.sqlite_only
async def test_low_confidence_memories_are_archived(
    config: Config, segmenter: Segmenter, service: MemoryService
) -> None:
    unsure_zh = await service.remember(content="用户可能喜欢爵士乐", category="fact", confidence=0.05)
    unsure_en = await service.remember(content="The user might own a cat", category="fact", confidence=0.29)
    sure = await service.remember(content="The user might play chess", category="fact", confidence=0.3)
    important = await service.remember(content="用户也许对花生过敏", category="fact", confidence=0.05, importance=0.8)
    fresh = await service.remember(content="The user may like hiking", category="fact", confidence=0.05)
    await service.import_memories([{"content": f"填充 filler {i}", "category": "note"} for i in range(50)])
    everyone = [unsure_zh.id, unsure_en.id, sure.id, important.id, fresh.id]
    # Used often enough that the "unused" rule never applies; not used for 40 days (fresh: 29).
    _age(config, everyone, created_at=LONG_AGO, last_accessed=iso(utcnow() - timedelta(days=40)), access_count=5)
    _age(config, [fresh.id], last_accessed=iso(utcnow() - timedelta(days=29)))
    await service.store.close()

    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        for _ in range(100):  # the maintenance at start archives them
            if rawdb.value(config, "SELECT count(*) FROM memory_archive") >= 2:
                break
            await anyio.sleep(0.05)
        listed = await call(client, "list", limit=200)
    live = {m["id"] for m in listed["items"]}
    assert {sure.id, important.id, fresh.id} <= live
    assert not {unsure_zh.id, unsure_en.id} & live
    reasons = rawdb.rows(config, "SELECT archive_reason FROM memory_archive ORDER BY number")
    assert reasons == [("cleanup: low_confidence",)] * 2


@pytest.mark.parametrize(
    ("wrong", "right", "query"),
    [
        ("我对芒果过敏", "我对菠萝过敏", "我对什么过敏"),
        ("I am allergic to mangoes", "I am allergic to pineapple", "what am I allergic to"),
    ],
)
async def test_a_deletion_the_user_asks_for_applies_to_a_memory_stored_minutes_ago(
    config: Config, segmenter: Segmenter, wrong: str, right: str, query: str
) -> None:
    """我刚才说错了，我不是对芒果过敏，是对菠萝过敏，把芒果那条删掉: the model's del carries "asked" and
    is archived, keep rule 'recent' or not; restore brings it back. Without "asked" it is still kept."""
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        stored = await call(client, "remember", content=wrong, category="fact", importance=0.9)
        prompt = await client.get_prompt(
            "detect_memory_changes", {"user_input": "我刚才说错了，把芒果那条删掉", "ai_output": "好的。"}
        )
        assert '"asked": true' in prompt.messages[0].content.text  # type: ignore[union-attr]
        plain = await call(client, "apply_changes", ops=[{"key": stored["id"], "action": "del", "category": "fact"}])
        assert plain["applied"][0]["action"] == "kept" and '"asked": true' in plain["applied"][0]["reason"]
        ops = [
            {"key": stored["id"], "action": "del", "category": "fact", "asked": True},
            {
                "key": "mem_new_1",
                "action": "add",
                "category": "fact",
                "payload": right,
                "importance": 9,
                "source": "user",
            },
        ]
        result = await call(client, "apply_changes", ops=ops)
        assert [o["action"] for o in result["applied"]] == ["archived", "created"], result
        found = await call(client, "recall", query=query)
        assert [h["content"] for h in found["hits"]] == [right], found
        back = await call(client, "restore", ids=[stored["id"]])
        assert back["restored"] == [stored["id"]]


@pytest.mark.parametrize("importance", [7.5, "7", True])
async def test_an_add_s_importance_is_an_integer_from_1_to_10(
    config: Config, segmenter: Segmenter, importance: object
) -> None:
    op = {"key": "mem_new_1", "action": "add", "category": "fact", "payload": "用户喜欢喝茶", "source": "user"}
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        result = await client.call_tool("apply_changes", {"ops": [op | {"importance": importance}]})
        listed = await call(client, "list")
    assert result.is_error and "importance" in str(result.content), result
    assert listed["total"] == 0


@pytest.mark.sqlite_only
async def test_a_memory_recalled_once_is_not_unused(
    config: Config, segmenter: Segmenter, service: MemoryService
) -> None:
    """The seed counts a memory's creation as its first trigger: "fewer than 2" is never recalled,
    and a memory recalled once (access_count 1 here, which counts from 0) stays."""
    once = await service.remember(content="用户上次问过的那家拉面馆在五道口", category="fact", importance=0.6)
    never = await service.remember(content="The user once mentioned a bakery on Elm Street", category="fact")
    await service.import_memories([{"content": f"填充 filler {i}", "category": "note"} for i in range(55)])
    _age(config, [once.id, never.id], created_at=LONG_AGO, updated_at=LONG_AGO, last_accessed=LONG_AGO)
    _age(config, [once.id], access_count=1)
    _age(config, [never.id], access_count=0)
    await service.store.close()
    async with Client(build_server(config.with_changes(maintenance_minutes=0), segmenter)) as client:
        for _ in range(200):  # the cleanup at start archives the unused one
            if never.id not in {m["id"] for m in (await call(client, "list", limit=100))["items"]}:
                break
            await anyio.sleep(0.05)
        dry = await call(client, "cleanup", dry_run=True)
        listed = {m["id"] for m in (await call(client, "list", limit=100))["items"]}
    assert once.id in listed and once.id not in {c["id"] for c in dry["candidates"]}, dry
