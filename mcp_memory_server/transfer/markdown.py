"""MEMORY.md: the core memories as one Markdown file a person can read and an assistant
can load at the start of a conversation, and the way back from such a file to memories.

Rendering: four sections in this order, each showing the core memories of its categories
(profile memories are left out: memory://profile shows them).

    important events        event, decision, correction, project_state, workflow_history, error_patterns
    preferences and habits  preference, user_preferences, coding_style, pattern, skill, ui_templates,
                            desktop_sop
    todos and commitments   todo
    notes                   every other category (fact, identity, relationship, insight, note, ...)

Each line is `- YYYY-MM-DD: text <!-- mem_12 -->` (`：` under Chinese headings) with the memory's
creation date (UTC), oldest first within its section, as in a diary; whitespace in a memory,
newlines included, is folded into single spaces so that one memory is one line. The comment names
the line's memory: hidden where Markdown is displayed, it is what lets an edited copy come back as
edits (`markdown_edits_into`) whatever was reordered or rewritten, where matching lines by their
text would lose a line edited in place. Headings are Chinese or English by configuration; `auto`
picks Chinese when at least half the memories shown contain Chinese. A done todo is one whose text
starts with ✅ (seed 001's `✅ 已提醒主人准备面试（2026-02-14）`).

Capacity (`fit`): a rendering of at most `limit` characters is shown whole. A longer one keeps whole
lines, chosen by section and date rather than by position, until the rendering reaches 9/10 of the
limit (the seed's 70 % head and 20 % tail): first the open todos, newest first (commitments are what
the view is for); then the other sections in turn, one line of each at a time, each newest first
(the newest event, the newest preference, the newest note, then the next of each); done todos last.
A line that does not fit is passed over for the next. Every section keeps its heading and the kept
lines keep their order (oldest first), so the file reads back into the right sections. Under the
title, a marker counts the characters and lines left out, per section, and says that
consolidation is due. The limit is soft: the marker is not counted.

Near the cap (from HINT_NUMERATOR / HINT_DENOMINATOR of the limit) an untruncated rendering gets a
hint under its title asking the assistant to consolidate (a truncated one has the marker's
sentence). The last line, `<!-- shown: 1-40,45 -->`, names the memories the lines show, so that an
import of edits forgets only what was taken out of the file, never what truncation left out. The
hint and that line are not counted either; the ids of the lines are (the model reads them).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import Field

from ..config.config import Config
from ..errors import InvalidInput, SecretRefused
from ..memory import validate
from ..models import Draft, Memory, Model
from ..store.rows import memory_id, parse_id, utcnow
from ..store.store import Store
from ..store.tx import CoreLine, Tx
from ..text.tokens import fingerprint
from .limits import check_items, lines

__all__ = [
    "SECTIONS",
    "CheckedMarkdown",
    "Entry",
    "ImportReport",
    "ParsedMemory",
    "Section",
    "check_markdown",
    "entries",
    "fit",
    "import_markdown",
    "language",
    "markdown_edits_into",
    "markdown_into",
    "parse_markdown",
    "render",
    "render_full",
    "render_store",
    "section_of",
    "shown_line",
    "shown_runs",
    "store_markdown",
]

Language = Literal["zh", "en"]


@dataclass(frozen=True)
class Section:
    name: str
    zh: str
    en: str
    category: str  # what an item of this section becomes when imported
    categories: frozenset[str]  # what it shows; the notes section shows every other category
    words: tuple[str, ...]  # words that name it in a hand-written heading (English ones as prefixes)

    def heading(self, lang: Language) -> str:
        return self.zh if lang == "zh" else self.en


SECTIONS: tuple[Section, ...] = (
    Section(
        "events",
        "重要事件",
        "Important events",
        "event",
        frozenset({"event", "decision", "correction", "project_state", "workflow_history", "error_patterns"}),
        ("事件", "大事", "经历", "决定", "决策", "里程碑", "event", "decision", "milestone"),
    ),
    Section(
        "preferences",
        "偏好与习惯",
        "Preferences and habits",
        "preference",
        frozenset(
            {"preference", "user_preferences", "coding_style", "pattern", "skill", "ui_templates", "desktop_sop"}
        ),
        ("偏好", "习惯", "喜好", "风格", "preference", "habit", "likes"),
    ),
    Section(
        "todos",
        "待办与承诺",
        "Todos and commitments",
        "todo",
        frozenset({"todo"}),
        ("待办", "承诺", "任务", "提醒", "todo", "task", "commitment", "promise", "reminder"),
    ),
    Section("notes", "笔记", "Notes", "note", frozenset(), ("笔记", "备注", "其他", "其它", "note", "misc")),
)
_TITLE = {"zh": "# 🧠 记忆", "en": "# 🧠 Memory"}
_FOOTER = {
    "zh": "_记住重要的事，忘掉不重要的。定期整理，保持精炼。_",
    "en": "_Remember what matters, let go of what does not. Tidy up now and then; keep it short._",
}
_EMPTY = {"zh": "<!-- 暂无 -->", "en": "<!-- nothing yet -->"}
_SEPARATOR = {"zh": "：", "en": ": "}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_OPEN_COMMENT = "&lt;!--"  # a memory's own "<!--" would hide the rest of the file from a reader
# The consolidation hint shows from 4/5 of the limit: a day or two of ordinary use before the cap
# (a line is 40 to 80 characters, 1,000 characters are 12 to 25 new memories), so the assistant
# tidies up before anything is cut, and not so early that it is asked to at every start.
HINT_NUMERATOR, HINT_DENOMINATOR = 4, 5
_REF_AT_END = re.compile(r" <!-- mem_(\d{1,12}) -->$", re.MULTILINE)  # as render_full writes it


# What one line shows of a memory: the store reads exactly this for the core memories.
Entry = CoreLine


@functools.lru_cache(maxsize=256)
def section_of(category: str) -> Section:
    return next((s for s in SECTIONS if category in s.categories), SECTIONS[-1])


def entries(memories: Iterable[Memory]) -> list[Entry]:
    """The lines of `memories`, oldest first: core memories only, profile memories left out."""
    shown = sorted(
        (m for m in memories if m.tier == "core" and m.category != "profile"),
        key=lambda m: (m.created_at, parse_id(m.id) or 0),
    )
    return [
        Entry(m.category, m.content, m.created_at.astimezone(UTC).date().isoformat(), parse_id(m.id)) for m in shown
    ]


def language(contents: Iterable[str], setting: str) -> Language:
    """`setting` when it is zh or en; for auto, Chinese when at least half of `contents` contain
    Chinese (and English for none)."""
    if setting == "zh":
        return "zh"
    if setting == "en":
        return "en"
    total = chinese = 0
    for text in contents:
        total += 1
        chinese += _CJK.search(text) is not None
    return "zh" if total and 2 * chinese >= total else "en"


def _line(entry: Entry, lang: Language) -> str:
    text = " ".join(entry.content.split()).replace("<!--", _OPEN_COMMENT)  # shown as written, read back
    ref = "" if entry.number is None else f" <!-- mem_{entry.number} -->"
    return f"- {entry.day}{_SEPARATOR[lang]}{text}{ref}"


def render_full(lines: Iterable[Entry], lang: Language) -> str:
    """The whole rendering of `lines` (in the order given within each section), untruncated."""
    shown: dict[str, list[str]] = {s.name: [] for s in SECTIONS}
    for entry in lines:
        shown[section_of(entry.category).name].append(_line(entry, lang))
    parts = [_TITLE[lang], ""]
    for section in SECTIONS:
        parts += [f"## {section.heading(lang)}", "", *(shown[section.name] or [_EMPTY[lang]]), ""]
    parts += ["---", "", _FOOTER[lang]]
    return "\n".join(parts) + "\n"


# What consolidating means (seed 001's ways of tidying up), done todos first: they are what is
# surely no longer needed. Said in the marker of a truncated rendering and in the hint near the cap.
_ADVICE = {
    "zh": "合并重复、先移除已完成（✅）的待办和已过去的事件、提炼摘要",
    "en": "merge duplicates, remove done (✅) todos and past events first, summarise",
}
# How, with this server's tools: the file edited and imported back, or forget by id.
_HOW = {
    "zh": "改好后用 import_memories（mode=edits）导回，或用 forget 删除 mem_ 编号",
    "en": "import the edited file with import_memories (mode=edits), or forget by mem_ id",
}


def _marker(omitted: int, left: Sequence[Entry], limit: int, lang: Language) -> str:
    """The comment counting what a cut rendering leaves out (characters, and lines per section) and
    the sentence saying that consolidation is due."""
    counts = {s.name: 0 for s in SECTIONS}
    for entry in left:
        counts[section_of(entry.category).name] += 1
    parts = [(s.heading(lang), counts[s.name]) for s in SECTIONS if counts[s.name]]
    if lang == "zh":
        where = "，".join(f"{name} {n} 条" for name, n in parts)
        return (
            f"<!-- … 省略了 {omitted:,} 个字符（{where}）… -->\n"
            f"> ⚠️ 记忆已超过 {limit:,} 字符的上限，需要整理：{_ADVICE['zh']}。\n"
        )
    where = ", ".join(f"{name}: {n} {'line' if n == 1 else 'lines'}" for name, n in parts)
    return (
        f"<!-- … {omitted:,} characters omitted ({where}) … -->\n"
        f"> ⚠️ Memory is over its {limit:,}-character limit: consolidation is due ({_ADVICE['en']}).\n"
    )


def _hint(used: int, limit: int, lang: Language) -> str:
    """The line that asks the assistant to consolidate a rendering near (or, untruncated, over) the cap."""
    share = used * 100 // limit
    if lang == "zh":
        state = "已超过上限" if used > limit else "接近上限"
        return (
            f"> 💡 记忆已用 {used:,}/{limit:,} 字符（{share}%），{state}：请在这次对话中主动整理——"
            f"{_ADVICE['zh']}；{_HOW['zh']}。\n"
        )
    state = "over its limit" if used > limit else "near its limit"
    return (
        f"> 💡 Memory is at {used:,} of {limit:,} characters ({share}%), {state}: consolidate it in this "
        f"conversation ({_ADVICE['en']}); {_HOW['en']}.\n"
    )


# Over the limit, the kept lines fill this share of it (the seed keeps 70 % of the head and 20 % of
# the tail: 90 % in all), leaving room for the memories written before the next consolidation.
_KEPT_NUMERATOR, _KEPT_DENOMINATOR = 9, 10


def _done(entry: Entry) -> bool:
    return entry.content.lstrip().startswith("✅")


def _newest_first(entries: Iterable[tuple[int, Entry]]) -> list[tuple[int, Entry]]:
    return sorted(entries, key=lambda pair: (pair[1].day, pair[0]), reverse=True)


def _priority(lines: Sequence[Entry]) -> list[int]:
    """The positions of `lines` in the order `fit` keeps them: open todos newest first; then one line
    of each other section in turn, each newest first; then done todos newest first."""
    by_section: dict[str, list[tuple[int, Entry]]] = {s.name: [] for s in SECTIONS}
    for i, entry in enumerate(lines):
        by_section[section_of(entry.category).name].append((i, entry))
    todos = by_section.pop("todos")
    open_todos = _newest_first(p for p in todos if not _done(p[1]))
    done_todos = _newest_first(p for p in todos if _done(p[1]))
    queues = [_newest_first(q) for q in by_section.values()]
    turns = [q[depth][0] for depth in range(max(map(len, queues), default=0)) for q in queues if depth < len(q)]
    return [i for i, _ in open_todos] + turns + [i for i, _ in done_todos]


def fit(lines: Sequence[Entry], limit: int, lang: Language) -> str:
    """The rendering of `lines` when it has at most `limit` characters; otherwise the rendering of
    the lines `_priority` keeps within 9/10 of the limit, with the marker under its title."""
    whole = render_full(lines, lang)
    if len(whole) <= limit:
        return whole
    budget = limit * _KEPT_NUMERATOR // _KEPT_DENOMINATOR
    used = len(render_full([], lang))
    placeholder = len(_EMPTY[lang]) + 1
    filled: set[str] = set()
    kept: set[int] = set()
    for i in _priority(lines):
        section = section_of(lines[i].category).name
        cost = len(_line(lines[i], lang)) + 1 - (placeholder if section not in filled else 0)
        if used + cost <= budget:
            used += cost
            kept.add(i)
            filled.add(section)
    shown = [entry for i, entry in enumerate(lines) if i in kept]
    left = [entry for i, entry in enumerate(lines) if i not in kept]
    text = render_full(shown, lang)
    title, rest = text.split("\n", 1)
    return f"{title}\n\n{_marker(len(whole) - len(text), left, limit, lang)}{rest}"


def _render(lines: Sequence[Entry], config: Config, full: bool) -> str:
    lang = language((e.content for e in lines), config.markdown.language)
    whole = render_full(lines, lang)
    limit = config.markdown.limit
    text = whole if full or len(whole) <= limit else fit(lines, limit, lang)
    if text is whole and len(whole) * HINT_DENOMINATOR >= limit * HINT_NUMERATOR:
        title, rest = whole.split("\n", 1)  # the hint goes first, where it is read first
        text = f"{title}\n\n{_hint(len(whole), limit, lang)}{rest}"
    return text + shown_line(text)


def shown_line(text: str) -> str:
    """The last line of a rendering: which memories its lines show (`<!-- shown: 1-40,45 -->`), so
    that an import in edits mode forgets only the memories whose lines were taken out of it, never
    the ones a truncation left out. Empty when it shows none."""
    numbers = sorted({int(n) for n in _REF_AT_END.findall(text)})
    if not numbers:
        return ""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return "<!-- shown: " + ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) + " -->\n"


def render(memories: Iterable[Memory], config: Config, *, full: bool = False) -> str:
    """MEMORY.md of `memories` (those that are core and not profile); `full`: never truncated."""
    return _render(entries(memories), config, full)


async def render_store(store: Store, *, full: bool = False) -> str:
    """MEMORY.md of the store's current core memories; `full`: never truncated."""
    async with store.reading() as tx:
        lines = await tx.core_lines()
    return _render(lines, store.config, full)


# ---- back from Markdown ---------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)  # unclosed, it runs to the end (as in CommonMark)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(\S.*)$")  # then rstrip: `(.*\S)\s*$` was quadratic in spaces
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")  # - - -, * * *: a thematic break, not an item
_BOX = re.compile(r"^(?:\[(?P<mark>[ xX✓✔])\]|(?P<done>[✅☑✔✓])\ufe0f?|[☐⬜])\s*")
_DATE = r"(?P<date>\d{4}(?:[-/.]\d{1,2}[-/.]\d{1,2}|\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号]?))"
_LEADING = re.compile(rf"^[\[【(（]?{_DATE}[\]】)）]?(?:\s*[:：,，、|—–-]\s*|\s+|(?<=[日号\]】)）]))(?P<rest>\S.*)$")
_TRAILING = re.compile(rf"^(?P<rest>.*?\S)\s*[(（\[【]{_DATE}[)）\]】]$")
_DIGITS = re.compile(r"\d+")
# A line's memory, wherever in the line (a leading \s* would be quadratic on a long run of blanks).
_REF = re.compile(r"<!--\s*mem_(\d{1,12})\s*-->")
_SHOWN = re.compile(r"^\s*<!--\s*shown:\s*([\d,\s-]{0,100000})-->\s*$", re.MULTILINE)
_RUN = re.compile(r"(\d{1,12})(?:\s*-\s*(\d{1,12}))?")
_ASCII_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class ParsedMemory:
    content: str
    category: str
    created_at: datetime | None  # midnight UTC of the item's date; None when it has none
    line: int  # where the item starts in the file, from 1
    ref: int | None = None  # the number of the memory the line was rendered from (`<!-- mem_12 -->`)


def _section_named(title: str, level: int, current: Section) -> Section:
    """The section a heading opens: one whose words it contains; otherwise notes for a `##`
    heading and no change for the others (a `#` title, a `###` subheading)."""
    folded = title.casefold()
    words = _ASCII_WORD.findall(folded.replace("-", ""))  # to-dos: todos

    def names(name: str) -> bool:
        return any(w.startswith(name) for w in words) if name.isascii() else name in folded

    return next((s for s in SECTIONS if any(map(names, s.words))), SECTIONS[-1] if level == 2 else current)


def _unbox(text: str) -> tuple[str, bool]:
    """`text` without a leading checkbox, and whether the box was ticked (`[x]`, `✅`)."""
    box = _BOX.match(text)
    if box is None:
        return text, False
    return text[box.end() :], bool(box.group("done")) or box.group("mark") not in (None, " ")


def _day(text: str, today: date) -> datetime | None:
    """Midnight UTC of a written date; None for a date that does not exist or is after `today`
    (a deadline, not the day the line was written: it stays in the text)."""
    year, month, day = (int(n) for n in _DIGITS.findall(text))
    try:
        written = date(year, month, day)
    except ValueError:
        return None
    return datetime(written.year, written.month, written.day, tzinfo=UTC) if written <= today else None


def _item(text: str, section: Section, line: int, today: date) -> ParsedMemory | None:
    refs = _REF.findall(text)
    ref = int(refs[0]) if refs else None
    text, done = _unbox(" ".join(_REF.sub(" ", text).split()))
    created = None
    # A rendered line's date leads; a date in brackets at its end is part of its text (the day a
    # todo was done: `✅ 提醒主人准备面试（2026-02-14）`).
    for pattern in (_LEADING,) if ref is not None else (_LEADING, _TRAILING):
        dated = pattern.match(text)
        if dated and (created := _day(dated.group("date"), today)):
            text = dated.group("rest")
            break
    if not done:  # `- 2026-02-14: ✅ done`, as the rendering writes a done item
        text, done = _unbox(text)
    text = text.strip().replace(_OPEN_COMMENT, "<!--")
    if not text:
        return None
    return ParsedMemory(f"✅ {text}" if done else text, section.category, created, line, ref)


def _items(text: str, max_chars: int) -> Iterator[tuple[str, Section, int]]:
    """(text, section, line) of every list item; an indented line right after an item continues it.
    An item longer than `max_chars` stops growing at twice that (and a bit): still too long once
    _item has taken a date, a box and escaped comment marks (7 characters to 4) off it, so it is
    refused all the same, and a file of one endless item is not held twice."""
    section, fenced = SECTIONS[-1], False
    item: tuple[list[str], Section, int] | None = None
    size, keep = 0, 2 * max_chars + 64  # size: the item's length with its white space folded
    # Comments become as many empty lines as they spanned, so that line numbers stay true; a
    # line's memory (`<!-- mem_12 -->`) stays with its line, for _item.
    text = _COMMENT.sub(
        lambda c: c[0] if _REF.fullmatch(c[0]) else "\n" * c[0].count("\n"), text.removeprefix("\ufeff")
    )
    for number, raw in enumerate(lines(text), 1):
        if item is not None:
            if raw[:1] in (" ", "\t") and raw.strip() and not _ITEM.match(raw) and not _FENCE.match(raw):
                if size <= keep:
                    item[0].append(raw)
                    size += 1 + len(" ".join(raw.split()))
                continue
            yield " ".join(item[0]), item[1], item[2]
            item = None
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = _HEADING.match(_REF.sub("", raw))
        if heading:
            section = _section_named(heading[2].rstrip().rstrip("#"), len(heading[1]), section)
        elif (found := _ITEM.match(raw)) and not _RULE.match(raw):
            text = found[1].rstrip()
            item, size = ([text], section, number), len(" ".join(text.split()))
    if item is not None:
        yield " ".join(item[0]), item[1], item[2]


def parse_markdown(text: str, *, today: date | None = None, max_chars: int = 1 << 20) -> list[ParsedMemory]:
    """The list items of a MEMORY.md file, ours or written by hand, in Chinese or English.

    A heading names the section by its words (事件 / events, 偏好 / preferences, 待办 / todos,
    笔记 / notes ...); any other `##` heading opens notes, as does the start of the file, and
    other headings (a `#` title, a `###` subheading) change nothing. The section decides the
    category. Bullets (-, *, +) and numbered items count, an indented line continuing the item
    above; comments, quotes, prose, tables, code blocks and thematic breaks are skipped. A date
    at the start (`2026-02-13:`, `2026-02-13：`, `2026/2/13`, `2026年2月13日` ...) or in brackets
    at the end (`（2026-02-14）`) becomes the creation date, unless it is after `today` (UTC by
    default). An open checkbox is dropped; a ticked one (`[x]`, `✅`) becomes a leading `✅`.
    An item is read up to about `max_chars` characters (a longer one is too long to store)."""
    return list(_parsed(text, today or utcnow().date(), max_chars))


def _parsed(text: str, today: date, max_chars: int) -> Iterator[ParsedMemory]:
    parsed = (_item(body, section, line, today) for body, section, line in _items(text, max_chars))
    return (p for p in parsed if p is not None)


class ImportReport(Model):
    lines: int = Field(description="List items found in the file.")
    created: list[str] = Field(description="Ids of the memories created.")
    present: int = Field(
        description="Items whose text (ignoring case, spacing and punctuation) was already stored, in any "
        "category, or came earlier in the file: left alone."
    )
    withheld: int = Field(description="Items stored with secrets taken out (memories never store credentials).")
    refused: list[int] = Field(description="Lines of the items left out because they were essentially a secret.")
    updated: list[str] = Field(default_factory=list, description="Edits: ids of the memories whose line changed.")
    done: list[str] = Field(default_factory=list, description="Edits: ids of the todos whose line turned ✅.")
    forgotten: list[str] = Field(default_factory=list, description="Edits: ids of the memories whose line was removed.")


@dataclass(frozen=True)
class CheckedMarkdown:
    """A MEMORY.md file's items checked as `remember` checks its arguments, not stored yet."""

    lines: int  # list items found
    drafts: list[tuple[Draft, str, datetime | None]]  # (draft, content fingerprint, its date)
    refused: list[int]  # lines of the items left out as essentially a secret
    refs: list[int | None] = field(default_factory=list)  # the memory each draft's line was rendered from
    kept: frozenset[int] = frozenset()  # memories some line of the file names, refused lines' included
    shown: tuple[tuple[int, int], ...] | None = None  # the file's `<!-- shown: -->` runs; None: it has none
    edits: bool = False  # stored as edits of the memories its lines came from (`markdown_edits_into`)


def shown_runs(text: str, most: int = 100_000) -> tuple[tuple[int, int], ...] | None:
    """The runs of memory numbers the last `<!-- shown: 1-40,45 -->` line of a rendering names
    (at most `most` of them); None when it has no such line."""
    found = next(iter(reversed(list(_SHOWN.finditer(text)))), None)
    if found is None:
        return None
    runs = itertools.islice(_RUN.finditer(found[1]), most)
    return tuple((int(r[1]), int(r[2] or r[1])) for r in runs)


def check_markdown(
    text: str, config: Config, *, client: str | None, now: datetime, edits: bool = False
) -> CheckedMarkdown:
    """The items of a MEMORY.md file, each checked; InvalidInput naming the line of the first
    invalid one, TooLarge when there are more than an import takes. CPU work only: the importers
    run it outside the event loop. `edits`: also which memory each line came from."""
    found = _parsed(text, now.astimezone(UTC).date(), config.limits.max_content_chars)
    parsed = list(itertools.islice(found, config.limits.max_import_items + 1))
    check_items(len(parsed), config)
    drafts = []
    refused: list[int] = []
    refs: list[int | None] = []
    for item in parsed:
        try:
            draft = validate.draft(
                config, content=item.content, category_name=item.category, source_name="manual", client=client
            )
        except SecretRefused:
            refused.append(item.line)
            continue
        except InvalidInput as exc:
            raise InvalidInput(f"line {item.line}: {exc}") from exc
        drafts.append((draft, fingerprint(draft.content), item.created_at))
        refs.append(item.ref)
    if not edits:
        return CheckedMarkdown(len(parsed), drafts, refused)
    kept = frozenset(item.ref for item in parsed if item.ref is not None)
    return CheckedMarkdown(len(parsed), drafts, refused, refs, kept, shown_runs(text), edits=True)


async def import_markdown(
    store: Store,
    text: str,
    *,
    client: str | None = "import-markdown",
    now: datetime | None = None,
    edits: bool = False,
) -> ImportReport:
    """A core memory (source `manual`) for each item of a MEMORY.md file not stored yet, all in one
    transaction: importing the same file again changes nothing. An item's date becomes its
    memory's creation (and last change) time; the import is its last access. Invalid items
    (too long, say) stop the import before anything is written, naming their line; items that are
    essentially a secret are left out (as `remember` refuses them) and their lines reported.
    `edits`: the file is a rendering edited (see `markdown_edits_into`)."""
    now = now or utcnow()
    checked = check_markdown(text, store.config, client=client, now=now, edits=edits)
    return await store_markdown(store, checked, now)


async def store_markdown(store: Store, checked: CheckedMarkdown, now: datetime) -> ImportReport:
    """Store the checked items not stored yet, in one transaction (see `import_markdown`)."""
    async with store.transaction() as tx:
        if checked.edits:
            return await markdown_edits_into(tx, checked, now)
        return await markdown_into(tx, checked, now)


async def markdown_into(tx: Tx, checked: CheckedMarkdown, now: datetime) -> ImportReport:
    """`store_markdown`'s work, inside a transaction the caller holds."""
    created: list[str] = []
    withheld = 0
    stored = await tx.hashes([digest for _, digest, _ in checked.drafts])
    for draft, digest, written in checked.drafts:
        if digest in stored:
            continue
        stored.add(digest)
        memory = await tx.insert(draft, digest, now, created=written)
        created.append(memory.id)
        withheld += bool(draft.withheld)
    return ImportReport(
        lines=checked.lines,
        created=created,
        present=len(checked.drafts) - len(created),
        withheld=withheld,
        refused=checked.refused,
    )


def _shown(number: int, runs: Sequence[tuple[int, int]]) -> bool:
    return any(a <= number <= b for a, b in runs)


def _done_day(text: str, day: date) -> str:
    """A todo's text as it reads once done: with the day it was done in brackets at its end (as
    seed 001 writes `✅ 已提醒主人准备面试（2026-02-14）`), unless it ends with a date already."""
    if _TRAILING.match(text):
        return text
    return f"{text}（{day.isoformat()}）" if _CJK.search(text) else f"{text} ({day.isoformat()})"


def _unchanged(text: str, before: str) -> bool:
    """Whether a line's `text` is what the memory holds (`before`), a done todo's date aside: the
    file marked it done and the import dated it, so that importing the file again is no change."""
    if text == before:
        return True
    dated = _TRAILING.match(before)
    return text.startswith("✅") and dated is not None and dated["rest"] == text and not _TRAILING.match(text)


async def markdown_edits_into(tx: Tx, checked: CheckedMarkdown, now: datetime) -> ImportReport:
    """A rendering of this store, edited, brought back as edits, in the caller's transaction:

    - a line naming a core memory (`<!-- mem_12 -->`) whose text differs from the memory's
      updates it (the old text goes to its history; category, key, tags and the rest stay); a
      line turned ✅ marks its todo done, dated the day of the import unless the line ends with a
      date; the first line naming a memory counts, any later one is a new line;
    - every other line is added as `import_markdown` adds (unless its text is stored already);
    - a memory the file's `<!-- shown: -->` line names that no line of the file names any more is
      forgotten (deleted with its history, as `forget` does). Only those: a file without that line
      (a few lines written by hand) forgets nothing, and the memories a truncated rendering left
      out are not named in it."""
    lines = {line.number: line for line in await tx.core_lines() if line.number is not None}
    created: list[str] = []
    updated: list[str] = []
    done: list[str] = []
    withheld = present = 0
    used: set[int] = set()
    stored = await tx.hashes([digest for _, digest, _ in checked.drafts])
    for (draft, digest, written), ref in zip(checked.drafts, checked.refs, strict=True):
        line = lines.get(ref) if ref is not None and ref not in used else None
        if line is not None and ref is not None:
            used.add(ref)
            before = " ".join(line.content.split())
            if _unchanged(draft.content, before):
                present += 1
                continue
            memory = await tx.get(ref)
            assert memory is not None  # core_lines read it in this transaction
            text = draft.content
            finished = text.startswith("✅") and not before.startswith("✅")
            if finished:
                text = _done_day(text, now.astimezone(UTC).date())
            change = Draft(
                content=text,
                key=memory.key,
                category=memory.category,
                tier=memory.tier,
                importance=memory.importance,
                confidence=memory.confidence,
                source=memory.source,
                tags=tuple(memory.tags),
                client=None,  # the memory keeps the client that wrote it
                withheld=draft.withheld,
            )
            await tx.replace(ref, change, fingerprint(text), now, "imported")
            (done if finished else updated).append(memory.id)
            withheld += bool(draft.withheld)
            continue
        if digest in stored:
            present += 1
            continue
        stored.add(digest)
        memory = await tx.insert(draft, digest, now, created=written)
        created.append(memory.id)
        withheld += bool(draft.withheld)
    gone: list[int] = []
    if checked.shown:
        gone = [n for n in lines if n not in checked.kept and _shown(n, checked.shown)]
        gone = await tx.delete(gone)
    return ImportReport(
        lines=checked.lines,
        created=created,
        present=present,
        withheld=withheld,
        refused=checked.refused,
        updated=updated,
        done=done,
        forgotten=[memory_id(n) for n in gone],
    )
