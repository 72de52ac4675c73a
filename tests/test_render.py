"""MEMORY.md: rendering in both languages, truncation exactly at the limit, and the way back."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client

from mcp_memory_server import cli
from mcp_memory_server.config import Config
from mcp_memory_server.render import import_markdown, parse_markdown, render, render_store, truncate
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.server import build_server
from mcp_memory_server.service import MemoryService
from mcp_memory_server.store import Store

pytestmark = pytest.mark.anyio
DAY1 = datetime(2026, 2, 13, 9, 30, tzinfo=UTC)
DAY2 = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)


async def _fill(service: MemoryService) -> None:
    await service.remember(content="主人说这周五要面试", category="event", now=DAY1)
    await service.remember(content="通常晚上 10 点后活跃", category="preference", now=DAY1)
    await service.remember(content="提醒主人周五准备面试", category="todo", now=DAY2)
    await service.remember(content="给同事推荐了 Rust 学习资料\n（两本书）", category="fact", now=DAY2)
    await service.remember(content="只在这次对话里有用", tier="working", session_id="s")


async def test_chinese_rendering_has_the_four_dated_sections(service: MemoryService) -> None:
    await _fill(service)
    text = await render_store(service.store)
    assert text.startswith("# 🧠 记忆\n\n## 重要事件\n\n- 2026-02-13：主人说这周五要面试\n")
    assert "## 偏好与习惯\n\n- 2026-02-13：通常晚上 10 点后活跃\n" in text
    assert "## 待办与承诺\n\n- 2026-03-01：提醒主人周五准备面试\n" in text
    assert "## 笔记\n\n- 2026-03-01：给同事推荐了 Rust 学习资料 （两本书）\n" in text  # one line
    assert "只在这次对话里有用" not in text and "omitted" not in text and "省略" not in text


async def test_english_and_forced_languages(service: MemoryService, config: Config) -> None:
    await service.remember(content="Prefers tabs over spaces", category="coding_style", now=DAY1)
    await service.remember(content="Ship the beta on Friday", category="todo", now=DAY2)
    await service.remember(content="喜欢喝茶", category="preference", now=DAY2)
    english = await render_store(service.store)
    assert english.startswith("# 🧠 Memory\n\n## Important events\n\n<!-- nothing yet -->\n")
    assert "## Preferences and habits\n\n- 2026-02-13: Prefers tabs over spaces\n- 2026-03-01: 喜欢喝茶\n" in english
    assert "## Todos and commitments\n\n- 2026-03-01: Ship the beta on Friday\n" in english
    async with Store(config.with_changes(markdown_language="zh"), service.store.segmenter) as store:
        assert (await render_store(store)).startswith("# 🧠 记忆\n")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_truncation_exactly_at_the_limit(lang: str) -> None:
    lines = [f"- 2026-01-{i % 28 + 1:02d}: line {i:03d} {'x' * 40}\n" for i in range(200)]
    text = "".join(lines)
    assert truncate(text, len(text), lang) == text  # type: ignore[arg-type]
    cut = truncate(text, len(text) - 1, lang)  # type: ignore[arg-type]
    assert cut != text and ("省略" if lang == "zh" else "omitted") in cut
    assert ("需要整理" if lang == "zh" else "consolidation is due") in cut
    limit = 5000
    cut = truncate(text, limit, lang)  # type: ignore[arg-type]
    head, _, rest = cut.partition("<!--")
    tail = rest.split("\n", 2)[2]
    assert len(head) <= limit * 0.7 < len(head) + len(lines[0])  # as many whole lines as fit in 70 %
    assert len(tail) <= limit * 0.2 < len(tail) + len(lines[0])  # and in 20 %
    assert text.startswith(head) and text.endswith(tail) and all(line in lines for line in head.splitlines(True))
    assert f"{len(text) - len(head) - len(tail):,}" in cut


async def test_the_soft_limit_is_configurable(service: MemoryService, config: Config) -> None:
    for i in range(40):
        await service.remember(content=f"第 {i} 条记忆，内容足够长以便超过限制" * 2, category="note", now=DAY1)
    small = config.with_changes(markdown_limit=1000)
    async with Store(small, service.store.segmenter) as store:
        text = await render_store(store)
    assert "需要整理" in text and len(text) < 1000 + 200


def test_parse_hand_written_files() -> None:
    text = """# Memory
<!-- my notes -->
## 重要事件
- 2026-02-13：主人说周五有重要面试
- 2026-02-30: not a real date stays text
## Preferences
* likes dark mode
> a quote is not a memory
## 待办与承诺
- [ ] 周五准备面试
- ✅ 2026-02-14：已提醒主人准备面试
## Random
- something else
"""
    parsed = [(p.content, p.category, p.created_at) for p in parse_markdown(text)]
    assert parsed == [
        ("主人说周五有重要面试", "event", DAY1.replace(hour=0, minute=0)),
        ("2026-02-30: not a real date stays text", "event", None),
        ("likes dark mode", "preference", None),
        ("周五准备面试", "todo", None),
        ("已提醒主人准备面试", "todo", datetime(2026, 2, 14, tzinfo=UTC)),
        ("something else", "note", None),
    ]


async def test_round_trip_and_idempotent_import(service: MemoryService, config: Config, tmp_path: Path) -> None:
    await _fill(service)
    original = await render_store(service.store)
    fresh = config.with_changes(db_path=tmp_path / "fresh.db")
    async with Store(fresh, service.store.segmenter) as store:
        first = await import_markdown(store, original)
        assert (first.lines, len(first.created), first.present) == (4, 4, 0)
        assert await render_store(store) == original  # sections, dates and text all come back
        again = await import_markdown(store, original)
        assert (again.lines, again.created, again.present) == (4, [], 4)
    # Importing a file back into the database it came from adds nothing either.
    assert (await import_markdown(service.store, original)).created == []


def test_the_cli_imports_and_exports(
    config: Config, segmenter: Segmenter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "MEMORY.md"
    file.write_text("## Notes\n- 2026-03-01: Uses Arch Linux at home\n- 喜欢骑自行车\n", encoding="utf-8")
    args = ["--db", str(config.db_path)]
    assert cli.main(["import-markdown", str(file), *args]) == 0
    assert "2 items, 2 created, 0 already present" in capsys.readouterr().out
    assert cli.main(["import-markdown", str(file), *args]) == 0
    assert "0 created, 2 already present" in capsys.readouterr().out
    assert cli.main(["export-markdown", *args]) == 0
    assert "- 2026-03-01：Uses Arch Linux at home" in capsys.readouterr().out  # half Chinese: Chinese headings
    out = tmp_path / "out.md"
    assert cli.main(["export-markdown", str(out), *args]) == 0 and "喜欢骑自行车" in out.read_text(encoding="utf-8")
    assert cli.main(["import-markdown", str(tmp_path / "missing.md"), *args]) == 1
    assert "cannot read" in capsys.readouterr().err
    db = sqlite3.connect(config.db_path)
    assert db.execute("SELECT source, created_at FROM memories ORDER BY seq").fetchall()[0] == (
        "manual",
        "2026-03-01T00:00:00.000000+00:00",
    )
    db.close()


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
