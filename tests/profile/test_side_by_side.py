"""The rule-based profile judged side by side with a model-written one on the same memories
(tests/profile/fixture.py), both made through the MCP surface: the rule-based one must name the
identity facts, the main domains (never a function word or a memory-kind word) and the
preferences, each citing the memories it came from."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.stopwords import STOPWORDS

from ..calls import call
from .fixture import MEMORIES, NOT_DOMAINS, model_answer

pytestmark = pytest.mark.anyio


def _show(profile: dict[str, Any]) -> str:
    lines = [
        f"  method: {profile['method']}",
        f"  summary: {profile['summary']['text']}  {profile['summary']['sources']}",
    ]
    for field in ("domains", "high_value_signals", "low_value_signals", "active_projects"):
        lines.append(f"  {field}:")
        lines += [f"    - {i['text']}  {i['sources']}" for i in profile[field]]
    lines.append(f"  language: {profile['language_preferences']['text']}")
    return "\n".join(lines)


async def test_rules_and_model_side_by_side(config: Config, segmenter: Segmenter) -> None:
    ids: dict[str, str] = {}
    async with Client(build_server(config, segmenter)) as client:  # cannot sample: rules
        for content, category, importance, key, tags in MEMORIES:
            args: dict[str, Any] = {"content": content, "category": category, "importance": importance, "tags": tags}
            ids[content] = (await call(client, "remember", **(args | ({"key": key} if key else {}))))["id"]
        rules = await call(client, "refresh_profile")

    async def model(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        text = json.dumps(model_answer(ids), ensure_ascii=False)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="m")

    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=model) as client:
        written = await call(client, "refresh_profile")
    shown = f"\nrule-based profile:\n{_show(rules)}\n\nmodel-written profile:\n{_show(written)}\n"
    by_id = {i: c for c, i in ids.items()}

    assert rules["method"] == "deterministic" and written["method"] == "model", shown
    summary = rules["summary"]
    # The identity line: name, job, employer, city from the keyed facts, each cited.
    for fact in ("陈思远", "东京", "Rakuten", "后端工程师"):
        assert fact in summary["text"], f"{fact!r} missing from the summary" + shown
        assert any(fact in by_id[s] for s in summary["sources"]), f"{fact!r} not cited" + shown
    # The preferences, named and cited.
    assert "简单的部署方案" in summary["text"] and "concise answers" in summary["text"], shown
    assert ids["I prefer concise answers with code examples"] in summary["sources"], shown
    # The main domains: what the memories are about, never a function word or a kind of memory.
    domains = [d["text"] for d in rules["domains"]]
    assert {"Go", "不动产投资"} <= set(domains), shown
    for domain in domains:
        assert domain.lower() not in NOT_DOMAINS and domain.lower() not in STOPWORDS, f"{domain!r}" + shown
        assert domain not in ("偏好", "待办", "日期"), shown
    for item in rules["domains"]:
        assert item["sources"] and all(s in by_id for s in item["sources"]), shown
    # The kinds of memory worth most to this user, each with its strongest example, cited.
    kinds = " ".join(i["text"] for i in rules["high_value_signals"])
    assert "身份背景" in kinds and "偏好与厌恶" in kinds, shown
    assert all(i["sources"] for i in rules["high_value_signals"]), shown
    projects = {s for p in rules["active_projects"] for s in p["sources"]}
    assert ids["Migrating the billing service from Python 2 to Go"] in projects, shown
    assert rules["language_preferences"]["text"] == "中文为主，技术词汇中英混用", shown
    # The model's profile, stored as it answered, its citations kept.
    assert written["domains"][0]["text"] == "后端开发（Go、Python、PostgreSQL）", shown
    assert set(written["summary"]["sources"]) <= set(by_id), shown
