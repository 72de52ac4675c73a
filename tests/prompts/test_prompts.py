"""The prompt set: what each prompt shows, and that the answer format each asks for is exactly
what the matching tool accepts (a well-formed answer goes into the tool unchanged)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.prompts.catalog import CHANGE_EXAMPLE, EVALUATION_EXAMPLE, RESPONSE_EXAMPLE
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    server = build_server(config.with_changes(sieve_instructions="只记录和投资有关的信息"), segmenter)
    async with Client(server) as connected:
        yield connected


async def _prompt(client: Client, name: str, **args: str) -> str:
    result = await client.get_prompt(name, args)
    content = result.messages[0].content
    assert content.type == "text"
    return content.text


def _answer_shape(prompt: str) -> Any:
    """The JSON the prompt shows as the shape of its answer (after "like:" at its end)."""
    return json.loads(prompt.rsplit("like:\n", 1)[1])


async def test_detect_memory_changes_answer_goes_to_apply_changes(client: Client) -> None:
    theme = await call(client, "remember", content="用户偏好深色主题", category="user_preferences", key="ui.theme")
    old = await call(client, "remember", content="每周五手动备份数据库", category="workflow_history")
    prompt = await _prompt(
        client, "detect_memory_changes", user_input="我现在改用浅色主题了，数据库备份也自动化了", ai_output="好的"
    )
    assert re.search(r"Current time: \d{4}-\d\d-\d\dT", prompt)
    shown = json.loads(
        prompt.split('(JSON; "key" is what an operation uses to name one):\n', 1)[1].split("\n\n<exchange>")[0]
    )
    keys = {m["key"] for m in shown}
    assert {"ui.theme", old["id"]} <= keys and all({"key", "category", "content"} <= set(m) for m in shown)
    assert _answer_shape(prompt) == CHANGE_EXAMPLE

    # A model answering in that shape, naming the memories it was shown:
    answer = [
        CHANGE_EXAMPLE[0] | {"key": "ui.theme", "payload": "用户现在偏好浅色主题"},
        CHANGE_EXAMPLE[1],
        CHANGE_EXAMPLE[2] | {"key": old["id"]},
    ]
    applied = await call(client, "apply_changes", ops=answer)
    # The third, a del of a memory younger than 7 days, is kept by the keep rules.
    assert [a["action"] for a in applied["applied"]] == ["updated", "created", "kept"]
    assert "recent" in applied["applied"][2]["reason"]
    assert applied["applied"][0]["id"] == theme["id"]


async def test_evaluate_memory_answer_goes_to_remember(client: Client) -> None:
    await call(client, "remember", content="用户对花生过敏", category="identity")
    prompt = await _prompt(client, "evaluate_memory", information="我对花生和腰果都过敏")
    assert "- 用户对花生过敏" in prompt and "/ 2.2" in prompt
    shape = _answer_shape(prompt)
    assert shape == EVALUATION_EXAMPLE and shape["decision"] == "store"
    stored = await call(client, "remember", **shape["memory"])
    whole = json.loads((await client.read_resource(f"memory://memories/{stored['id']}")).contents[0].text)  # type: ignore[union-attr]
    assert stored["action"] in ("created", "merged") and whole["tier"] == "core"


async def test_respond_with_memory_answer_goes_to_update_session_and_apply_changes(client: Client) -> None:
    await call(client, "update_session", session_id="s1", topic="面试", emotion={"primary": "sad", "confidence": 0.9})
    await call(client, "remember", content="用户在准备后端工程师面试", category="project_state", session_id="s1")
    prompt = await _prompt(client, "respond_with_memory", user_message="明天就面试了，好紧张", session_id="s1")
    assert "- tone: empathetic" in prompt and "about 400 characters" in prompt
    assert '"current_topic": "面试"' in prompt and "用户在准备后端工程师面试" in prompt
    shape = _answer_shape(prompt)
    assert shape == RESPONSE_EXAMPLE
    turn = await call(client, "update_session", session_id="s1", emotion=shape["emotion"])
    assert turn["strategy"]["tone"] == "calm_reassuring" and turn["session"]["turn_count"] == 2
    changes = await call(client, "apply_changes", ops=shape["memory_changes"])
    assert changes["applied"][0]["action"] == "created"

    unknown = await _prompt(client, "respond_with_memory", user_message="hello", session_id="never-seen")
    assert "- tone: professional" in unknown


async def test_extract_memories_carries_the_configured_instructions(client: Client) -> None:
    prompt = await _prompt(client, "extract_memories", user_message="我买了一套房", assistant_message="恭喜")
    assert prompt.endswith("Additional instructions from the user:\n只记录和投资有关的信息")


async def test_synthesize_profile_shows_core_memories_with_ids(client: Client) -> None:
    first = await call(client, "remember", content="I'm a backend engineer in Hangzhou", category="identity")
    await call(client, "remember", content="只在这次对话里有用", tier="working", session_id="x")
    prompt = await _prompt(client, "synthesize_profile")
    assert f"[{first['id']}] (identity) I'm a backend engineer in Hangzhou" in prompt
    assert "只在这次对话里有用" not in prompt
    assert set(_answer_shape(prompt)) == {
        "summary",
        "domains",
        "high_value_signals",
        "low_value_signals",
        "language_preferences",
        "active_projects",
    }


async def test_synthesize_profile_answer_goes_to_refresh_profile(client: Client) -> None:
    me = await call(client, "remember", content="I'm a backend engineer in Hangzhou", category="identity")
    blog = await call(client, "remember", content="Migrating the blog to Hugo", category="project_state")
    prompt = await _prompt(client, "synthesize_profile")
    shape = _answer_shape(prompt)
    # The model's answer in that shape, citing the ids the prompt showed (and one it made up).
    answer = json.loads(json.dumps(shape).replace("mem_3", me["id"]).replace("mem_14", blog["id"]))
    stored = await call(client, "refresh_profile", profile=answer)
    assert stored["method"] == "model" and stored["summary"]["sources"] == [me["id"]]  # mem_8 does not exist
    assert stored["active_projects"][0]["sources"] == [blog["id"]]
