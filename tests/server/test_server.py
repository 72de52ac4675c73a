"""The MCP surface through the SDK's in-memory client: schemas, structured output, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call
from ..surface import PROMPTS, TOOLS

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool}({args}) should have failed"
    assert result.structured_content is None
    text = result.content[0]
    assert text.type == "text"
    return text.text


async def test_tools_are_described_bounded_and_annotated(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) < 400 and "\n" not in tool.description
        assert tool.output_schema is not None
        assert tool.annotations is not None
        for name, prop in tool.input_schema["properties"].items():
            assert "description" in prop, f"{tool.name}.{name} has no description"
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["list"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["remember"].annotations.destructive_hint is False
    recall_args = tools["recall"].input_schema["properties"]
    assert (recall_args["limit"]["minimum"], recall_args["limit"]["maximum"], recall_args["limit"]["default"]) == (
        1,
        50,
        5,
    )
    list_args = tools["list"].input_schema["properties"]
    assert (list_args["limit"]["minimum"], list_args["limit"]["maximum"], list_args["limit"]["default"]) == (1, 200, 20)
    assert tools["remember"].input_schema["properties"]["content"]["maxLength"] == 2000
    assert set(tools["recall"].output_schema["properties"]) == {"keywords", "hits", "note"}
    assert set(tools["forget"].output_schema["properties"]) == {"deleted", "not_found"}
    assert set(tools["list"].output_schema["properties"]) == {"total", "items", "next_cursor"}


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def test_tools_list_fits_a_model_s_context(client: Client) -> None:
    """Every model reads the whole tools/list at every start: 16.6 KB at most, counted as compact
    JSON of the result the client receives (its _meta and every field included). It was 16 KB
    until the five write tools took a request_id (a bound and one short sentence each), 16.5 KB
    until apply_changes' del took `asked` (the user's own request)."""
    result = await client.list_tools()
    total = _size(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    sizes = {t.name: _size(t.model_dump(mode="json", by_alias=True, exclude_none=True)) for t in result.tools}
    assert total <= 16_600, f"tools/list is {total:,} bytes: {sizes}"
    assert max(sizes.values()) <= 2_000, sizes


async def test_schemas_carry_shape_and_bounds_not_prose(client: Client) -> None:
    """Input schemas: no generated titles, optional arguments as their type alone, bounds kept.
    Output schemas: types and enums only (no descriptions, titles or required lists), inline but
    for the profile's item, which repeats six times."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        assert tool.output_schema is not None
        inputs, outputs = json.dumps(tool.input_schema), json.dumps(tool.output_schema)
        assert '"title"' not in inputs and "anyOf" not in inputs and "$ref" not in inputs, tool.name
        assert '"description"' not in outputs and '"title"' not in outputs and '"required"' not in outputs
        assert "anyOf" not in outputs, tool.name
        if tool.name not in ("refresh_profile", "edit_profile"):
            assert "$ref" not in outputs and "$defs" not in outputs, tool.name
    remember = tools["remember"].input_schema["properties"]
    assert remember["key"] == {"type": "string", "maxLength": 200, "description": "Stable slot such as user.city."}
    assert remember["tags"]["maxItems"] == 20 and remember["tags"]["items"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 40,
    }
    emotion = tools["update_session"].input_schema["properties"]["emotion"]
    assert emotion["additionalProperties"] is False and emotion["required"] == ["primary", "confidence"]
    assert emotion["properties"]["confidence"]["maximum"] == 1
    recall = tools["recall"].output_schema
    assert recall is not None
    hit = recall["properties"]["hits"]["items"]
    assert set(hit["properties"]) == {"id", "content", "key", "category", "tags", "score", "updated_at"}
    assert hit["properties"]["key"]["type"] == ["string", "null"]
    assert hit["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert hit["properties"]["updated_at"] == {"type": "string", "format": "date-time"}
    assert set(tools["remember"].output_schema["properties"]) == {"id", "action", "detail", "withheld"}  # type: ignore[index]
    profile = tools["edit_profile"].output_schema
    assert profile is not None and profile["properties"]["domains"]["items"] == {"$ref": "#/$defs/ProfileItem"}
    assert set(profile["$defs"]["ProfileItem"]["properties"]) == {"text", "sources", "manual"}


async def test_remember_recall_forget_list_round_trip(client: Client) -> None:
    stored = await call(client, "remember", content="我每天早上喝一杯拿铁咖啡", category="preference", tags=["饮品"])
    assert stored == {"id": stored["id"], "action": "created", "detail": f"Stored as {stored['id']}.", "withheld": []}
    whole = json.loads((await client.read_resource(f"memory://memories/{stored['id']}")).contents[0].text)  # type: ignore[union-attr]
    assert whole["client"] == "mcp" and whole["tags"] == ["饮品"]  # every field is in the resource
    mixed = await call(client, "remember", content="我喜欢用Python写代码", category="preference")
    english = await call(client, "remember", content="I keep my dotfiles in a private GitHub repo", category="fact")

    found = await call(client, "recall", query="我喝什么咖啡")
    assert found["keywords"] == ["咖啡"]
    hit = found["hits"][0]
    assert hit["id"] == stored["id"] and hit["content"] == "我每天早上喝一杯拿铁咖啡" and hit["tags"] == ["饮品"]
    assert set(hit) == {"id", "content", "key", "category", "tags", "score", "updated_at"} and 0 < hit["score"] <= 1
    assert (await call(client, "recall", query="python"))["hits"][0]["id"] == mixed["id"]
    assert (await call(client, "recall", query="dotfiles github"))["hits"][0]["id"] == english["id"]

    listed = await call(client, "list", limit=2)
    assert listed["total"] == 3 and len(listed["items"]) == 2 and listed["next_cursor"]
    assert set(listed["items"][0]) == {
        *("id", "content", "key", "category", "tier", "importance", "tags", "created_at", "updated_at")
    }
    rest = await call(client, "list", limit=2, cursor=listed["next_cursor"])
    assert len(rest["items"]) == 1 and rest["next_cursor"] is None

    gone = await call(client, "forget", ids=[stored["id"], "mem_404"])
    assert gone == {"deleted": [stored["id"]], "not_found": ["mem_404"]}
    assert (await call(client, "recall", query="咖啡"))["hits"] == []


async def test_an_id_names_exactly_one_memory(client: Client) -> None:
    """`mem_001` is not `mem_1`: forgetting, reading or restoring an id in another spelling finds
    nothing and changes nothing (it once deleted mem_1 and answered deleted: ["mem_001"])."""
    tea = await call(client, "remember", content="我每天下午喝一杯乌龙茶 (oolong)", category="preference")
    assert tea["id"] == "mem_1"
    for other in ("mem_001", "mem_01", "mem_+1", "MEM_1", "mem_1 x", "mem_１"):
        assert await call(client, "forget", ids=[other]) == {"deleted": [], "not_found": [other]}
        with pytest.raises(MCPError, match=r"no memory has the id|not a memory id"):
            await client.read_resource(f"memory://memories/{other.replace(' ', '%20')}")
    assert [h["id"] for h in (await call(client, "recall", query="乌龙茶"))["hits"]] == ["mem_1"]
    assert await call(client, "forget", ids=[" mem_1 "]) == {"deleted": ["mem_1"], "not_found": []}


async def test_results_read_as_compact_json(client: Client) -> None:
    """A tool's text content is its structured result as JSON without indentation, Chinese as
    itself: what a model reads, a third shorter than the SDK's indented rendering."""
    for content in ("用户住在杭州，喜欢喝咖啡", "The user drinks a latte every morning", "用户用 Neovim 写 Python"):
        await call(client, "remember", content=content, tags=["咖啡"])
    for tool, args in (
        ("recall", {"query": "咖啡 latte", "limit": 5}),
        ("list", {}),
        ("remember", {"content": "用户的猫叫小白"}),
        ("update_session", {"session_id": "s1", "topic": "咖啡"}),
        ("cleanup", {}),
    ):
        result = await client.call_tool(tool, args)
        assert not result.is_error and result.structured_content is not None
        (block,) = result.content
        assert block.type == "text"
        assert block.text == json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
        assert "\n" not in block.text and "\\u" not in block.text  # one line, Chinese unescaped


async def test_errors_are_tool_errors_not_success_text(client: Client) -> None:
    assert "2000" in await error(client, "remember", content="长" * 2001)
    assert "category" in await error(client, "remember", content="x", category="Not Valid!")
    assert "source" in await error(client, "remember", content="x", source="nobody")
    assert "cursor" in await error(client, "list", cursor="not-a-cursor")
    assert "ids" in await error(client, "forget", ids=[])
    assert "limit" in await error(client, "recall", query="x", limit=51)
    await error(client, "recall", query="")
    await error(client, "remember")
    await error(client, "recall", query=123)
    assert (await call(client, "list"))["total"] == 0  # nothing was half-written


async def test_invisible_only_content_and_keys_are_refused(client: Client) -> None:
    """Zero-width spaces, joiners, a soft hyphen, bidi marks, a byte-order mark and ideographic
    spaces show nothing: as content or as a key they are refused, and nothing is stored. Inside
    visible text they are kept as written (an emoji's joiner, a Chinese sentence's spaces)."""
    marks = ("\u200b", "\u200b\u200c\u200d", "\u00ad", "\u202e\u2066", "\ufeff", "\u2060", " \u200b\u3000")
    for invisible in (*marks, "\u3000\u00a0 "):
        assert "invisible" in await error(client, "remember", content=invisible)
    for invisible in marks:  # (a key of spaces alone is no key, as an empty one)
        assert "invisible" in await error(client, "remember", content="用户住在杭州 lives in Hangzhou", key=invisible)
    assert (await call(client, "list"))["total"] == 0
    family = "👩\u200d👩\u200d👧 我们一家三口\u3000周末去爬山"
    kept = await call(client, "remember", content=family, key="family.weekend")
    assert (await call(client, "list"))["items"][0]["content"] == family and kept["action"] == "created"


@pytest.mark.parametrize(
    "query", ['"', "*", "AND", "OR NOT", "NEAR(", "^", ":", "(", "😀", "a\x00b", "x" * 2000, "select * from memories;"]
)
async def test_hostile_queries_answer_cleanly(client: Client, query: str) -> None:
    await call(client, "remember", content="NEAR and OR not (python) ^ * : 咖啡")
    result = await client.call_tool("recall", {"query": query})
    assert not result.is_error
    long_result = await client.call_tool("recall", {"query": "x" * 10_000})
    assert long_result.is_error and "2000" in long_result.content[0].text  # type: ignore[union-attr]


async def test_resources(client: Client) -> None:
    first = await call(client, "remember", content="The user lives in Berlin", key="user.city", category="identity")
    await call(client, "remember", content="The user lives in 上海", key="user.city", category="identity")
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"memory://memories/{id}", "memory://categories/{category}", "memory://sessions/{session_id}"}
    assert {str(r.uri) for r in (await client.list_resources()).resources} == {
        "memory://stats",
        "memory://extraction-log",
        "memory://MEMORY.md",
        "memory://profile",
    }

    detail = json.loads((await client.read_resource(f"memory://memories/{first['id']}")).contents[0].text)  # type: ignore[union-attr]
    assert detail["content"] == "The user lives in 上海"
    assert [h["content"] for h in detail["history"]] == ["The user lives in Berlin"]
    category = json.loads((await client.read_resource("memory://categories/identity")).contents[0].text)  # type: ignore[union-attr]
    assert category["total"] == 1
    stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
    assert stats["total"] == 1 and stats["by_category"] == {"identity": 1}

    with pytest.raises(MCPError, match="no memory has the id"):
        await client.read_resource("memory://memories/mem_999")
    with pytest.raises(MCPError, match="category"):
        await client.read_resource("memory://categories/NOT%20VALID!")


async def test_extract_memories_prompt(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == PROMPTS
    assert {a.name for a in prompts["extract_memories"].arguments or []} == {"user_message", "assistant_message"}
    result = await client.get_prompt(
        "extract_memories", {"user_message": "我搬到杭州了", "assistant_message": "好的，记住了。"}
    )
    text = result.messages[0].content.text  # type: ignore[union-attr]
    assert "我搬到杭州了" in text and '"memories"' in text and "small talk" in text
    for category in ("identity", "preference", "project_state"):
        assert category in text


async def test_instructions_say_when_to_recall_and_remember(
    client: Client, config: Config, segmenter: Segmenter
) -> None:
    instructions = build_server(config, segmenter).instructions or ""
    assert "recall" in instructions and "Remember without being asked" in instructions


async def test_apply_changes_with_no_operations_applies_nothing(client: Client, config: Config) -> None:
    """`[]` is the detect prompt's answer when nothing changed (seed 000): applied as nothing, not an error."""
    home = "我住在杭州 I live in Hangzhou"
    stored = await call(client, "remember", content=home, key="user.city", category="identity")
    answer = await call(client, "apply_changes", ops=[])
    assert answer["applied"] == [] and answer["detail"] == "Applied: no operations."
    listed = await call(client, "list")
    assert [(m["id"], m["content"]) for m in listed["items"]] == [(stored["id"], home)]
