"""MEMORY.md: rendering in both languages, truncation exactly at the limit, and the way back."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from mcp import Client

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.models import Memory
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer.markdown import (
    Entry,
    fit,
    import_markdown,
    language,
    parse_markdown,
    render,
    render_full,
    render_store,
)

pytestmark = pytest.mark.anyio
DAY1 = datetime(2026, 2, 13, 9, 30, tzinfo=UTC)
DAY2 = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
MIDNIGHT1 = datetime(2026, 2, 13, tzinfo=UTC)
GITHUB = "ghp_" + "FAKE" + "0123456789abcdefABCDEFGHIJKLMNOP"


async def _fill(service: MemoryService) -> None:
    await service.remember(content="主人说这周五要面试", category="event", now=DAY1)
    await service.remember(content="通常晚上 10 点后活跃", category="preference", now=DAY1)
    await service.remember(content="提醒主人周五准备面试", category="todo", now=DAY2)
    await service.remember(content="给同事推荐了 Rust 学习资料\n（两本书）", category="fact", now=DAY2)
    await service.remember(content="只在这次对话里有用", tier="working", session_id="s")
    await service.remember(content="主人是一名后端工程师", category="profile", now=DAY1)


def _omitted(text: str) -> int:
    """The characters a cut rendering says it left out."""
    _, _, rest = text.partition("<!-- … ")
    return int(re.findall(r"[\d,]+", rest.split("\n", 1)[0])[0].replace(",", ""))


def _plain(text: str) -> str:
    """A rendering without its memory ids, its line of the ids shown and its hint."""
    return re.sub(r" <!-- mem_\d+ -->|<!-- shown: [^>]*-->\n|> 💡 .*\n\n", "", text)


# ---- rendering ------------------------------------------------------------------------------


async def test_chinese_rendering_has_the_four_dated_sections(service: MemoryService) -> None:
    await _fill(service)
    text = await render_store(service.store)
    assert text == (
        "# 🧠 记忆\n\n"
        "## 重要事件\n\n- 2026-02-13：主人说这周五要面试 <!-- mem_1 -->\n\n"
        "## 偏好与习惯\n\n- 2026-02-13：通常晚上 10 点后活跃 <!-- mem_2 -->\n\n"
        "## 待办与承诺\n\n- 2026-03-01：提醒主人周五准备面试 <!-- mem_3 -->\n\n"
        # one line; no working, no profile
        "## 笔记\n\n- 2026-03-01：给同事推荐了 Rust 学习资料 （两本书） <!-- mem_4 -->\n\n"
        "---\n\n_记住重要的事，忘掉不重要的。定期整理，保持精炼。_\n"
        "<!-- shown: 1-4 -->\n"  # which memories the lines show (an import of edits forgets only those)
    )


async def test_english_and_forced_languages(service: MemoryService, config: Config) -> None:
    await service.remember(content="Prefers tabs over spaces", category="coding_style", now=DAY1)
    await service.remember(content="Ship the beta on Friday", category="todo", now=DAY2)
    await service.remember(content="喜欢喝茶", category="preference", now=DAY2)
    english = await render_store(service.store)  # one of three contains Chinese: English
    assert english.startswith("# 🧠 Memory\n\n## Important events\n\n<!-- nothing yet -->\n")
    assert (
        "## Preferences and habits\n\n- 2026-02-13: Prefers tabs over spaces <!-- mem_1 -->\n"
        "- 2026-03-01: 喜欢喝茶 <!-- mem_3 -->\n"
    ) in english
    assert "## Todos and commitments\n\n- 2026-03-01: Ship the beta on Friday <!-- mem_2 -->\n\n## Notes\n" in english
    async with Store(config.with_changes(markdown_language="zh"), service.store.segmenter) as store:
        assert (await render_store(store)).startswith("# 🧠 记忆\n")
    await service.remember(content="周末去爬山 with friends", category="event", now=DAY2)
    assert (await render_store(service.store)).startswith("# 🧠 记忆\n")  # two of four: Chinese
    async with Store(config.with_changes(markdown_language="en"), service.store.segmenter) as store:
        assert "- 2026-03-01: 周末去爬山 with friends <!-- mem_4 -->\n" in await render_store(store)


def test_language_auto_counts_memories_containing_chinese() -> None:
    assert language([], "auto") == "en"
    assert language(["Uses vim", "喜欢 vim"], "auto") == "zh"  # half is enough
    assert language(["Uses vim", "Likes tea", "喜欢 vim"], "auto") == "en"
    assert language(["Uses vim"], "zh") == "zh" and language(["喜欢"], "en") == "en"


def test_section_mapping() -> None:
    expected = {
        "Important events": [
            "event",
            "decision",
            "correction",
            "project_state",
            "workflow_history",
            "error_patterns",
        ],
        "Preferences and habits": [
            "preference",
            "user_preferences",
            "coding_style",
            "pattern",
            "skill",
            "ui_templates",
            "desktop_sop",
        ],
        "Todos and commitments": ["todo"],
        "Notes": ["fact", "identity", "insight", "relationship", "note", "context", "my_own_category"],
    }
    text = render_full([Entry(c, f"a {c} memory", "2026-01-01") for cs in expected.values() for c in cs], "en")
    sections = dict(re.findall(r"## (.+)\n\n((?:- .*\n)+)", text))
    assert sections.keys() == expected.keys()
    for heading, categories in expected.items():
        assert sections[heading] == "".join(f"- 2026-01-01: a {c} memory\n" for c in categories)


async def test_dates_are_utc_and_lines_oldest_first(service: MemoryService) -> None:
    late_in_new_york = datetime(2026, 2, 13, 22, 0, tzinfo=timezone(timedelta(hours=-5)))  # 03:00 UTC the 14th
    await service.remember(content="second", category="event", now=late_in_new_york)
    await service.remember(content="first", category="event", now=DAY1)
    await service.remember(content="third", category="event", now=DAY2)
    await service.remember(content="same day, written later", category="event", now=DAY2)
    text = await render_store(service.store)
    assert (
        "- 2026-02-13: first <!-- mem_2 -->\n- 2026-02-14: second <!-- mem_1 -->\n"
        "- 2026-03-01: third <!-- mem_3 -->\n- 2026-03-01: same day, written later <!-- mem_4 -->\n"
    ) in text
    assert render(await _all(service), service.config) == text  # from Memory models, the same


async def _all(service: MemoryService) -> list[Memory]:
    return (await service.list_memories(limit=200)).items


async def test_whitespace_is_folded_so_one_memory_is_one_line(service: MemoryService) -> None:
    await service.remember(
        content="line one\r\nline two\n\n\tindented   and  spaced\u2028end", category="note", now=DAY1
    )
    text = await render_store(service.store)
    assert "- 2026-02-13: line one line two indented and spaced end <!-- mem_1 -->\n" in text
    # One line instead of "nothing yet", and the line saying which memories are shown.
    assert len(text.splitlines()) == len(render([], service.config).splitlines()) + 1


# ---- truncation -------------------------------------------------------------------------------


def _numbered(lines: list[Entry]) -> list[Entry]:
    return [Entry(e.category, e.content, e.day, n) for n, e in enumerate(lines, start=1)]


MANY = _numbered(
    [Entry("event", f"event number {i:02d} of the project", f"2026-01-{i + 1:02d}") for i in range(25)]
    + [Entry("preference", f"preference number {i:02d} about tools", f"2026-01-{i + 1:02d}") for i in range(25)]
    + [Entry("todo", "✅ renew the passport (2026-01-03)", "2026-01-02")]
    + [Entry("note", f"note number {i:02d} about the garden", f"2026-01-{i + 1:02d}") for i in range(25)]
    + [Entry("todo", "Hospital check-up on Friday at 3 pm", "2026-01-28")]
)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_rendering_at_the_limit_is_untouched_and_one_over_is_cut(lang: str) -> None:
    whole = render_full(MANY, lang)  # type: ignore[arg-type]
    assert fit(MANY, len(whole), lang) == whole  # type: ignore[arg-type]
    cut = fit(MANY, len(whole) - 1, lang)  # type: ignore[arg-type]
    assert ("需要整理" if lang == "zh" else "consolidation is due") in cut
    body = cut.replace(cut.split("\n")[2] + "\n" + cut.split("\n")[3] + "\n\n", "")  # without the marker
    assert len(body) <= (len(whole) - 1) * 9 // 10 and _omitted(cut) == len(whole) - len(body)


@pytest.mark.parametrize("limit", [900, 1500, 2500])
def test_open_todos_come_first_then_the_newest_line_of_each_section(limit: int) -> None:
    cut = fit(MANY, limit, "en")
    parsed = parse_markdown(cut)
    kept = [p.content for p in parsed]
    assert "Hospital check-up on Friday at 3 pm" in kept  # the open todo, written last
    for word, category in (("event", "event"), ("preference", "preference"), ("note", "note")):
        mine = [k for k in kept if k.startswith(word)]
        # Each section keeps its newest lines, in their order, under its own heading.
        assert mine and mine == sorted(mine) and mine[-1].startswith(f"{word} number 24"), mine
        assert {p.category for p in parsed if p.content.startswith(word)} == {category}
    counts = [len([k for k in kept if k.startswith(w)]) for w in ("event", "preference", "note")]
    assert max(counts) - min(counts) <= 1, counts  # one of each in turn
    assert ("renew the passport" in cut) is (limit >= 2500 and len(kept) == len(MANY))


def test_done_todos_go_first_then_the_oldest_lines() -> None:
    whole = render_full(MANY, "en")
    cut = fit(MANY, len(whole) - 1, "en")  # over by one: a tenth of the limit is freed
    kept = {p.content for p in parse_markdown(cut)}
    assert "✅ renew the passport (2026-01-03)" not in kept and "Hospital check-up on Friday at 3 pm" in kept
    left = [e.content for e in MANY if e.content not in kept]
    assert "Todos and commitments: 1 line," in cut and left[0].startswith("event number 00")
    for word in ("event", "preference", "note"):  # each section gives up its oldest lines
        mine = [e.content for e in MANY if e.content.startswith(word)]
        gone = [c for c in mine if c not in kept]
        assert gone == mine[: len(gone)], gone


def test_a_tiny_limit_leaves_the_headings_and_the_marker() -> None:
    cut = fit(MANY, 1, "en")
    assert parse_markdown(cut) == [] and cut.count("## ") == 4
    assert "Memory is over its 1-character limit: consolidation is due" in cut
    assert "(Important events: 25 lines, Preferences and habits: 25 lines, Todos and commitments: 2 lines" in cut


def test_a_line_is_never_split() -> None:
    lines = _numbered([Entry("note", "x" * 800, "2026-01-01"), Entry("note", "short", "2026-01-02")])
    lines += _numbered([Entry("note", "y" * 300, "2026-01-03")])
    cut = fit(lines, 1000, "en")
    whole_lines = set(render_full(lines, "en").splitlines())
    items = [line for line in cut.splitlines() if line.startswith("- ")]
    assert items and all(line in whole_lines for line in items)


async def test_the_soft_limit_is_configurable(service: MemoryService, config: Config) -> None:
    for i in range(40):
        await service.remember(content=f"第 {i} 条记忆，内容足够长以便超过限制" * 2, category="note", now=DAY1)
    full = await render_store(service.store, full=True)
    assert "省略" not in full and "需要整理" not in full and "💡" not in full
    assert await render_store(service.store) == full  # 40 short lines are below 4/5 of 5,000
    body = full[: full.index("<!-- shown: ")]  # what the limit counts
    for limit, cut in ((len(body), False), (len(body) - 1, True), (1000, True)):
        async with Store(config.with_changes(markdown_limit=limit), service.store.segmenter) as store:
            text = await render_store(store)
            assert ("需要整理" in text) is cut and ("省略" in text) is cut
            assert ("💡" in text) is not cut  # at the limit: the hint; over it, the marker says it
            assert _plain(text) == _plain(full) or cut
            assert _plain(await render_store(store, full=True)) == _plain(full)


# ---- parsing ----------------------------------------------------------------------------------


def test_parse_hand_written_files() -> None:
    text = """# 🧠 我的记忆
- 写在任何标题之前
<!-- my notes
  - not an item -->
## 📅 重要事件
- 2026-02-13：主人说周五有重要面试
- 2026-02-30: not a real date stays text
- 2099-01-01: a date after today stays too
- 2026/2/13 斜线日期
- 2026年2月13日 中文日期
- [2026-02-13] bracketed
1. 2026-02-13 - numbered, with a dash
### 二月
- 子标题不换节
## Preferences & Habits
* likes dark mode
  and a light keyboard
  - nested item
> a quote is not a memory
+ 喜欢喝茶（2026-02-13）
## To-dos
- [ ] 周五准备面试
- [x] book the flight
- ✅ 已提醒主人准备面试（2026-02-14）
- 2026-02-14: ✅ done, as we write it
## Random
- something else

* * *
| a | table |
|---|---|
```
- code is not a memory
```
"""
    today = date(2026, 3, 1)
    parsed = [(p.content, p.category, p.created_at) for p in parse_markdown(text, today=today)]
    assert parsed == [
        ("写在任何标题之前", "note", None),
        ("主人说周五有重要面试", "event", MIDNIGHT1),
        ("2026-02-30: not a real date stays text", "event", None),
        ("2099-01-01: a date after today stays too", "event", None),
        ("斜线日期", "event", MIDNIGHT1),
        ("中文日期", "event", MIDNIGHT1),
        ("bracketed", "event", MIDNIGHT1),
        ("numbered, with a dash", "event", MIDNIGHT1),
        ("子标题不换节", "event", None),
        ("likes dark mode and a light keyboard", "preference", None),
        ("nested item", "preference", None),
        ("喜欢喝茶", "preference", MIDNIGHT1),
        ("周五准备面试", "todo", None),
        ("✅ book the flight", "todo", None),
        ("✅ 已提醒主人准备面试", "todo", datetime(2026, 2, 14, tzinfo=UTC)),
        ("✅ done, as we write it", "todo", datetime(2026, 2, 14, tzinfo=UTC)),
        ("something else", "note", None),
    ]
    lines = {p.content: p.line for p in parse_markdown(text, today=today)}
    assert (lines["写在任何标题之前"], lines["主人说周五有重要面试"], lines["something else"]) == (2, 6, 27)


def test_parse_english_headings_and_empty_files(config: Config) -> None:
    text = "# Memory\n## Important Events\n- a\n## preferences\n- b\n## Todos and commitments\n- c\n## Notes\n- d\n"
    assert [(p.content, p.category) for p in parse_markdown(text)] == [
        ("a", "event"),
        ("b", "preference"),
        ("c", "todo"),
        ("d", "note"),
    ]
    windows = "\ufeff## 重要事件 ##\r\n- 2026-02-13：面试\r\n##   待办   \r\n- 准备\r\n"
    assert [(p.content, p.category, p.created_at) for p in parse_markdown(windows)] == [
        ("面试", "event", MIDNIGHT1),
        ("准备", "todo", None),
    ]
    assert parse_markdown("") == [] and parse_markdown(render([], config)) == []
    assert parse_markdown("- [ ]\n- ✅\n- \n") == []
    assert [p.content for p in parse_markdown("- kept\n<!-- never closed\n- hidden\n")] == ["kept"]


# ---- import -----------------------------------------------------------------------------------


async def test_round_trip_and_idempotent_import(service: MemoryService, config: Config, tmp_path: Path) -> None:
    await _fill(service)
    await service.remember(content="✅ 已提醒主人准备面试", category="todo", now=DAY2)
    await service.remember(content="2025-01-01 是上线的日子 (2024-05-01)", category="note", now=DAY2)
    await service.remember(content="Launch  day   (see notes)", category="decision", now=DAY2)
    await service.remember(content="Comments in HTML open with <!-- and close with -->", category="note", now=DAY2)
    original = await render_store(service.store)
    assert "- 2026-03-01：Comments in HTML open with &lt;!-- and close with --> <!-- mem_10 -->\n" in original
    fresh = config.with_changes(db_path=tmp_path / "fresh.db")
    async with Store(fresh, service.store.segmenter) as store:
        first = await import_markdown(store, original)
        assert (first.lines, len(first.created), first.present) == (8, 8, 0)
        # Sections, dates and text all come back (the ids are the new database's own).
        assert _plain(await render_store(store)) == _plain(original)
        again = await import_markdown(store, original)
        assert (again.lines, again.created, again.present) == (8, [], 8)
        assert _plain(await render_store(store)) == _plain(original)
    # Importing a file back into the database it came from adds nothing either.
    assert (await import_markdown(service.store, original)).created == []


async def test_import_keeps_dates_and_counts_repeats(service: MemoryService) -> None:
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    text = "## 笔记\n- 2026-02-13：喜欢骑自行车\n- 喜欢骑自行车！\n- 没有日期\n- 2026-03-05：下周的事\n"
    report = await import_markdown(service.store, text, now=now)
    assert (report.lines, len(report.created), report.present, report.withheld) == (4, 3, 1, 0)
    dated, undated, future = [await service.get(i) for i in report.created]
    assert (dated.created_at, dated.updated_at, dated.last_accessed) == (MIDNIGHT1, MIDNIGHT1, now)
    assert (dated.source, dated.tier, dated.category, dated.client) == ("manual", "core", "note", "import-markdown")
    assert undated.created_at == undated.updated_at == undated.last_accessed == now
    assert future.content == "2026-03-05：下周的事" and future.created_at == now


async def test_an_invalid_item_stops_the_import_and_names_its_line(service: MemoryService) -> None:
    text = "## Notes\n- fine\n\n- " + "x" * (service.config.limits.max_content_chars + 1) + "\n"
    with pytest.raises(InvalidInput, match=r"^line 4: content is"):
        await import_markdown(service.store, text)
    assert (await service.stats()).total == 0


async def test_secrets_are_withheld_or_refused_on_import(service: MemoryService) -> None:
    text = f"- the deploy bot on the staging server uses {GITHUB}\n- nothing secret\n- 密码 {GITHUB}\n"
    report = await import_markdown(service.store, text)
    assert (report.lines, len(report.created), report.present, report.withheld, report.refused) == (3, 2, 0, 1, [3])
    rendering = await render_store(service.store)
    assert GITHUB not in rendering and "the deploy bot on the staging server uses [withheld" in rendering
    again = await import_markdown(service.store, text)
    assert (len(again.created), again.present, again.withheld, again.refused) == (0, 2, 0, [3])


# ---- command line and resource ----------------------------------------------------------------


def test_the_cli_imports_and_exports(
    config: Config, segmenter: Segmenter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "MEMORY.md"
    file.write_text("## Notes\n- 2026-03-01: Uses Arch Linux at home\n- 喜欢骑自行车\n", encoding="utf-8")
    args = ["--db", str(config.db_path)]
    assert cli.main(["import-markdown", str(file), *args]) == 0
    assert capsys.readouterr().out == f"{file}: 2 items, 2 created, 0 already present\n"
    assert cli.main(["import-markdown", str(file), *args]) == 0
    assert capsys.readouterr().out == f"{file}: 2 items, 0 created, 2 already present\n"
    assert cli.main(["export-markdown", *args]) == 0
    assert "- 2026-03-01：Uses Arch Linux at home" in capsys.readouterr().out  # half Chinese: Chinese headings
    out = tmp_path / "out.md"
    assert cli.main(["export-markdown", str(out), *args]) == 0 and "喜欢骑自行车" in out.read_text(encoding="utf-8")
    assert capsys.readouterr().out == ""
    db = sqlite3.connect(config.db_path)
    assert db.execute("SELECT source, created_at FROM memories ORDER BY seq").fetchall()[0] == (
        "manual",
        "2026-03-01T00:00:00.000000+00:00",
    )
    db.close()


def test_the_cli_reports_errors_on_stderr(config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--db", str(config.db_path)]
    assert cli.main(["import-markdown", str(tmp_path / "missing.md"), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot read" in captured.err
    bad = tmp_path / "bad.md"
    bad.write_text("- ok\n- " + "x" * 5000 + "\n", encoding="utf-8")
    assert cli.main(["import-markdown", str(bad), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "line 2: content is" in captured.err
    secrets = tmp_path / "secrets.md"
    secrets.write_text(
        f"- 密码 {GITHUB}\n- the bot on staging uses {GITHUB}\n- ok\n- token {GITHUB}\n", encoding="utf-8"
    )
    assert cli.main(["import-markdown", str(secrets), *args]) == 0
    assert capsys.readouterr().out == (
        f"{secrets}: 4 items, 2 created, 0 already present, secrets withheld from 1, left out as secrets: lines 1, 4\n"
    )


def test_the_cli_exports_in_full(config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "MEMORY.md"
    file.write_text("".join(f"- 2026-01-01: memory number {i}\n" for i in range(300)), encoding="utf-8")
    args = ["--db", str(config.db_path)]
    assert cli.main(["import-markdown", str(file), *args]) == 0
    capsys.readouterr()
    assert cli.main(["export-markdown", *args]) == 0
    cut = capsys.readouterr().out
    assert cli.main(["export-markdown", "--full", *args]) == 0
    full = capsys.readouterr().out
    assert "consolidation is due" in cut and len(cut) < 5000 < len(full) and "omitted" not in full
    assert [p.content for p in parse_markdown(full)] == [f"memory number {i}" for i in range(300)]


async def test_the_resource(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        await client.call_tool("remember", {"content": "我住在杭州", "category": "identity"})
        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert resources["memory://MEMORY.md"].mime_type == "text/markdown"
        text = (await client.read_resource("memory://MEMORY.md")).contents[0]
    assert hasattr(text, "text") and "## 笔记" in text.text and "我住在杭州" in text.text


def test_render_of_nothing(config: Config) -> None:
    text = render([], config)
    assert text.count("<!-- nothing yet -->") == 4 and text.startswith("# 🧠 Memory")
