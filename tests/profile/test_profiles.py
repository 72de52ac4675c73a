"""The user profile: deterministic synthesis, staleness, citations that never outlive their
memories, manual edits that survive, synthesis by the client's model in both eras."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from mcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.change_ops import apply_changes
from mcp_memory_server.profile import Profile
from mcp_memory_server.profile import profile as profiles
from mcp_memory_server.server import build_server
from mcp_memory_server.store.rows import utcnow
from mcp_memory_server.text import Segmenter

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

CHINESE = [
    ("我是杭州的一名后端工程师，主要写 Python", "identity", 0.9),
    ("我喜欢简单的部署方案，讨厌复杂的 Kubernetes 配置", "preference", 0.8),
    ("正在把博客迁移到静态站点 Hugo", "project_state", 0.7),
    ("Python 项目统一用 ruff 格式化", "coding_style", 0.7),
    ("周五前提交季度报告", "todo", 0.6),
]
ENGLISH = [
    ("I'm a data scientist in Berlin working mostly with Python and pandas", "identity", 0.9),
    ("I prefer concise answers with code examples", "preference", 0.8),
    ("Building a churn prediction model for the subscription team", "project_state", 0.7),
    ("Python notebooks are reviewed every Monday", "fact", 0.5),
]


async def _fill(service: MemoryService, items: Sequence[tuple[str, str, float]]) -> list[str]:
    return [(await service.remember(content=c, category=k, importance=i)).id for c, k, i in items]


def _cited(profile: Profile) -> set[str]:
    items = [profile.summary, profile.language_preferences, *profile.domains, *profile.high_value_signals]
    items += [*profile.low_value_signals, *profile.active_projects]
    return {s for item in items for s in item.sources}


def _stale(service: MemoryService) -> bool:
    return bool(rawdb.value(service.config, "SELECT stale FROM profile"))


async def test_chinese_profile_is_grounded(service: MemoryService) -> None:
    ids = await _fill(service, CHINESE)
    profile = await profiles.get_profile(service.store)
    assert profile.method == "deterministic"
    assert _cited(profile) <= set(ids) and ids[0] in profile.summary.sources
    assert "后端工程师" in profile.summary.text
    assert profile.language_preferences.text == "中文为主，技术词汇中英混用"
    assert [p.text for p in profile.active_projects] == ["正在把博客迁移到静态站点 Hugo"]
    assert any(d.text.lower() == "python" for d in profile.domains), profile.domains
    assert any("身份背景" in s.text for s in profile.high_value_signals)
    # Read, never stored: no profile row, no memory of its own.
    assert rawdb.rows(service.config, "SELECT 1 FROM profile") == []
    assert (await service.list_memories()).total == len(ids)


async def test_english_profile_and_determinism(service: MemoryService) -> None:
    ids = await _fill(service, ENGLISH)
    first = await profiles.get_profile(service.store)
    again = await profiles.get_profile(service.store, refresh=True)
    assert first.model_dump(exclude={"synthesized_at"}) == again.model_dump(exclude={"synthesized_at"})
    assert not again.stale
    assert first.language_preferences.text == "Mainly English" and _cited(first) <= set(ids)
    assert first.active_projects[0].sources == [ids[2]]


async def test_staleness_follows_memories_about_the_user(service: MemoryService) -> None:
    await _fill(service, ENGLISH)
    before = await profiles.get_profile(service.store, refresh=True)
    assert not _stale(service)
    await service.remember(content="The office coffee machine is on floor 3", category="fact")
    assert not _stale(service)
    skill = await service.remember(content="I'm learning Rust on weekends", category="skill", importance=0.95)
    assert _stale(service)
    after = await profiles.get_profile(service.store)  # rules due: computed for the read, not stored
    assert _stale(service) and skill.id in after.summary.sources and after.summary != before.summary
    assert (await profiles.get_profile(service.store, refresh=True)).summary == after.summary
    assert not _stale(service)


async def test_a_forgotten_memory_is_never_cited(service: MemoryService) -> None:
    ids = await _fill(service, CHINESE)
    await profiles.get_profile(service.store, refresh=True)
    await service.forget([ids[0]])
    assert ids[0] not in _cited(await profiles.get_profile(service.store))
    await profiles.get_profile(service.store, refresh=True)
    later = utcnow() + timedelta(days=8)  # a model's del leaves a memory younger than 7 days alone
    await apply_changes(service, [{"key": ids[2], "action": "del", "category": "project_state"}], now=later)
    profile = await profiles.get_profile(service.store)
    assert ids[2] not in _cited(profile) and all(p.sources != [ids[2]] for p in profile.active_projects)
    # Even a stored profile read without re-synthesis drops citations of what is gone.
    await service.forget([ids[1]])
    peeked = await profiles.peek(service.store)
    assert peeked is not None and ids[1] not in _cited(peeked)


async def test_manual_edits_survive_refresh(service: MemoryService) -> None:
    await _fill(service, CHINESE)
    profile = await profiles.get_profile(service.store)
    synthesized = profile.high_value_signals[0].text
    await profiles.edit_profile(service.store, "domains", "add", "日本不动产投资")
    await profiles.edit_profile(service.store, "high_value_signals", "remove", synthesized)
    await profiles.edit_profile(service.store, "summary", "set", "后端工程师，也在做不动产投资")
    for _ in range(2):
        refreshed = await profiles.get_profile(service.store, refresh=True)
        assert refreshed.summary.text == "后端工程师，也在做不动产投资" and refreshed.summary.manual
        assert any(d.text == "日本不动产投资" and d.manual for d in refreshed.domains)
        assert synthesized not in [s.text for s in refreshed.high_value_signals]
    with pytest.raises(InvalidInput, match="use action set"):
        await profiles.edit_profile(service.store, "summary", "add", "x")
    with pytest.raises(InvalidInput, match="field must be one of"):
        await profiles.edit_profile(service.store, "hobbies", "add", "x")


def _model_profile(ids: Sequence[str]) -> dict[str, Any]:
    return {
        "summary": {"text": "A backend engineer in Hangzhou who likes simple tools.", "sources": [ids[0], "mem_999"]},
        "domains": [{"text": "Backend development", "sources": [ids[0]]}],
        "high_value_signals": [{"text": "Deployment decisions", "sources": [ids[1]]}],
        "low_value_signals": [{"text": "Small talk", "sources": []}],
        "language_preferences": {"text": "Chinese with English terms", "sources": [ids[0]]},
        "active_projects": [{"text": "Blog migration to Hugo", "sources": [ids[2]]}],
    }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_client_s_model_synthesises_it(config: Config, segmenter: Segmenter, mode: str) -> None:
    seen: list[CreateMessageRequestParams] = []
    ids: list[str] = []

    async def sample(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        seen.append(params)
        text = "Here it is:\n" + json.dumps(_model_profile(ids))
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="m")

    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=sample) as client:
        for content, category, importance in CHINESE:
            r = await client.call_tool("remember", {"content": content, "category": category, "importance": importance})
            assert r.structured_content is not None
            ids.append(r.structured_content["id"])
        result = await client.call_tool("refresh_profile", {})
        assert result.structured_content is not None
        profile = result.structured_content
        assert profile["method"] == "model" and profile["summary"]["sources"] == [ids[0]]  # mem_999 dropped
        assert f"[{ids[0]}] (identity)" in seen[0].messages[0].content.text  # type: ignore[union-attr]
        read = json.loads((await client.read_resource("memory://profile")).contents[0].text)  # type: ignore[union-attr]
        assert read["domains"][0]["text"] == "Backend development"
        # The extractor is calibrated with it.
        prompt = await client.get_prompt("extract_memories", {"user_message": "hi", "assistant_message": "hello"})
        assert "A backend engineer in Hangzhou who likes simple tools." in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_an_unusable_model_answer_falls_back_and_a_given_profile_is_stored(
    config: Config, segmenter: Segmenter
) -> None:
    async def junk(_: Any, __: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="{nope"), model="m")

    async with Client(build_server(config, segmenter), sampling_callback=junk) as client:
        ids = []
        for content, category, importance in ENGLISH:
            r = await client.call_tool("remember", {"content": content, "category": category, "importance": importance})
            ids.append(r.structured_content["id"])  # type: ignore[index]
        fallback = await client.call_tool("refresh_profile", {})
        assert fallback.structured_content is not None and fallback.structured_content["method"] == "deterministic"
        given = await client.call_tool("refresh_profile", {"profile": _model_profile(ids)})
        assert given.structured_content is not None and given.structured_content["method"] == "model"
        bad = await client.call_tool("refresh_profile", {"profile": {"summary": "just text"}})
        assert bad.is_error and bad.content[0].text == (  # type: ignore[union-attr]
            "Error executing tool refresh_profile: the profile is not in the synthesize_profile shape: "
            '`summary` must be an object (got "just text"); `domains` is required; `high_value_signals` is '
            "required; `low_value_signals` is required; `language_preferences` is required; and 1 more"
        )
        edited = await client.call_tool("edit_profile", {"field": "domains", "action": "add", "text": "MLOps"})
        assert edited.structured_content is not None
        assert {"text": "MLOps", "sources": [], "manual": True} in edited.structured_content["domains"]


async def test_forget_leaves_nothing_behind_in_the_profile(service: MemoryService) -> None:
    """SPEC 5: a forgotten memory's words survive nowhere: not in the profile, not in the profile
    memory (nor its history), not in what recall finds."""
    tokyo = await service.remember(content="我住在东京，是不动产投资者", category="identity", importance=0.9)
    await profiles.get_profile(service.store, refresh=True)
    await service.remember(content="我是后端工程师，主要写 Go", category="identity", importance=0.8)
    await profiles.get_profile(service.store, refresh=True)
    await service.forget([tokyo.id])
    peeked = await profiles.peek(service.store)
    assert peeked is not None and "东京" not in peeked.model_dump_json()
    assert all("东京" not in h.content for h in (await service.recall(query="东京")).hits)
    for table, column in (("memories", "content"), ("memory_history", "content"), ("profile", "data")):
        assert not rawdb.rows(service.config, f"SELECT 1 FROM {table} WHERE CAST({column} AS TEXT) LIKE '%东京%'"), (
            table
        )
    again = await profiles.get_profile(service.store)
    assert "东京" not in again.model_dump_json() and "后端工程师" in again.summary.text
