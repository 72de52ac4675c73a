"""What the user asks of the memory itself, through the real SDK client and a sampling client:
"forget X" forgets and is never stored, "don't remember this (topic)" keeps the exchange (or the
topic) out of the store, the note and the log; a model's item that restates the user is stored on
an empty database (not measured against the run's own note), and skip reasons say the decision
taken. Chinese and English; the model answers well, answers garbage, refuses, or never answers."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call
from ..samplers import Sampler, answering_with, never, refusing

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def answering(*memories: dict[str, Any], text: str | None = None) -> Sampler:
    return answering_with(text if text is not None else json.dumps({"memories": list(memories)}, ensure_ascii=False))


def item(content: str, category: str = "fact", importance: float = 0.6, source: str = "user") -> dict[str, Any]:
    return {"content": content, "category": category, "importance": importance, "source": source}


def contents(config: Config) -> list[str]:
    return [c for (c,) in rawdb.rows(config, "SELECT content FROM memories ORDER BY seq")]


async def log_text(client: Client) -> str:
    return (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]


def channel(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [i for i in result["items"] if i["channel"] == name]


# ---- the deep channel and the run's own note ---------------------------------------------------

RESTATED = [
    "上周我们团队把支付服务从 Java 迁到了 Go，延迟降了一半",
    "Last week our team moved the payment service from Java to Go and latency halved",
]


@pytest.mark.parametrize("message", RESTATED)
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_model_item_restating_the_user_is_stored_on_an_empty_database(
    config: Config, segmenter: Segmenter, message: str, mode: str
) -> None:
    """The note written ahead keeps the user's words; the model's item equal to them is not old news."""
    sampler = answering(item(message, "project_state"))
    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=sampler) as client:
        result = await call(client, "extract", user_message=message, assistant_message="OK.", session_id="s1")
    (deep,) = channel(result, "deep")
    assert deep["decision"] == "working" and deep["action"] == "created", deep
    assert contents(config) == [message]  # stored once; the note is gone


@pytest.mark.parametrize(("message", "assistant"), [("我住在杭州", "好的，记住了。"), ("I live in Hangzhou", "Noted.")])
async def test_an_item_the_fast_channel_wrote_in_the_same_run_is_already_stored(
    config: Config, segmenter: Segmenter, message: str, assistant: str
) -> None:
    sampler = answering(item(message, "fact", 0.8))  # another category: would be a second copy
    async with Client(build_server(config, segmenter), sampling_callback=sampler) as client:
        result = await call(client, "extract", user_message=message, assistant_message=assistant)
    (fast,) = channel(result, "fast")
    (deep,) = channel(result, "deep")
    assert fast["decision"] == "store"
    assert deep["decision"] == "skip" and deep["id"] == fast["id"]
    assert deep["reason"] == f"Already stored: {fast['id']} says this."
    assert "0 written" in result["detail"]
    assert contents(config) == [message]


async def test_skip_reasons_say_the_decision_taken(config: Config, segmenter: Segmenter) -> None:
    """A near-duplicate is skipped for being one (not "value 6.1 is below 5"); a low value names
    the threshold it is below."""
    stored = "用户每周三晚上和同事去打羽毛球"
    near = stored + "呀"  # 0.93 of it already stored: a near-duplicate, worth 5.85 on its own
    sampler = answering(item(near, "fact", 0.7), item("好的", "fact", 0.1), item("I like it", "note", 0.1))
    async with Client(build_server(config, segmenter), sampling_callback=sampler) as client:
        await call(client, "remember", content=stored, category="fact", importance=0.5, tier="working")
        result = await call(client, "extract", user_message="周三晚上打球去", assistant_message="玩得开心！")
    near_dup, chatter, english = channel(result, "deep")
    assert near_dup["decision"] == "skip", near_dup
    assert near_dup["reason"].startswith("Not stored: mem_1 already says this (similarity ")
    assert "one band lower for a near-duplicate" in near_dup["reason"]
    for low in (chatter, english):
        assert low["decision"] == "skip" and low["value"] < 5
        assert low["reason"] == f"Value {low['value']:.1f} is below 5: not worth keeping."


# ---- forget ------------------------------------------------------------------------------------

FORGET = [
    ("我住在杭州", "忘了我住在杭州这件事吧", "好的，我不会再记着你住在杭州了。", "杭州", "用户希望忘记自己住在杭州"),
    (
        "I live in Hangzhou",
        "Forget that I live in Hangzhou",
        "Sure, I have forgotten that you live in Hangzhou.",
        "Hangzhou",
        "The user lives in Hangzhou",
    ),
]
SAMPLERS = ["answers", "garbage", "refuses", "times out"]


def sampler_for(kind: str, *memories: dict[str, Any]) -> Sampler:
    return {
        "answers": answering(*memories),
        "garbage": answering(text="I would remember: Hangzhou 杭州 {"),
        "refuses": refusing,
        "times out": never,
    }[kind]


@pytest.mark.parametrize("kind", SAMPLERS)
@pytest.mark.parametrize(("stored", "asked", "reply", "word", "restated"), FORGET)
async def test_forget_forgets_and_stores_nothing(
    config: Config, segmenter: Segmenter, stored: str, asked: str, reply: str, word: str, restated: str, kind: str
) -> None:
    quick = config.with_changes(sampling_timeout_s=0.3)
    sampler = sampler_for(kind, item(restated, "identity", 0.8))
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=sampler) as client:
        first = await call(client, "remember", content=stored, category="identity", importance=0.8)
        other = await call(client, "remember", content="我喜欢喝美式咖啡 / I like black coffee", category="preference")
        with anyio.fail_after(20):
            result = await call(client, "extract", user_message=asked, assistant_message=reply)
        found = await call(client, "recall", query=word)
        log = await log_text(client)
    (fast,) = channel(result, "fast")
    assert fast["action"] == "forgotten" and fast["id"] == first["id"] and fast["decision"] == "skip"
    assert f"Forgot {first['id']} at the user's request." in result["detail"]
    assert found["hits"] == []
    assert all(i["decision"] not in ("store", "working") for i in result["items"])
    # nothing new, and nothing of what was forgotten kept anywhere: not the note, not the log
    assert [m for m in contents(config) if word in m] == []
    assert [m for m in contents(config) if "not yet extracted" not in m] == ["我喜欢喝美式咖啡 / I like black coffee"]
    assert other["id"] != first["id"] and word not in log
    if kind == "answers":
        assert channel(result, "deep")[0]["reason"] == "Not stored: it is what the user asked to forget."
    else:  # declined: no note either; timed out: the note, without what was forgotten
        assert result["deep"] == "failed" and (result["fallback_note"] is None) is (kind == "refuses")


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        ("我住在杭州西湖区，在阿里巴巴做后端开发，每天骑车上班", "忘掉我住在杭州这件事"),
        (
            "I live in Hangzhou near the West Lake, work at Alibaba as a backend developer",
            "please forget that I live in Hangzhou",
        ),
    ],
)
async def test_forget_guesses_at_nothing(config: Config, segmenter: Segmenter, stored: str, asked: str) -> None:
    """A memory that says much more than what is to be forgotten is named, not forgotten; a request
    that matches nothing says so."""
    async with Client(build_server(config, segmenter)) as client:
        kept = await call(client, "remember", content=stored, category="identity")
        partial = await call(client, "extract", user_message=asked, assistant_message="")
        nothing = await call(client, "extract", user_message="Forget that my cat is called Mimi", assistant_message="")
    (report,) = channel(partial, "fast")
    assert report["id"] is None and report["action"] is None
    assert "nothing was forgotten" in partial["detail"] and f"{kept['id']} also mentions it" in partial["detail"]
    assert "nothing was forgotten" in nothing["detail"]
    assert contents(config) == [stored]


@pytest.mark.parametrize(
    "message",
    [
        "我忘了带钥匙，又回去了一趟",
        "忘了告诉你，我下周去上海出差",
        "I forgot my keys at the office",
        "别忘了提醒我明天交报告",
    ],
)
async def test_the_user_s_own_forgetting_is_not_a_request(config: Config, segmenter: Segmenter, message: str) -> None:
    async with Client(build_server(config, segmenter)) as client:
        await call(client, "remember", content="我下周去上海出差", category="todo")
        result = await call(client, "extract", user_message=message, assistant_message="")
    assert all(i["action"] != "forgotten" for i in result["items"])
    assert "我下周去上海出差" in contents(config)


# ---- off the record ----------------------------------------------------------------------------

OFF = [
    ("别记这个，我下周去看心理医生，我住在杭州", "心理医生", "用户下周要去看心理医生"),
    (
        "Don't remember this: I'm seeing a therapist next week and I live in Hangzhou.",
        "therapist",
        "User sees a therapist",
    ),
    ("我住在杭州，下周要去看心理医生。这个不用记。", "心理医生", "用户住在杭州"),
    ("Off the record, I prefer to see a therapist on Fridays.", "therapist", "User prefers Friday therapy"),
]


@pytest.mark.parametrize("kind", SAMPLERS)
@pytest.mark.parametrize(("message", "word", "restated"), OFF)
async def test_off_the_record_keeps_nothing_of_the_exchange(
    config: Config, segmenter: Segmenter, message: str, word: str, restated: str, kind: str
) -> None:
    quick = config.with_changes(sampling_timeout_s=0.3)
    sampler = sampler_for(kind, item(restated, "identity", 0.9))
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=sampler) as client:
        with anyio.fail_after(20):
            result = await call(client, "extract", user_message=message, assistant_message=f"Understood ({word}).")
        log = await log_text(client)
    assert contents(config) == []  # no memory, and no note waiting for the model
    assert result["fast"] == "nothing" and result["fallback_note"] is None
    assert "asked not to keep this exchange" in result["detail"] and word not in log
    if kind == "answers":
        (deep,) = channel(result, "deep")
        assert deep["decision"] == "skip" and "asked not to keep this exchange" in deep["reason"]


@pytest.mark.parametrize(
    ("message", "topic_item", "other_item", "kept"),
    [
        (
            "不要记住关于我前妻的事。我前妻叫小红，在上海。我喜欢喝美式咖啡",
            "用户的前妻叫小红，住在上海",
            "用户喜欢喝美式咖啡",
            "我喜欢喝美式咖啡",
        ),
        (
            "Don't save anything about my divorce. The divorce was finalised in May. I prefer tea over coffee.",
            "The user's divorce was finalised in May",
            "The user prefers tea over coffee",
            "I prefer tea over coffee",
        ),
    ],
)
async def test_a_topic_not_to_remember_is_left_out_and_the_rest_kept(
    config: Config, segmenter: Segmenter, message: str, topic_item: str, other_item: str, kept: str
) -> None:
    sampler = answering(item(topic_item, "relationship", 0.8), item(other_item, "preference", 0.7))
    async with Client(build_server(config, segmenter), sampling_callback=sampler) as client:
        result = await call(client, "extract", user_message=message, assistant_message="OK")
        log = await log_text(client)
    topic, other = channel(result, "deep")
    assert topic["decision"] == "skip" and "topic the user asked not to remember" in topic["reason"]
    assert other["decision"] in ("working", "skip") and "topic" not in other["reason"]
    assert [i["content"] for i in channel(result, "fast") if i["decision"] == "store"] == [kept]
    stored = contents(config)
    assert kept in stored and not any(w in m for m in stored for w in ("前妻", "小红", "divorce"))
    assert "小红" not in log and "finalised" not in log


# ---- seed 002: a lower threshold next to a high-value memory -----------------------------------


@pytest.mark.parametrize(
    ("anchor", "related"),
    [
        ("我在阿里巴巴做后端工程师，负责支付系统", "阿里巴巴的支付系统这周在做压测"),
        ("I work at Alibaba as a backend engineer on the payment system", "Alibaba payment system load test this week"),
    ],
)
async def test_an_item_related_to_a_high_value_memory_has_a_lower_threshold(
    config: Config, segmenter: Segmenter, anchor: str, related: str
) -> None:
    sampler = answering(item(related, "event", 0.4, "assistant"))
    runs = []
    for importance, tier in ((0.5, "working"), (0.9, "core")):
        async with Client(build_server(config, segmenter), sampling_callback=sampler) as client:
            memory = await call(
                client, "remember", content=anchor, category="identity", importance=importance, tier=tier
            )
            result = await call(
                client, "extract", user_message="压测怎么样 / how is the load test", assistant_message=""
            )
            await call(client, "forget", ids=[memory["id"]])
        (deep,) = channel(result, "deep")
        runs.append((deep, memory["id"]))
    (plain, _), (lowered, anchor_id) = runs
    assert plain["value"] == lowered["value"] and 4 <= plain["value"] < 5, plain
    assert plain["decision"] == "skip" and plain["reason"].endswith("is below 5: not worth keeping.")
    assert lowered["decision"] == "working", lowered
    assert f"at least 4 next to the high-value {anchor_id}" in lowered["reason"]
