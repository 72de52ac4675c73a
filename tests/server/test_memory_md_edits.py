"""MEMORY.md through the MCP surface: the consolidation hint near the limit, and a rendering edited
and imported back as edits (a changed line updates its memory, a ✅ line marks its todo done, a
removed line forgets, a new line adds), in Chinese and English."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.store.rows import utcnow
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer import render_store
from tests.calls import call

pytestmark = pytest.mark.anyio
# The edits on both databases (MEMORY.md's lines carry their memory's number from each); the
# rendering-only and single-line tests on SQLite.
BACKENDS = ("sqlite", "postgresql")

# (event edited, event removed, todo done, preference left alone, line added, the edit)
TEXTS = {
    "zh": ("主人说这周五要面试", "主人上周去了杭州出差", "提醒主人周五准备面试", "主人通常晚上 10 点后活跃",
           "主人开始学日语了", "主人说下周五要面试"),
    "en": ("The interview is on Friday", "Went to Berlin for work last week", "Remind them to prepare the interview",
           "Usually active after 10 pm", "Started learning Japanese", "The interview moved to next Friday"),
}  # fmt: skip
SEPARATOR = {"zh": "：", "en": ": "}


@asynccontextmanager
async def _server(config: Config, segmenter: Segmenter, **changes: Any) -> AsyncIterator[Client]:
    async with Client(build_server(config.with_changes(**changes) if changes else config, segmenter)) as client:
        yield client


async def _markdown(client: Client) -> str:
    return (await client.read_resource("memory://MEMORY.md")).contents[0].text  # type: ignore[union-attr]


async def _memory(client: Client, memory_id: str) -> dict[str, Any]:
    text = (await client.read_resource(f"memory://memories/{memory_id}")).contents[0].text  # type: ignore[union-attr]
    return json.loads(text)  # type: ignore[no-any-return]


async def _fill(client: Client, lang: str) -> list[str]:
    event, gone, todo, habit, _, _ = TEXTS[lang]
    categories = (("event", event), ("event", gone), ("todo", todo), ("preference", habit))
    return [(await call(client, "remember", content=c, category=k))["id"] for k, c in categories]


def _line(text: str, memory_id: str) -> str:
    """The whole line of a rendering that shows `memory_id`."""
    found = re.search(rf"^- .* <!-- {memory_id} -->$", text, re.MULTILINE)
    assert found is not None, (memory_id, text)
    return found[0]


# ---- the consolidation hint -----------------------------------------------------------------


@pytest.mark.sqlite_only
@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_the_hint_shows_from_four_fifths_of_the_limit(config: Config, segmenter: Segmenter, lang: str) -> None:
    async with _server(config, segmenter) as client:
        await _fill(client, lang)
        plain = await _markdown(client)
    assert "💡" not in plain
    counted = len(plain[: plain.index("<!-- shown: ")])  # what the limit counts
    hint = "💡 记忆已用" if lang == "zh" else "💡 Memory is at"
    for share, limit in ((79, -(-counted * 100 // 79)), (81, counted * 100 // 81), (92, counted * 100 // 92)):
        assert (counted * 100 // limit >= 80) is (share >= 80)
        if share == 92:  # through the resource
            async with _server(config, segmenter, markdown_limit=limit) as client:
                text = await _markdown(client)
        else:  # the same rendering, without starting a server
            async with Store(config.with_changes(markdown_limit=limit), segmenter) as store:
                text = await render_store(store)
        if share < 80:
            assert text == plain, share
            continue
        # First thing after the title, in the rendering's language, saying what to do; not counted:
        # every memory is still shown and nothing is cut.
        title, blank, advice, rest = text.split("\n", 3)
        assert (title, blank) == (plain.split("\n", 1)[0], "") and advice.startswith(f"> {hint}")
        assert f"{counted:,}" in advice and f"{limit:,}" in advice and f"{share}%" in advice
        assert ("已完成（✅）的待办" if lang == "zh" else "done (✅) todos") in advice
        assert "mode=edits" in advice and "forget" in advice
        assert f"{title}\n{rest}" == plain
        assert "省略" not in text and "omitted" not in text


# ---- edits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_an_edited_rendering_comes_back_as_exactly_its_edits(
    config: Config, segmenter: Segmenter, lang: str
) -> None:
    event, gone, todo, _, added, edited = TEXTS[lang]
    async with _server(config, segmenter) as client:
        ids = await _fill(client, lang)
        before = {i: await _memory(client, i) for i in ids}
        rendering = await _markdown(client)
        text = rendering.replace(_line(rendering, ids[0]), _line(rendering, ids[0]).replace(event, edited))
        text = text.replace(_line(rendering, ids[1]) + "\n", "")
        text = text.replace(_line(rendering, ids[2]), _line(rendering, ids[2]).replace(todo, f"✅ {todo}"))
        text = text.replace(_line(rendering, ids[3]), f"{_line(rendering, ids[3])}\n- {added}")

        # An old import (mode add, the default) of the same file only adds its new lines.
        old = await call(client, "import_memories", data=text, format="markdown")
        # The edited line and the new one: the ✅ line reads as its todo's text, already present.
        assert (old["created"], old["updated"], old["forgotten"], old["present"]) == (2, 0, 0, 2)
        await call(client, "forget", ids=old["ids"])

        result = await call(client, "import_memories", data=text, mode="edits")
        assert (result["format"], result["items"], result["present"]) == ("markdown", 4, 1)
        assert (result["created"], result["updated"], result["forgotten"]) == (1, 2, 1)
        new_id = result["ids"][0]
        assert result["ids"] == [new_id, ids[0], ids[2]]
        assert f"forgotten: {ids[1]}" in result["detail"] and f"marked done: {ids[2]}" in result["detail"]

        changed = await _memory(client, ids[0])
        assert changed["content"] == edited and [h["content"] for h in changed["history"]] == [event]
        assert (changed["category"], changed["created_at"]) == ("event", before[ids[0]]["created_at"])
        today = utcnow().date().isoformat()
        finished = await _memory(client, ids[2])
        done = f"✅ {todo}（{today}）" if lang == "zh" else f"✅ {todo} ({today})"
        assert finished["content"] == done and finished["category"] == "todo"
        assert await _memory(client, ids[3]) == before[ids[3]]  # left alone: not even touched
        assert (await _memory(client, new_id))["content"] == added
        assert (await _memory(client, new_id))["category"] == "preference"  # the section it was written in
        with pytest.raises(MCPError, match="no memory has the id"):
            await client.read_resource(f"memory://memories/{ids[1]}")

        # The new rendering shows the done todo with ✅ and its day; the same file again is no change.
        after = await _markdown(client)
        assert _line(after, ids[2]).endswith(f"{SEPARATOR[lang]}{done} <!-- {ids[2]} -->")
        assert gone not in after and edited in after and event not in after
        again = await call(client, "import_memories", data=text, mode="edits")
        assert (again["created"], again["updated"], again["forgotten"], again["present"]) == (0, 0, 0, 4)
        assert await _markdown(client) == after
        # Nor is the new rendering imported as edits.
        same = await call(client, "import_memories", data=after, mode="edits")
        assert (same["created"], same["updated"], same["forgotten"]) == (0, 0, 0)


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("line", "content"),
    [
        ("- ✅ 提醒主人周五准备面试 <!-- {id} -->", "✅ 提醒主人周五准备面试（{today}）"),
        ("- ✅ 已提醒主人准备面试（2026-02-14） <!-- {id} -->", "✅ 已提醒主人准备面试（2026-02-14）"),
        ("- [x] Book the flight to Berlin <!-- {id} -->", "✅ Book the flight to Berlin ({today})"),
    ],
)
async def test_one_line_marks_a_todo_done_and_forgets_nothing(
    config: Config, segmenter: Segmenter, line: str, content: str
) -> None:
    """The seed's edit (`- 提醒…` to `- ✅ 已提醒…（2026-02-14）`) as a file of that one line: without
    the rendering's last line (which memories it showed), nothing is forgotten."""
    async with _server(config, segmenter) as client:
        todo = (await call(client, "remember", content="提醒主人周五准备面试", category="todo"))["id"]
        other = (await call(client, "remember", content="Book the flight", category="todo"))["id"]
        result = await call(client, "import_memories", data=line.format(id=todo), mode="edits")
        assert (result["created"], result["updated"], result["forgotten"], result["ids"]) == (0, 1, 0, [todo])
        today = utcnow().date().isoformat()
        assert (await _memory(client, todo))["content"] == content.format(today=today)
        assert (await _memory(client, other))["content"] == "Book the flight"
        assert "✅" in _line(await _markdown(client), todo)


async def test_a_truncated_rendering_forgets_only_the_lines_taken_out_of_it(
    config: Config, segmenter: Segmenter
) -> None:
    async with _server(config, segmenter, markdown_limit=600) as client:
        texts = [f"第 {i} 条笔记：note number {i} of the day" for i in range(30)]
        ids = [(await call(client, "remember", content=t, category="note"))["id"] for t in texts]
        cut = await _markdown(client)
        shown = [i for i in ids if f"<!-- {i} -->" in cut]
        assert "省略" in cut and 3 < len(shown) < len(ids)  # the middle is left out
        removed = shown[1]
        edited = cut.replace(_line(cut, removed) + "\n", "")
        result = await call(client, "import_memories", data=edited, mode="edits")
        assert (result["created"], result["updated"], result["forgotten"]) == (0, 0, 1)
        assert f"forgotten: {removed}" in result["detail"]
        listed = await call(client, "list", limit=50)
        assert listed["total"] == len(ids) - 1 and removed not in {m["id"] for m in listed["items"]}


@pytest.mark.sqlite_only
async def test_edits_mode_is_for_markdown_only(config: Config, segmenter: Segmenter) -> None:
    async with _server(config, segmenter) as client:
        refused = await client.call_tool("import_memories", {"data": "[]", "format": "json", "mode": "edits"})
        assert refused.is_error and "mode edits is for a MEMORY.md file" in refused.content[0].text  # type: ignore[union-attr]
        wrong = await client.call_tool("import_memories", {"data": "- x", "mode": "replace"})
        assert wrong.is_error


@pytest.mark.parametrize(
    ("event", "preference", "note", "todo"),
    [
        (
            "第 {i} 次项目评审通过了",
            "第 {i} 个偏好：喜欢简洁的回答",
            "第 {i} 条笔记：花园里种了番茄",
            "周五下午三点去医院复查",
        ),
        (
            "Project review number {i} passed",
            "Preference number {i}: short answers",
            "Note number {i}: tomatoes in the garden",
            "Hospital check-up on Friday at 3 pm",
        ),
    ],
)
async def test_over_the_limit_the_open_todo_of_today_stays_in_view(
    config: Config, segmenter: Segmenter, event: str, preference: str, note: str, todo: str
) -> None:
    """Older events and preferences before it, notes after it: cut by position, the todo section in
    the middle went whole. Cut by section and date, today's commitment is the first line kept."""
    async with _server(config, segmenter, markdown_limit=1500) as client:
        for i in range(15):
            await call(client, "remember", content=event.format(i=i), category="event")
            await call(client, "remember", content=preference.format(i=i), category="preference")
        done = await call(client, "remember", content="✅ 续签护照 / renew the passport", category="todo")
        due = await call(client, "remember", content=todo, category="todo")
        for i in range(15):
            await call(client, "remember", content=note.format(i=i), category="note")
        text = await _markdown(client)
    assert "省略" in text or "omitted" in text
    assert f"<!-- {due['id']} -->" in text and f"<!-- {done['id']} -->" not in text
    for kind in (event, preference, note):  # every section keeps its newest line
        assert kind.format(i=14) in text and kind.format(i=0) not in text
