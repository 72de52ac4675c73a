"""The memory sieve through the real MCP client: the fast channel, the deep channel over MCP
sampling in both protocol eras, its failures, a client that cannot sample, and the log."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.sieve.sieve import parse_answer
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

USER = "我是一名后端工程师。帮我算一下品川区这个1LDK的实际利回，表面利回5%，管理费月1.2万"
ASSISTANT = (
    "年管理费14.4万，假设房价2000万，实际利回 = (100-14.4)/2000 ≈ 4.28%。"
    "考虑修缮积立金和固定资产税，综合利回约3.8-4.0%。"
)
EXTRACTED = {
    "memories": [
        {
            "content": "品川区1LDK投资评估：表面利回5%，管理费月1.2万，实际利回约4.28%",
            "category": "fact",
            "importance": 0.7,
            "source": "both",
            "reasoning": "a calculation the user will come back to",
        },
        {"content": "用户正在评估品川区的投资物件", "category": "project_state", "importance": 0.6, "source": "user"},
        {"content": "好的", "category": "fact", "importance": 0.1, "source": "user"},
        {"content": 42, "category": "fact"},
    ]
}

Sampler = Callable[[Any, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]]


def answering(text: str, seen: list[CreateMessageRequestParams] | None = None) -> Sampler:
    async def sample(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        if seen is not None:
            seen.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="test")

    return sample


async def refusing(_: Any, __: CreateMessageRequestParams) -> ErrorData:
    return ErrorData(code=-1, message="the user declined")


def rows(config: Config, sql: str) -> list[tuple[Any, ...]]:
    return rawdb.rows(config, sql)


async def extract(client: Client, **args: Any) -> dict[str, Any]:
    """extract on the test's conversation turn, `args` added or replacing its parts."""
    return await call(client, "extract", **({"user_message": USER, "assistant_message": ASSISTANT} | args))


def items(result: dict[str, Any], channel: str) -> list[dict[str, Any]]:
    """The items one channel proposed: the tool lists both channels' in one list."""
    return [i for i in result["items"] if i["channel"] == channel]


async def logged(client: Client, run: str) -> dict[str, Any]:
    """The extraction log's entry for a run: each item's signal pattern and value parts."""
    log = json.loads((await client.read_resource("memory://extraction-log")).contents[0].text)  # type: ignore[union-attr]
    (entry,) = (e for e in log if e["run"] == run)
    return entry


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_model_s_memories_go_to_the_session_s_working_memory(
    config: Config, segmenter: Segmenter, mode: str
) -> None:
    seen: list[CreateMessageRequestParams] = []
    sampler = answering("```json\n" + json.dumps(EXTRACTED, ensure_ascii=False) + "\n```", seen)
    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=sampler) as client:
        result = await extract(client, session_id="chat-7")
        entry = await logged(client, result["run"])
    assert len(seen) == 1 and USER in seen[0].messages[0].content.text  # type: ignore[union-attr]
    assert seen[0].max_tokens > 0 and seen[0].system_prompt
    assert result["fast"] == "stored"
    assert [i["decision"] for i in items(result, "fast")] == ["store"]
    assert [i["pattern"] for i in entry["fast"]["items"]] == ["identity"]
    deep = items(result, "deep")
    assert result["deep"] == "extracted" and result["fallback_note"] is None
    decisions = [(i["content"][:7], i["decision"]) for i in deep]
    assert decisions[0] == ("品川区1LDK", "working") and decisions[2] == ("好的", "skip")
    assert deep[3]["decision"] == "refused" and "Malformed" in deep[3]["reason"]
    assert deep[0]["value"] >= 5 and deep[3]["value"] is None
    value = entry["deep"]["items"][0]["value"]
    assert value["total"] == deep[0]["value"]
    assert set(value) >= {"novelty", "relevance", "credibility", "granularity", "timeliness"}
    stored = rows(config, "SELECT content, tier, session_id, category FROM memories ORDER BY seq")
    assert ("我是一名后端工程师", "core", "chat-7", "identity") in stored
    assert any(c.startswith("品川区1LDK") and t == "working" and s == "chat-7" for c, t, s, _ in stored)
    assert not any("not yet extracted" in c for c, *_ in stored)  # the note written ahead was removed
    assert rows(config, "SELECT status FROM extraction_log") == [("done",)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_item_the_model_got_wrong_is_refused_alone(config: Config, segmenter: Segmenter, mode: str) -> None:
    """Found by tests/server/test_hostile_input.py: an item with a source no memory can have (or a NaN
    importance, which Python's JSON reads) failed the whole extract call after the first round
    had already written."""
    good = EXTRACTED["memories"][0]
    proposed = [
        json.dumps(good | {"source": "the internet"}, ensure_ascii=False),
        json.dumps(good | {"content": "用户在品川区看房", "importance": 0.5}).replace("0.5", "NaN"),
        json.dumps(good, ensure_ascii=False),
    ]
    answer = '{"memories": [' + ", ".join(proposed) + "]}"
    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=answering(answer)) as client:
        result = await extract(client, session_id="s")
    deep = items(result, "deep")
    assert [i["decision"] for i in deep] == ["refused", "refused", "working"]
    assert "source 'the internet' is not one of" in deep[0]["reason"] and "Malformed" in deep[1]["reason"]
    assert result["deep"] == "extracted"


async def test_both_channels_run_at_once(config: Config, segmenter: Segmenter) -> None:
    """While the client's model is still thinking, the fast channel's memory and the note that
    keeps the exchange are already stored."""
    during: list[list[tuple[Any, ...]]] = []

    async def slow(_: Any, __: CreateMessageRequestParams) -> CreateMessageResult:
        await anyio.sleep(0.5)
        during.append(rows(config, "SELECT category, tier FROM memories ORDER BY seq"))
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text='{"memories": []}'), model="m"
        )

    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=slow) as client:
        result = await extract(client)
    assert during == [[("identity", "core"), ("context", "working")]]
    assert result["deep"] == "empty"
    assert rows(config, "SELECT category FROM memories") == [("identity",)]


@pytest.mark.parametrize("answer", ["I think you should remember the yield.", '{"memories": [', '{"items": 3}'])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unusable_answer_leaves_the_fallback_note(
    config: Config, segmenter: Segmenter, mode: str, answer: str
) -> None:
    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=answering(answer)) as client:
        result = await extract(client, session_id="s")
    assert result["deep"] == "failed" and "unusable" in result["detail"]
    note = result["fallback_note"]
    assert note is not None and note in result["detail"]
    (content, category, importance, tier, session), *_ = rows(
        config, f"SELECT content, category, importance, tier, session_id FROM memories WHERE seq = {note[4:]}"
    )
    assert (category, importance, tier, session) == ("context", 0.3, "working", "s")
    assert "品川区" in content and "4.28%" in content


async def test_a_timeout_keeps_the_exchange_and_a_refusal_does_not(config: Config, segmenter: Segmenter) -> None:
    """A client that declines (its user refused to have the exchange read) leaves only what the fast
    channel stored; a model that does not answer leaves the note, for a later extraction."""
    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=refusing) as client:
        refused = await extract(client)
    assert refused["deep"] == "failed" and "declined" in refused["detail"]
    assert refused["fallback_note"] is None

    async def never(_: Any, __: CreateMessageRequestParams) -> CreateMessageResult:
        await anyio.sleep(30)
        raise AssertionError("not reached")

    quick = config.with_changes(sampling_timeout_s=0.3)
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=never) as client:
        with anyio.fail_after(10):
            timed_out = await extract(client, user_message="Note that the staging server moved to 10.0.3.7")
            entry = await logged(client, timed_out["run"])
    assert timed_out["deep"] == "failed" and "within 0.3 s" in timed_out["detail"]
    assert timed_out["fallback_note"] is not None
    assert entry["fast"]["items"][0]["value"]["forced"] is True


async def test_a_modern_client_that_refuses_loses_nothing(config: Config, segmenter: Segmenter) -> None:
    """On the modern protocol the refusal happens in the client, which then stops calling; what the
    first round wrote stays: the fast channel's memory, the note, a pending log entry."""
    async with Client(build_server(config, segmenter), sampling_callback=refusing) as client:
        with pytest.raises((MCPError, ExceptionGroup)):
            await client.call_tool("extract", {"user_message": USER, "assistant_message": ASSISTANT})
        log = json.loads((await client.read_resource("memory://extraction-log")).contents[0].text)  # type: ignore[union-attr]
    assert [(e["status"], e["deep"]["outcome"], e["fast"]["outcome"]) for e in log] == [
        ("pending", "pending", "stored")
    ]
    assert sorted(rows(config, "SELECT category, importance FROM memories")) == [("context", 0.3), ("identity", 0.8)]


async def test_a_client_without_sampling_is_told_what_to_do(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        result = await extract(client)
        log = json.loads((await client.read_resource("memory://extraction-log")).contents[0].text)  # type: ignore[union-attr]
    assert result["deep"] == "unsupported" and result["fallback_note"] is None
    assert "extract_memories" in result["next_step"] and "apply_changes" in result["next_step"]
    assert log[0]["run"] == result["run"] and log[0]["status"] == "done"
    assert log[0]["user_preview"].startswith("我是一名后端工程师") and len(log[0]["digest"]) == 32


async def test_small_talk_skips_the_model(config: Config, segmenter: Segmenter) -> None:
    seen: list[CreateMessageRequestParams] = []
    async with Client(build_server(config, segmenter), sampling_callback=answering("{}", seen)) as client:
        result = await extract(client, user_message="好的，谢谢！", assistant_message="不客气！")
        english = await extract(client, user_message="thanks, bye!", assistant_message="Bye!")
    assert seen == []
    assert result["deep"] == english["deep"] == "skipped"
    assert result["fast"] == "nothing" and rows(config, "SELECT count(*) FROM memories") == [(0,)]


@pytest.mark.parametrize(
    ("message", "category"),
    [
        ("其实是周三开会，不是周二", "correction"),
        ("我喜欢用 Neovim 写代码", "preference"),
        ("I prefer dark mode in every editor", "preference"),
        ("I'm a data engineer at a logistics company", "identity"),
        ("我们决定用 PostgreSQL 做主库", "decision"),
        ("We decided to ship the beta on Friday", "decision"),
        ("提醒我下周一交季度报告", "todo"),
        ("Remind me to renew the domain before June 3", "todo"),
    ],
)
async def test_fast_channel_signals_in_chinese_and_english(
    config: Config, segmenter: Segmenter, message: str, category: str
) -> None:
    async with Client(build_server(config, segmenter)) as client:
        result = await extract(client, user_message=message, assistant_message="")
        entry = await logged(client, result["run"])
    (item,) = items(result, "fast")
    assert item["category"] == category and item["decision"] in ("store", "working") and item["id"]
    assert item["value"] >= 5 and entry["fast"]["items"][0]["pattern"] == category
    assert rows(config, "SELECT count(*) FROM memories") == [(1,)]


async def test_one_message_writes_at_most_twenty_memories_and_says_so(config: Config, segmenter: Segmenter) -> None:
    """A long message full of things to remember: the fast channel considers the first 20
    high-signal sentences and says how many it left for another call."""
    places = ["杭州", "成都", "西安", "大理", "青岛", "厦门", "桂林", "拉萨", "哈尔滨", "苏州"]
    chinese = [f"请记住，我{2000 + n}年第一次去了{places[n % 10]}，住了{n + 2}天。" for n in range(30)]
    english = [f"Remember that in {1990 + n} I ran the {n + 3}k race in {places[n % 10]}." for n in range(30)]
    message = " ".join(x for pair in zip(chinese, english, strict=True) for x in pair)
    async with Client(build_server(config, segmenter)) as client:
        result = await extract(client, user_message=message, assistant_message="")
        entry = await logged(client, result["run"])
    assert 0 < len(items(result, "fast")) <= 20
    assert "at most 20 per call" in entry["fast"]["detail"] and "40 more" in entry["fast"]["detail"]
    assert 0 < rows(config, "SELECT count(*) FROM memories")[0][0] <= 20


async def test_secrets_in_an_exchange_are_never_stored(config: Config, segmenter: Segmenter) -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    sampler = answering(
        json.dumps(
            {
                "memories": [
                    {
                        "content": f"The user's OpenAI key is {key}",
                        "category": "fact",
                        "importance": 0.9,
                        "source": "user",
                    }
                ]
            }
        )
    )
    async with Client(build_server(config, segmenter), sampling_callback=sampler) as client:
        result = await extract(
            client, user_message=f"记住，我的 OpenAI key 是 {key}", assistant_message="好的，" + "已记下。" * 40
        )
        log = (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]
    assert [(i["channel"], i["decision"]) for i in result["items"]] == [("fast", "refused"), ("deep", "refused")]
    assert "withheld" in items(result, "deep")[0]["reason"].lower()
    assert key not in json.dumps(result) and key not in log
    assert all(key not in c for (c,) in rows(config, "SELECT content FROM memories"))


@pytest.mark.parametrize("cut", [4, 20, 39])
async def test_a_secret_across_the_preview_s_end_is_withheld_from_the_log(
    config: Config, segmenter: Segmenter, cut: int
) -> None:
    """The log keeps the first 300 characters of each message. A token that starts before the 300th
    character and ends after it is withheld whole, never kept as its first `cut` characters."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token, 40 characters
    filler = "我们在讨论部署流程，" * 40
    user = filler[: 300 - cut] + f"{token} 是 CI 用的 token"
    async with Client(build_server(config, segmenter)) as client:
        await extract(client, user_message=user, assistant_message=f"Noted; rotate {token} soon.")
        log = json.loads((await client.read_resource("memory://extraction-log")).contents[0].text)  # type: ignore[union-attr]
    preview = log[0]["user_preview"]
    # The text before the token is kept; where the token began the preview shows the withheld
    # marker (cut short at 300 characters like the rest), never the token's own characters.
    assert token[:cut] not in preview and len(preview) <= 300
    assert preview.startswith(filler[: 300 - cut]) and "[withheld: ".startswith(preview[300 - cut :][:11])
    assert token[:4] not in log[0]["assistant_preview"]


def test_parse_answer_accepts_fences_prose_and_bare_lists() -> None:
    assert parse_answer('Here you go:\n```json\n{"memories": [{"content": "x"}]}\n```') == [{"content": "x"}]
    assert parse_answer('[{"content": "y"}]') == [{"content": "y"}]
    assert parse_answer('{"memories": []}') == []
    for bad in ("no json here", '{"memories": "x"}', "[1, 2]", '{"memories": [}'):
        with pytest.raises(ValueError):
            parse_answer(bad)


async def test_the_extract_tool_is_described_and_bounded(config: Config, segmenter: Segmenter, tmp_path: Path) -> None:
    async with Client(build_server(config, segmenter)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        empty = await client.call_tool("extract", {"user_message": ""})
    schema = tools["extract"].input_schema
    assert set(schema["properties"]) == {"user_message", "assistant_message", "session_id"}
    assert schema["properties"]["user_message"]["maxLength"] == 20000
    assert tools["extract"].annotations is not None and tools["extract"].annotations.read_only_hint is False
    assert empty.is_error


async def test_maintenance_closes_runs_whose_model_never_answered(config: Config, segmenter: Segmenter) -> None:
    from datetime import timedelta

    from mcp_memory_server.memory import lifecycle
    from mcp_memory_server.store import Store
    from mcp_memory_server.store.rows import utcnow

    async with Client(build_server(config, segmenter), sampling_callback=refusing) as client:
        with pytest.raises((MCPError, ExceptionGroup)):
            await client.call_tool("extract", {"user_message": USER, "assistant_message": ASSISTANT})
    async with Store(config, segmenter) as store:
        await lifecycle.maintain(store)  # too recent: still pending
        assert rows(config, "SELECT status FROM extraction_log") == [("pending",)]
        await lifecycle.maintain(store, now=utcnow() + timedelta(hours=2))
    (status, deep, note), *_ = rows(config, "SELECT status, deep, note_seq FROM extraction_log")
    assert status == "done" and json.loads(deep)["outcome"] == "failed" and note is not None
    assert rows(config, f"SELECT category FROM memories WHERE seq = {note}") == [("context",)]


async def test_the_cap_on_one_extract_call_is_a_setting(config: Config, segmenter: Segmenter) -> None:
    """MCP_MEMORY_MAX_EXTRACT bounds both channels: the fast channel's sentences and the model's items."""
    capped = config.with_changes(max_extract_items=3)
    message = " ".join(
        f"请记住，我的第{n + 1}个孩子叫小{'甲乙丙丁戊己'[n]}。 Remember that my car number {n} is blue."
        for n in range(6)
    )
    async with Client(build_server(capped, segmenter)) as client:
        result = await extract(client, user_message=message, assistant_message="")
        entry = await logged(client, result["run"])
    assert 0 < len(items(result, "fast")) <= 3
    assert "at most 3 per call (MCP_MEMORY_MAX_EXTRACT)" in entry["fast"]["detail"]
    model_items = [{"content": f"User item number {n}", "category": "fact", "importance": 7} for n in range(10)]
    assert len(parse_answer(json.dumps({"memories": model_items}), capped.limits.max_extract_items)) == 3
