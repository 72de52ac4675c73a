"""MEMORY.md (seed 001): the core memories as one Markdown file a person can read and an assistant
can load at the start of a conversation, and the way back from such a file to memories.

Four sections: important events, preferences and habits, todos and commitments, notes; each line
`- YYYY-MM-DD: text`, oldest first. Headings are Chinese or English by configuration (`auto`:
Chinese when most core memories are). Over the soft limit the rendering keeps its first 70 % and
last 20 % (whole lines only) around a visible marker saying that consolidation is due.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from . import validate
from .config import Config
from .models import Memory, Model
from .rows import COLUMNS, row_to_memory
from .store import Store
from .tokens import fingerprint

__all__ = [
    "SECTIONS",
    "ImportReport",
    "ParsedMemory",
    "import_markdown",
    "parse_markdown",
    "render",
    "render_store",
    "truncate",
]

Language = Literal["zh", "en"]


@dataclass(frozen=True)
class Section:
    name: str
    zh: str
    en: str
    category: str  # what a line of this section becomes when imported
    categories: frozenset[str]  # what it shows; the notes section shows everything else


SECTIONS: tuple[Section, ...] = (
    Section(
        "events",
        "重要事件",
        "Important events",
        "event",
        frozenset({"event", "decision", "correction", "project_state", "workflow_history", "error_patterns"}),
    ),
    Section(
        "preferences",
        "偏好与习惯",
        "Preferences and habits",
        "preference",
        frozenset(
            {"preference", "user_preferences", "coding_style", "pattern", "skill", "ui_templates", "desktop_sop"}
        ),
    ),
    Section("todos", "待办与承诺", "Todos and commitments", "todo", frozenset({"todo"})),
    Section("notes", "笔记", "Notes", "note", frozenset()),
)
_TITLE = {"zh": "# 🧠 记忆", "en": "# 🧠 Memory"}
_FOOTER = {
    "zh": "_记住重要的事，忘掉不重要的。定期整理，保持精炼。_",
    "en": "_Remember what matters, let go of what does not. Tidy up now and then; keep it short._",
}
_EMPTY = {"zh": "<!-- 暂无 -->", "en": "<!-- nothing yet -->"}
_SEPARATOR = {"zh": "：", "en": ": "}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_HEAD, _TAIL = 0.7, 0.2


def _section_of(category: str) -> Section:
    return next((s for s in SECTIONS if category in s.categories), SECTIONS[-1])


def language(memories: Iterable[Memory], setting: str) -> Language:
    if setting in ("zh", "en"):
        return setting  # type: ignore[return-value]
    texts = [m.content for m in memories]
    chinese = sum(1 for t in texts if _CJK.search(t))
    return "zh" if texts and chinese * 2 >= len(texts) else "en"


def _line(memory: Memory, lang: Language) -> str:
    text = " ".join(memory.content.split())  # one line, whatever the content held
    return f"- {memory.created_at.astimezone(UTC).date().isoformat()}{_SEPARATOR[lang]}{text}"


def render_full(memories: Sequence[Memory], lang: Language) -> str:
    """The whole rendering, before any truncation."""
    shown = sorted(
        (m for m in memories if m.tier == "core" and m.category != "profile"), key=lambda m: (m.created_at, m.id)
    )
    parts = [_TITLE[lang], ""]
    for section in SECTIONS:
        lines = [_line(m, lang) for m in shown if _section_of(m.category) is section]
        parts += [f"## {getattr(section, lang)}", "", *(lines or [_EMPTY[lang]]), ""]
    parts += ["---", "", _FOOTER[lang]]
    return "\n".join(parts) + "\n"


def _marker(omitted: int, limit: int, lang: Language) -> str:
    if lang == "zh":
        return (
            f"<!-- … 省略了 {omitted:,} 个字符 … -->\n"
            f"> ⚠️ 记忆已超过 {limit:,} 字符的上限，需要整理：合并重复、移除过时、提炼摘要。\n"
        )
    return (
        f"<!-- … {omitted:,} characters omitted … -->\n"
        f"> ⚠️ Memory is over its {limit:,}-character limit: consolidation is due (merge duplicates, drop what "
        "is outdated, summarise).\n"
    )


def truncate(text: str, limit: int, lang: Language) -> str:
    """`text` itself when it fits in `limit` characters; otherwise its first whole lines within
    70 % of the limit, a marker, and its last whole lines within 20 % of the limit."""
    if len(text) <= limit:
        return text
    lines = text.splitlines(keepends=True)
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > int(limit * _HEAD):
            break
        head.append(line)
        used += len(line)
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) > int(limit * _TAIL):
            break
        tail.insert(0, line)
        used += len(line)
    omitted = len(text) - sum(map(len, head)) - sum(map(len, tail))
    return "".join(head) + _marker(omitted, limit, lang) + "".join(tail)


def render(memories: Sequence[Memory], config: Config) -> str:
    lang = language((m for m in memories if m.tier == "core" and m.category != "profile"), config.markdown_language)
    return truncate(render_full(memories, lang), config.markdown_limit, lang)


async def render_store(store: Store) -> str:
    """MEMORY.md of the store's current core memories."""
    async with store.reading() as tx:
        rows = await tx.fetch(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND tier = 'core' AND category != 'profile'"
            " ORDER BY created_at, seq",
            (tx.namespace,),
        )
    return render([row_to_memory(r) for r in rows], store.config)


# ---- back from Markdown ---------------------------------------------------------------------

_HEADINGS: dict[str, Section] = {
    name.casefold(): section
    for section in SECTIONS
    for name in (
        section.zh,
        section.en,
        *{
            "events": ("事件", "Events", "重要的事", "大事记"),
            "preferences": ("偏好", "习惯", "Preferences", "Habits", "偏好和习惯", "Preferences & habits"),
            "todos": ("待办", "承诺", "Todos", "To-dos", "Todo", "待办事项", "Todos & commitments"),
            "notes": ("Notes", "备注", "其他"),
        }[section.name],
    )
}
_ITEM = re.compile(r"^\s*[-*+]\s+(?:\[[ xX]\]\s*)?(?:✅\s*)?(.*\S)\s*$")
_DATED = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})\s*[:：]\s*(.+)$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class ParsedMemory:
    content: str
    category: str
    created_at: datetime | None


def parse_markdown(text: str) -> list[ParsedMemory]:
    """The list items of a MEMORY.md file, by section; comments, quotes and prose are skipped, an
    unknown section counts as notes, a leading `YYYY-MM-DD:` becomes the creation date."""
    section = SECTIONS[-1]
    found: list[ParsedMemory] = []
    for raw in _COMMENT.sub("", text).splitlines():
        if raw.startswith("#"):
            title = raw.lstrip("#").strip()
            section = _HEADINGS.get(title.casefold(), SECTIONS[-1]) if raw.startswith("## ") else section
            continue
        match = _ITEM.match(raw)
        if match is None:
            continue
        body, created = match.group(1), None
        dated = _DATED.match(body)
        if dated:
            year, month, day, body = dated.groups()
            try:
                created = datetime(int(year), int(month), int(day), tzinfo=UTC)
            except ValueError:
                body = match.group(1)  # not a real date: keep the line as it is
        found.append(ParsedMemory(body.strip(), section.category, created))
    return found


class ImportReport(Model):
    lines: int = Field(description="List items found in the file.")
    created: list[str] = Field(description="Ids of the memories created.")
    present: int = Field(description="Items already stored with the same text (any category): left alone.")


async def import_markdown(store: Store, text: str, *, client: str | None = "import-markdown") -> ImportReport:
    """Create a core memory for each item not stored yet; importing the same file again changes
    nothing. Dates in the file become the memories' creation times."""
    parsed = parse_markdown(text)
    drafts = []
    for item in parsed:
        draft = validate.draft(
            store.config, content=item.content, category_name=item.category, source_name="manual", client=client
        )
        drafts.append((draft, fingerprint(draft.content), item.created_at))
    created: list[str] = []
    async with store.transaction() as tx:
        stored = await tx.hashes([digest for _, digest, _ in drafts])
        for draft, digest, moment in drafts:
            if digest in stored:
                continue
            stored.add(digest)
            memory = await tx.insert(draft, digest, moment or datetime.now(UTC))
            created.append(memory.id)
    return ImportReport(lines=len(parsed), created=created, present=len(parsed) - len(created))
