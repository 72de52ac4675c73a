"""Secrets in every field, through the real MCP tools: for each field a client can have stored or
logged, a secret written each of seven ways (plain, spaced out, zero-width characters inside,
full-width, look-alike letters, base64, hex) in Chinese and English, and then nothing of it
anywhere in the database (every row of every table, read with SQL beside the server).

Names (a key, a tag, a session id, an apply_changes key, a variable's name, a client's name, a JSON
import's client, a memory.jsonl entity's name) are refused whole, with an error naming the field;
free text (content, a topic, a variable's value, profile texts, observations, the extraction log's
previews) keeps everything but the secret. The bulk of the corpus goes through the same screening
in tests/text/test_screening_corpus.py; this is one secret per field and way of writing."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from mcp import Client
from mcp_types import Implementation

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..screening_corpus import OBFUSCATIONS, Secret, obfuscated, resident_id

pytestmark = pytest.mark.anyio

OPENAI = "sk-proj-" + "FAKEa1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB = "ghp_" + "FAKE0123456789abcdefABCDEFGHIJKLMNOP"
AWS = "AKIA" + "FAKE2345ABCDEFGH"
ID = resident_id(random.Random(7))
# Free text: an English passphrase (stored before: no digit, no symbol) and a Chinese resident ID
# number (stored before, on purpose and undocumented).
FREE = {
    "en": Secret("passphrase", "my password is correcthorsebattery", "correcthorsebattery", "Note for later: {}."),
    "zh": Secret("national ID", f"我的身份证号是 {ID}", ID, "帮我记一下，{}，办签证要用。"),
}
# Names: keys that fit each field's length limit written any of the seven ways.
NAMES = {
    "key": Secret("OpenAI key", OPENAI, OPENAI, "{}"),
    "session": Secret("GitHub token", GITHUB, GITHUB, "{}"),
    "tag": Secret("AWS access key", AWS, AWS, "{}"),
}
FILLER = "用户喜欢在周末去西湖边跑步 likes running by the lake"
WAYS = list(OBFUSCATIONS)


def stored(config: Config) -> str:
    """Every value of every row of every table, as one text."""
    tables = [r[0] for r in rawdb.rows(config, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return json.dumps({t: rawdb.rows(config, f'SELECT * FROM "{t}"') for t in tables}, ensure_ascii=False, default=str)


def contents(config: Config) -> list[str]:
    return [r[0] for r in rawdb.rows(config, "SELECT content FROM memories ORDER BY seq")]


def leaks(marker: str, text: str) -> bool:
    n = min(len(marker), 8)
    return any(marker[i : i + n] in text for i in range(len(marker) - n + 1))


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def refused(client: Client, tool: str, args: dict[str, Any], field: str) -> None:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} stored a secret in {field}: {result.structured_content}"
    message = result.content[0].text  # type: ignore[union-attr]
    assert field in message and "holds a secret" in message, message


async def answered(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any] | str:
    """The tool's answer: its structured result, or its error message when it refused."""
    result = await client.call_tool(tool, args)
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert "Withheld" in text or "withheld" in text or "refused" in text, text
        return text
    assert result.structured_content is not None
    return result.structured_content


def _jsonl(name: str, observation: str) -> str:
    return json.dumps({"type": "entity", "name": name, "entityType": "person", "observations": [observation]})


def _json_export(
    client_name: str | None = None, variables: dict[str, Any] | None = None, topic: str | None = None
) -> str:
    stamp = "2026-01-01T00:00:00+00:00"
    memory = {
        "id": "mem_1", "content": FILLER, "key": None, "category": "fact", "tier": "core", "importance": 0.5,
        "confidence": 0.8, "source": "user", "tags": [], "session_id": None, "client": client_name,
        "created_at": stamp, "updated_at": stamp, "last_accessed": stamp, "access_count": 0, "history": [],
    }  # fmt: skip
    session = {
        "session_id": "imported-1", "current_topic": topic, "context_variables": variables or {}, "turn_count": 1,
        "last_emotion": None, "created_at": stamp, "updated_at": stamp,
    }  # fmt: skip
    doc = {"format": "mcp-memory-server", "version": 1, "memories": [memory], "sessions": [session]}
    return json.dumps(doc, ensure_ascii=False)


Call = Callable[[Client, str], Awaitable[Any]]
# A name field: the call refused, naming the field.
NAME_CALLS: dict[str, tuple[str, Call]] = {
    "key": ("key", lambda c, u: refused(c, "remember", {"content": FILLER, "key": u}, "key")),
    "tags": ("tag", lambda c, u: refused(c, "remember", {"content": FILLER, "tags": ["旅行", u]}, "tag")),
    "session_id": ("session", lambda c, u: refused(c, "remember", {"content": FILLER, "session_id": u}, "session_id")),
    "apply_changes key": (
        "key",
        lambda c, u: refused(
            c,
            "apply_changes",
            {
                "ops": [
                    {
                        "key": u,
                        "action": "add",
                        "category": "fact",
                        "payload": FILLER,
                        "importance": 5,
                        "source": "user",
                    }
                ]
            },
            "op 1 key",
        ),
    ),
    "update_session session_id": (
        "session",
        lambda c, u: refused(c, "update_session", {"session_id": u, "topic": "旅行"}, "session_id"),
    ),
    "update_session variable name": (
        "tag",
        lambda c, u: refused(c, "update_session", {"session_id": "s1", "variables": {u: "x"}}, "variable name"),
    ),
    "JSON import client": (
        "key",
        lambda c, u: refused(c, "import_memories", {"data": _json_export(u), "format": "json"}, "client"),
    ),
}
# A free-text field: the call answered (or refused when nothing but the secret was left).
FREE_CALLS: dict[str, Call] = {
    "content": lambda c, t: answered(c, "remember", {"content": t}),
    "update_session topic": lambda c, t: answered(c, "update_session", {"session_id": "s1", "topic": t[:200]}),
    "update_session variable value": lambda c, t: answered(
        c, "update_session", {"session_id": "s1", "variables": {"note": t}}
    ),
    "refresh_profile text": lambda c, t: answered(
        c,
        "refresh_profile",
        {
            "profile": {
                "summary": {"text": t, "sources": []},
                "language_preferences": {"text": "中文和英文 Chinese and English", "sources": []},
                "domains": [{"text": t, "sources": []}],
                "high_value_signals": [],
                "low_value_signals": [],
                "active_projects": [],
            }
        },
    ),
    "edit_profile text": lambda c, t: answered(
        c, "edit_profile", {"field": "domains", "action": "add", "text": t[:500]}
    ),
    "memory.jsonl observation": lambda c, t: answered(
        c, "import_memories", {"data": _jsonl("Alice", t), "format": "memory-jsonl"}
    ),
    "JSON import session variables": lambda c, t: answered(
        c, "import_memories", {"data": _json_export(variables={"note": t}), "format": "json"}
    ),
    "JSON import session topic": lambda c, t: answered(
        c, "import_memories", {"data": _json_export(topic=t[:200]), "format": "json"}
    ),
}  # fmt: skip


# Each test takes every way of writing in turn on one server: a server per way cost the suite
# 0.2 s of set-up each, 181 times.
@pytest.mark.parametrize("field", list(NAME_CALLS))
async def test_a_name_holding_a_secret_is_refused_and_nothing_is_stored(
    client: Client, config: Config, field: str
) -> None:
    which, call = NAME_CALLS[field]
    for how in WAYS:
        unit, marker = obfuscated(NAMES[which], how)
        await call(client, unit)
        assert not leaks(marker, stored(config)), how


@pytest.mark.parametrize("lang", list(FREE))
@pytest.mark.parametrize("field", list(FREE_CALLS))
async def test_free_text_keeps_everything_but_the_secret(client: Client, config: Config, field: str, lang: str) -> None:
    secret = FREE[lang]
    for how in WAYS:
        unit, marker = obfuscated(secret, how)
        answer = await FREE_CALLS[field](client, secret.text(unit))
        assert not leaks(marker, json.dumps(answer, ensure_ascii=False)), how
        assert not leaks(marker, stored(config)), how


async def test_a_memory_jsonl_entity_named_by_a_secret_is_left_out(client: Client, config: Config) -> None:
    for how in WAYS:
        unit, marker = obfuscated(NAMES["key"], how)
        data = "\n".join([_jsonl(unit, "works at the lab 在实验室工作"), _jsonl("Bob", "喜欢喝茶 likes tea")])
        answer = await answered(client, "import_memories", {"data": data, "format": "memory-jsonl"})
        assert isinstance(answer, dict) and len(answer["refused"]) == 1, answer
        assert not leaks(marker, json.dumps(answer, ensure_ascii=False))
        assert not leaks(marker, stored(config))
    assert "喜欢喝茶" in stored(config)


async def test_a_client_named_by_a_secret_stores_nothing(config: Config, segmenter: Segmenter) -> None:
    info = Implementation(name=f"agent {GITHUB}", version="1.0")
    async with Client(build_server(config, segmenter), client_info=info) as client:
        await refused(client, "remember", {"content": FILLER}, "client")
        result = await client.call_tool("extract", {"user_message": "记住：我喜欢喝乌龙茶。Remember I like oolong."})
        assert result.is_error
    assert GITHUB not in stored(config)


@pytest.mark.parametrize("lang", list(FREE))
async def test_the_extraction_log_keeps_no_secret(client: Client, config: Config, lang: str) -> None:
    """The secret sits across the preview's cut (300 characters): screened before the cut, no part of
    it is kept, in the log resource as in the database."""
    secret = FREE[lang]
    lead = ("我喜欢喝乌龙茶，周末常去爬山。" if lang == "zh" else "I like oolong tea and hiking. ") * 20
    for how in WAYS:
        unit, marker = obfuscated(secret, how)
        sentence = secret.text(unit)
        before = sentence.index(marker[:8]) + 1  # the secret starts at character 280, and a cut at 300 splits it
        message = lead[: 280 - before] + " " + sentence + " 记住这一点 remember this."
        assert message.index(marker[:8]) == 280
        result = await client.call_tool("extract", {"user_message": message, "session_id": f"chat-{how}"})
        assert not result.is_error, result.content
        log = (await client.read_resource("memory://extraction-log")).contents[0].text  # type: ignore[union-attr]
        assert "[withheld:" in log
        assert not leaks(marker, log), how
        assert not leaks(marker, stored(config)), how


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("mask", "我的身份证号是 [withheld: national ID]，手机号 [withheld: phone number]，办签证要用"),
        ("refuse", None),
        ("keep", f"我的身份证号是 {ID}，手机号 138 0013 8000，办签证要用"),
    ],
)
async def test_personal_numbers_follow_the_setting(
    tmp_path: Any, cache_dir: Any, segmenter: Segmenter, mode: str, expected: str | None
) -> None:
    config = Config.from_env({"MCP_MEMORY_PERSONAL_NUMBERS": mode}, db_path=tmp_path / "m.db", cache_dir=cache_dir)
    text = f"我的身份证号是 {ID}，手机号 138 0013 8000，办签证要用"
    async with Client(build_server(config, segmenter)) as client:
        result = await client.call_tool("remember", {"content": text})
        english = await client.call_tool(
            "remember", {"content": "My SSN is 123-45-6789 and my phone is +1 415 555 2671."}
        )
    if expected is None:
        assert result.is_error and english.is_error
        assert "MCP_MEMORY_PERSONAL_NUMBERS=refuse" in result.content[0].text  # type: ignore[union-attr]
        assert ID not in stored(config) and "6789" not in stored(config)
        return
    assert not result.is_error and not english.is_error
    first, content = contents(config)
    assert first == expected
    if mode == "mask":
        assert content == "My SSN is [withheld: national ID] and my phone is [withheld: phone number]."
        assert ID not in stored(config)
    else:
        assert "123-45-6789" in content and "+1 415 555 2671" in content


async def test_ordinary_numbers_and_talk_are_stored_as_written(client: Client, config: Config) -> None:
    texts = [
        "订单号 110105194912310021 的快递还没到，客服电话 400-820-8820。",
        "我忘记密码了，明天去营业厅重置；密码至少 12 位。",
        "My password is weak, I should change it. Commit 3f2a9c1 fixed the login page.",
        "Request id 550e8400-e29b-41d4-a716-446655440000 timed out; v2.3.1 ships on 2026-03-01.",
    ]
    for text in texts:
        result = await client.call_tool(
            "remember", {"content": text, "tags": ["日常", "v2.3.1"], "key": f"note.{len(text)}"}
        )
        assert not result.is_error, result.content
        assert result.structured_content is not None and result.structured_content["withheld"] == []
    assert contents(config) == texts
