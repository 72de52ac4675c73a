"""Corrections replace what they correct, through the real SDK client: the fast channel stores a
keyed fact (city, employer, job, name, partner) under its key and a later statement or correction
updates that memory with history; a superseded value never outranks its correction in recall,
with or without a session topic; emphasis forces a sentence; a compound sentence becomes
separate memories. In Chinese, English and mixed text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call
from ..samplers import Sampler, answering_with, never, refusing

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def memory(client: Client, memory_id: str) -> dict[str, Any]:
    """A memory with its history, from its resource."""
    read = await client.read_resource(f"memory://memories/{memory_id}")
    return dict(json.loads(read.contents[0].text))  # type: ignore[union-attr]


def fast(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in result["items"] if i["channel"] == "fast"]


async def log_entry(client: Client, run: str) -> dict[str, Any]:
    log = json.loads((await client.read_resource("memory://extraction-log")).contents[0].text)  # type: ignore[union-attr]
    (entry,) = (e for e in log if e["run"] == run)
    return dict(entry)


# ---- keyed facts: a move or a correction updates the key, the old value kept in history ----------


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("我住在北京", "I moved to Berlin"),  # the audit's case: a decision was stored, user.city kept 北京
        ("The user lives in Berlin", "我搬到了杭州"),
        ("我住在北京", "其实我住在Munich"),
    ],
)
async def test_a_move_updates_the_city_key_and_keeps_the_old_value(client: Client, stored: str, said: str) -> None:
    first = await call(client, "remember", content=stored, key="user.city", category="identity")
    result = await call(client, "extract", user_message=said)
    (item,) = fast(result)
    assert (item["id"], item["action"], item["category"]) == (first["id"], "updated", "identity")
    now = await memory(client, first["id"])
    assert (now["key"], now["content"], now["tier"]) == ("user.city", said, "core")
    assert [h["content"] for h in now["history"]] == [stored]
    listed = await call(client, "list")
    assert listed["total"] == 1  # no second memory contradicting the first, no decision


@pytest.mark.parametrize(
    ("statement", "correction", "key", "category"),
    [
        ("我住在北京", "我不是住在北京，而是住在上海", "user.city", "identity"),
        ("I live in Boston", "Actually I live in Chicago", "user.city", "identity"),
        ("我在阿里工作", "更正：我在腾讯工作", "user.employer", "identity"),
        ("I work at SAP", "Sorry, I meant I work at Siemens", "user.employer", "identity"),
        ("我是一名后端工程师", "其实我是产品经理", "user.job", "identity"),
        ("I'm a data engineer", "Correction: I'm a product manager", "user.job", "identity"),
        ("我叫小王", "更正一下，我的名字是王小明", "user.name", "identity"),
        ("My name is Sam", "Actually my name is Samuel", "user.name", "identity"),
        ("我老婆叫小丽", "更正：我老婆叫小美", "user.partner", "relationship"),
        ("My wife is Anna", "Sorry, my wife's name is Anne", "user.partner", "relationship"),
        ("我在字节跳动上班", "I joined Google last month", "user.employer", "identity"),
    ],
)
async def test_a_statement_is_keyed_and_its_correction_updates_it(
    client: Client, statement: str, correction: str, key: str, category: str
) -> None:
    first = fast(await call(client, "extract", user_message=statement))
    assert [(i["action"], i["category"]) for i in first] == [("created", category)]
    second = fast(await call(client, "extract", user_message=correction))
    assert [(i["id"], i["action"]) for i in second] == [(first[0]["id"], "updated")]
    now = await memory(client, first[0]["id"])
    assert (now["key"], now["content"], now["category"]) == (key, correction, category)
    assert [h["content"] for h in now["history"]] == [statement]
    assert (await call(client, "list"))["total"] == 1


@pytest.mark.parametrize(
    ("statement", "correction", "now"),
    [
        ("我住在北京", "不是北京，是柏林", "我住在柏林"),
        ("I live in Beijing", "I meant Berlin, not Beijing", "I live in Berlin"),
        ("我在阿里工作", "Sorry, not 阿里 but 腾讯", "我在腾讯工作"),
    ],
)
async def test_a_correction_naming_only_the_values_finds_its_key(
    client: Client, statement: str, correction: str, now: str
) -> None:
    first = fast(await call(client, "extract", user_message=statement))
    second = fast(await call(client, "extract", user_message=correction))
    assert [(i["id"], i["action"], i["content"]) for i in second] == [(first[0]["id"], "updated", now)]
    held = await memory(client, first[0]["id"])
    assert held["content"] == now and [h["content"] for h in held["history"]] == [statement]


async def test_a_correction_whose_old_value_two_facts_hold_stays_its_own(client: Client) -> None:
    await call(client, "remember", content="我住在Lisbon", key="user.city", category="identity")
    await call(client, "remember", content="I work at Lisbon Labs", key="user.employer", category="identity")
    (item,) = fast(await call(client, "extract", user_message="不是Lisbon，是Porto"))
    assert (item["action"], item["category"]) == ("created", "correction")
    listed = await call(client, "list", category="identity")
    assert sorted(m["content"] for m in listed["items"]) == ["I work at Lisbon Labs", "我住在Lisbon"]


async def test_statements_that_are_not_the_user_s_value_are_not_keyed(client: Client) -> None:
    for said in (
        "他说我住在北京",
        "如果我住在北京就好了",
        "We moved to Postgres",
        "I moved to the next step",
        "我不住在北京了",
    ):
        await call(client, "extract", user_message=said)
    listed = await call(client, "list")
    assert all(m["key"] is None for m in listed["items"])


def answering(text: str) -> Sampler:
    return answering_with(text)


GOOD = json.dumps(
    {"memories": [{"content": "用户搬到了柏林", "category": "identity", "importance": 0.9, "source": "user"}]},
    ensure_ascii=False,
)


@pytest.mark.parametrize(
    ("sampler", "deep"),
    [
        (answering(GOOD), "extracted"),
        (answering("我觉得没什么要记的"), "failed"),
        (refusing, "failed"),
        (never, "failed"),
    ],
    ids=["answers-well", "answers-garbage", "fails", "times-out"],
)
async def test_the_key_is_updated_whatever_the_client_s_model_does(
    config: Config, segmenter: Segmenter, sampler: Sampler, deep: str
) -> None:
    quick = config.with_changes(sampling_timeout_s=0.3)
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=sampler) as client:
        first = await call(client, "remember", content="我住在北京", key="user.city", category="identity")
        with anyio.fail_after(10):
            result = await call(client, "extract", user_message="I moved to Berlin", session_id="s1")
        now = await memory(client, first["id"])
        keyed = [m for m in (await call(client, "list"))["items"] if m["key"] is not None]
    assert result["deep"] == deep
    assert (now["content"], [h["content"] for h in now["history"]]) == ("I moved to Berlin", ["我住在北京"])
    assert [m["id"] for m in keyed] == [first["id"]]


# ---- a superseded value never outranks its correction ----------------------------------------------


@pytest.mark.parametrize(
    ("deadline", "correction", "topic", "query"),
    [
        (
            "项目Alpha的截止日期是3月1日",
            "截止日期不是3月1日，而是3月15日",
            "项目Alpha截止日期",
            "Alpha的截止日期是哪天",
        ),
        ("项目Alpha的截止日期是3月1日", "更正：项目Alpha的截止日期是3月15日", "项目Alpha截止日期", "Alpha截止日期"),
        (
            "The Alpha project deadline is March 1",
            "Correction: the deadline is March 15, not March 1",
            "Alpha project",
            "when is the Alpha deadline",
        ),
        (
            "Alpha项目的deadline是3月1日",
            "Sorry, the deadline is March 15, not 3月1日",
            "Alpha deadline",
            "Alpha deadline",
        ),
    ],
)
async def test_a_correction_ranks_above_the_deadline_it_corrects(
    client: Client, deadline: str, correction: str, topic: str, query: str
) -> None:
    old = await call(client, "remember", content=deadline, category="todo", importance=0.9)
    result = await call(client, "extract", user_message=correction)
    (item,) = fast(result)
    assert item["category"] == "correction" and item["id"] != old["id"]
    plain = await call(client, "recall", query=query)
    await call(client, "update_session", session_id="s1", topic=topic)
    topical = await call(client, "recall", query=query, session_id="s1")
    for found in (plain, topical):
        ids = [h["id"] for h in found["hits"]]
        assert ids.index(item["id"]) < ids.index(old["id"]), found["hits"]
        scores = {h["id"]: h["score"] for h in found["hits"]}
        assert scores[item["id"]] > scores[old["id"]]


async def test_an_unkeyed_old_value_ranks_below_the_keyed_one(client: Client) -> None:
    old = await call(client, "remember", content="I live in Beijing", category="identity")
    new = fast(await call(client, "extract", user_message="I moved to Berlin"))
    assert new[0]["action"] == "created" and new[0]["id"] != old["id"]
    await call(client, "update_session", session_id="s2", topic="Beijing")
    found = await call(client, "recall", query="where do I live, Beijing or Berlin", session_id="s2")
    assert [h["id"] for h in found["hits"]][:2] == [new[0]["id"], old["id"]]


async def test_an_unrelated_older_memory_is_not_demoted(client: Client) -> None:
    other = await call(client, "remember", content="项目Beta的截止日期是3月1日之后的第一个周五", category="todo")
    correction = fast(await call(client, "extract", user_message="更正：项目Alpha的负责人是李雷"))
    assert correction[0]["category"] == "correction"
    found = await call(client, "recall", query="项目Beta截止日期")
    assert found["hits"][0]["id"] == other["id"]


# ---- emphasis forces; compound sentences split --------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "这个很重要：周五下午三点有客户电话",
        "以后会用到：测试服务器是10.0.3.7",
        "This is important: the VPN gateway is vpn-3.example.org",
        "I'll need this later: the staging build id is 4471",
        "重要：staging 的端口是 8443",
    ],
)
async def test_emphasis_is_a_forced_instruction(client: Client, said: str) -> None:
    result = await call(client, "extract", user_message=said)
    (item,) = fast(result)
    assert item["decision"] == "store" and item["id"] is not None
    entry = await log_entry(client, result["run"])
    assert entry["fast"]["items"][0]["value"]["forced"] is True


async def test_emphasis_alone_forces_what_follows(client: Client) -> None:
    result = await call(client, "extract", user_message="这个很重要。服务器每天凌晨三点重启。")
    (item,) = fast(result)
    assert item["content"] == "服务器每天凌晨三点重启" and item["decision"] == "store"
    assert (await log_entry(client, result["run"]))["fast"]["items"][0]["value"]["forced"] is True


@pytest.mark.parametrize("said", ["这个重要吗？", "It's important to eat well", "这不重要：随便吧"])
async def test_what_is_not_emphasis_is_not_forced(client: Client, said: str) -> None:
    result = await call(client, "extract", user_message=said)
    entry = await log_entry(client, result["run"])
    assert all(not i["value"]["forced"] for i in entry["fast"]["items"] if i["value"])


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            "我住在杭州，在阿里工作，喜欢爬山",
            [("我住在杭州", "user.city"), ("我在阿里工作", "user.employer"), ("我喜欢爬山", None)],
        ),
        (
            "I live in Berlin, work at SAP and love hiking",
            [("I live in Berlin", "user.city"), ("I work at SAP", "user.employer"), ("I love hiking", None)],
        ),
        ("我叫李雷，在Google上班", [("我叫李雷", "user.name"), ("我在Google上班", "user.employer")]),
    ],
)
async def test_compound_information_becomes_separate_memories(
    client: Client, said: str, expected: list[tuple[str, str | None]]
) -> None:
    items = fast(await call(client, "extract", user_message=said))
    assert [i["content"] for i in items] == [c for c, _ in expected]
    assert all(i["action"] == "created" for i in items)
    keys = [(await memory(client, i["id"]))["key"] for i in items]
    assert keys == [k for _, k in expected]


@pytest.mark.parametrize(
    "said",
    [
        "我决定用Go，因为它编译快",  # a reason belongs to its decision
        "I like tea, coffee and juice",  # a list of one preference
        "I work at Johnson and Johnson",
        "我不是住在北京，而是住在上海",  # a correction
        "I prefer tabs, especially in Go",
        "我喜欢爬山，他喜欢游泳",  # the second clause is someone else's
    ],
)
async def test_what_belongs_together_stays_one_memory(client: Client, said: str) -> None:
    items = fast(await call(client, "extract", user_message=said))
    assert [i["content"] for i in items] == [said]


@pytest.mark.parametrize(
    "message",
    [
        "我不是说你错了，而是我没解释清楚",
        "不是你的问题，是我没说清楚",
        "I'm not saying you're wrong, I just explained it badly",
    ],
)
async def test_a_turn_about_the_conversation_is_not_a_correction(
    config: Config, segmenter: Segmenter, message: str
) -> None:
    async with Client(build_server(config, segmenter)) as client:
        run = await call(client, "extract", user_message=message, assistant_message="明白了。")
        listed = await call(client, "list")
    assert run["fast"] == "nothing" and listed["total"] == 0, (run, listed)


@pytest.mark.parametrize(
    "message", ["我不是说周二，是周三", "其实是周三，不是周二", "Sorry, I meant Berlin, not Beijing"]
)
async def test_a_correction_of_what_was_said_still_is_one(config: Config, segmenter: Segmenter, message: str) -> None:
    async with Client(build_server(config, segmenter)) as client:
        await call(client, "extract", user_message=message, assistant_message="好的。")
        listed = await call(client, "list")
    assert [m["category"] for m in listed["items"]] == ["correction"], listed
