"""Files other memory tools write, read into `Item`s (what transfer/importing.py stores), and the guess of a
file's format when none is given.

memory-jsonl: the official reference server's (@modelcontextprotocol/server-memory) `memory.jsonl`,
one JSON object a line: `{"type": "entity", "name", "entityType", "observations": [...]}` and
`{"type": "relation", "from", "to", "relationType"}`; also its `read_graph` answer
`{"entities": [...], "relations": [...]}`. Each observation becomes a memory naming its entity
("Alice: works at Acme", "张伟：在上海工作"; an observation that names it already stays as it is),
tagged with the entity's name and type, in a category chosen by the type (`_ENTITY_CATEGORIES`),
under the key `kg:NAME#N` (its place in the entity's list): an observation edited in place updates
its memory. Each relation becomes a `relationship` memory ("Alice works at Acme") tagged with both
ends. Fields the reference server does not write (forks add times and ids) are ignored.

mem0: mem0's `get_all` (`{"results": [{"id", "memory", "hash", "metadata", "categories",
"created_at", "updated_at", "user_id", ...}]}`, or a bare list) and OpenMemory's exports: the
`memories_export_*.zip` of its backup page, its `memories.json` (memories with `content`, `state`,
`category_ids`, `archived_at`, `deleted_at`, beside the categories and apps they name), its
`memories.jsonl(.gz)` (one memory a line with `content`, `state`, `app`, `categories`), or a page
of its memory list (`{"items": [...]}`). Categories become tags (and the category when one maps to
ours), the app becomes the client, times are kept, the key is `mem0:ID`. Deleted memories are left
out; archived and paused ones are imported archived (`restore` brings them back). The `relations`
of get_all in graph mode (`{"source", "relationship", "target"}`) become `relationship` memories.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..config.config import Config
from ..errors import InvalidInput
from ..text.screening import inspect, screen_text
from .limits import check_items, lines

__all__ = ["FOREIGN", "Item", "ItemError", "detect", "read_mem0", "read_memory_jsonl"]

FOREIGN = ("memory-jsonl", "mem0")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# White space within the line only ([^\S\n]): with \s, a run of empty lines was scanned again from
# each of its lines, and the guess took a minute for 40 KB of them.
_LIST_ITEM = re.compile(r"^[^\S\n]*(?:[-*+]|\d{1,9}[.)])[^\S\n]+\S", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[^\S\n]+\S", re.MULTILINE)
_USER = {"user", "default_user", "the user", "me", "myself", "i", "用户", "我", "本人"}
_ENTITY_CATEGORIES = {
    "relationship": (
        *("person", "people", "human", "contact", "friend", "colleague", "family"),
        *("人", "人物", "联系人", "同事", "朋友", "家人", "亲人"),
    ),
    "project_state": ("project", "repository", "repo", "项目", "工程"),
    "event": ("event", "meeting", "milestone", "事件", "会议", "活动"),
    "preference": ("preference", "habit", "偏好", "习惯"),
    "skill": ("skill", "language", "technology", "tool", "技能", "技术", "工具"),
    "decision": ("decision", "决定", "决策"),
    "todo": ("todo", "task", "reminder", "待办", "任务", "提醒"),
}
_MEM0_CATEGORIES = {
    "personal_details": "identity",
    "personal": "identity",
    "family": "relationship",
    "relationships": "relationship",
    "preferences": "preference",
    "preference": "preference",
    "user_preferences": "user_preferences",
    "milestones": "event",
    "events": "event",
    "work": "project_state",
    "projects": "project_state",
    "skills": "skill",
    "tasks": "todo",
}


@dataclass(frozen=True, slots=True)
class Item:
    """One memory to import, not checked yet: `where` names it in messages (`line 12`)."""

    where: str
    content: str
    category: str = "fact"
    tags: tuple[str, ...] = ()
    key: str | None = None
    source: str = "assistant"
    client: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    archived: tuple[datetime | None, str] | None = None  # (when, why) for an item the other tool archived


class ItemError(InvalidInput):
    """An item of a file is wrong; the message names it (`line 3: ...`)."""


# ---- the guess --------------------------------------------------------------------------------


def detect(text: str) -> str:
    """json, memory-jsonl, mem0 or markdown, from what the text holds; InvalidInput when none fits."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            top: Any = json.loads(stripped)
        except json.JSONDecodeError as exc:
            top = None
            if exc.msg == "Extra data":  # JSON lines: the first line tells
                with contextlib.suppress(json.JSONDecodeError):
                    top = json.loads(next(lines(stripped)))
        found = _json_kind(top)
        if found:
            return found
    if _LIST_ITEM.search(text) or _HEADING.search(text):
        return "markdown"
    raise InvalidInput(
        "cannot tell the file's format: it is not this server's JSON export, a memory.jsonl of the reference "
        "server, a mem0 or OpenMemory export, or Markdown with list items. Name it with --format "
        "(json, memory-jsonl, mem0 or markdown)."
    )


def _json_kind(top: Any) -> str | None:
    if isinstance(top, list):
        top = next((x for x in top if isinstance(x, dict)), None)
        return "mem0" if isinstance(top, dict) and ("memory" in top or "content" in top) else None
    if not isinstance(top, dict):
        return None
    if top.get("format") == "mcp-memory-server":
        return "json"
    # mem0's get_all in graph mode holds "relations" too, beside its "results".
    if any(isinstance(top.get(k), list) for k in ("results", "memories", "items")) or "memory" in top:
        return "mem0"
    if top.get("type") in ("entity", "relation") or "entities" in top or "relations" in top:
        return "memory-jsonl"
    return "mem0" if "content" in top and "state" in top else None


# ---- shared checks ----------------------------------------------------------------------------


def _lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) of every non-blank line; a line that is not JSON is an ItemError."""
    for number, line in enumerate(lines(text), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise ItemError(f"line {number}: not JSON ({exc.msg} at column {exc.colno}).") from None


def _text(item: Mapping[str, Any], field: str, where: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
        shown = json.dumps(value, ensure_ascii=False)[:60]
        raise ItemError(f"{where}: {field} must be a non-empty string, not {shown}.")
    return value.strip()


def moment(value: Any, where: str, field: str) -> datetime | None:
    """An ISO 8601 time (UTC when it names no zone; `Z` allowed) or Unix seconds; None for null."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000 if value > 10**11 else value, UTC)  # milliseconds too
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise ItemError(f"{where}: {field} {json.dumps(value, ensure_ascii=False)[:60]} is not a time.")


@functools.lru_cache(maxsize=1024)  # an entity's name is quoted once per observation
def _cut(name: str) -> str:
    """A name quoted for a message (and the import's report), its secrets masked, cut after 40
    characters; the item itself is screened as every stored field is (its name is in its key)."""
    name = screen_text(name).text
    return repr(name) if len(name) <= 40 else repr(name[:40]) + "..."


def _words(value: str) -> str:
    return value.replace("_", " ").strip()


# ---- the reference server's memory.jsonl ------------------------------------------------------


def _entity_category(name: str, kind: str) -> str:
    if name.strip().casefold() in _USER:
        return "identity"
    folded = kind.strip().casefold()
    return next((c for c, words in _ENTITY_CATEGORIES.items() if folded in words or folded == c), "fact")


def _slot(name: str, number: int) -> str:
    # A long name is cut to make its key, unless it holds a secret: then the key keeps the whole of
    # it, which screening refuses (a cut could leave too little of the secret to be recognised).
    cut = len(name) > 150 and not inspect(name, "keep")
    label = f"{name[:100]}~{hashlib.sha1(name.encode()).hexdigest()[:12]}" if cut else name
    return f"kg:{label}#{number}"


def _shown(name: str, cjk: bool) -> str:
    """How a memory names an entity: the user's own entity (default_user) as the user."""
    if name.strip().casefold() in _USER:
        return "用户" if cjk else "The user"
    return name


def _observation(name: str, text: str) -> str:
    if name.casefold() in text.casefold():
        return text
    cjk = _CJK.match(text) is not None
    return f"{_shown(name, cjk)}：{text}" if cjk else f"{_shown(name, cjk)}: {text}"


def _entity(item: Mapping[str, Any], where: str) -> Iterator[Item]:
    name = _text(item, "name", where)
    kind = _text(item, "entityType", where) if item.get("entityType") is not None else "thing"
    observations = item.get("observations", [])
    if not isinstance(observations, list):
        raise ItemError(f"{where}: observations must be a list of strings.")
    category = _entity_category(name, kind)
    for i, raw in enumerate(observations):
        created = None
        if isinstance(raw, dict):  # forks: {"content": ..., "timestamp": ...}
            created = moment(raw.get("timestamp", raw.get("createdAt")), f"{where}.observations[{i}]", "timestamp")
            raw = raw.get("content", raw.get("text"))
        if not isinstance(raw, str):
            raise ItemError(f"{where}: observations[{i}] must be a string.")
        if not raw.strip():
            continue
        yield Item(
            where=f"{where} ({_cut(name)}, observation {i + 1})",
            content=_observation(name, raw.strip()),
            category=category,
            tags=(name, kind),
            key=_slot(name, i + 1),
            client="import:memory-jsonl",
            created_at=created,
        )


def _relation(item: Mapping[str, Any], where: str) -> Item:
    source, target = _text(item, "from", where), _text(item, "to", where)
    return _relation_item(source, _text(item, "relationType", where), target, where, "import:memory-jsonl")


def _relation_item(source: str, kind: str, target: str, where: str, client: str) -> Item:
    """A relation of either tool as a `relationship` memory tagged with both ends."""
    cjk = _CJK.search(kind) is not None
    return Item(
        where=f"{where} (relation {_cut(source)} -> {_cut(target)})",
        content=f"{_shown(source, cjk)} {_words(kind)} {_shown(target, cjk)}",
        category="relationship",
        tags=(source, target),
        client=client,
    )


def read_memory_jsonl(text: str, config: Config) -> list[Item]:
    """The items of a memory.jsonl (or of a read_graph answer); ItemError names the first bad line,
    TooLarge stops it once there are more items than an import takes."""
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped and '"entities"' in stripped[:2000]:
        try:
            graph = json.loads(stripped)
        except json.JSONDecodeError:
            graph = None
        if isinstance(graph, dict) and ("entities" in graph or "relations" in graph):
            return _at_most(_graph(graph), config)
    return _at_most(_jsonl(text), config)


def _at_most(items: Iterator[Item], config: Config) -> list[Item]:
    """The items, stopped with TooLarge at the first one past what an import takes."""
    taken = list(itertools.islice(items, config.limits.max_import_items + 1))
    check_items(len(taken), config)
    return taken


def _jsonl(text: str) -> Iterator[Item]:
    for number, value in _lines(text):
        where = f"line {number}"
        if isinstance(value, dict) and ("entities" in value or "relations" in value):
            yield from _graph(value)
            continue
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "entity":
            yield from _entity(value, where)
        elif kind == "relation":
            yield _relation(value, where)
        else:
            raise ItemError(f'{where}: not an entity or a relation (an object with "type": "entity" or "relation").')


def _graph(graph: Mapping[str, Any]) -> Iterator[Item]:
    for field, read in (("entities", _entity), ("relations", _relation)):
        values = graph.get(field, [])
        if not isinstance(values, list):
            raise ItemError(f"{field} must be a list.")
        for i, value in enumerate(values):
            if not isinstance(value, dict):
                raise ItemError(f"{field}[{i}] must be a JSON object.")
            found = read(value, f"{field}[{i}]")
            yield from ([found] if isinstance(found, Item) else found)


# ---- mem0 and OpenMemory ----------------------------------------------------------------------


def read_mem0(text: str, config: Config) -> tuple[list[Item], int]:
    """The items of a mem0 or OpenMemory export, and how many deleted memories were left out;
    TooLarge when there are more than an import takes."""
    stripped = text.strip()
    try:
        top: Any = json.loads(stripped)
        rows = list(_mem0_rows(top))
        names = _names(top, "categories"), _names(top, "apps")
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise ItemError(f"the file is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
        numbered = itertools.islice(_lines(text), config.limits.max_import_items + 1)  # OpenMemory's memories.jsonl
        rows = [(f"line {n}", value) for n, value in numbered]
        names, top = ({}, {}), None
    relations = _list(top.get("relations") if isinstance(top, dict) and "results" in top else None)
    check_items(len(rows) + len(relations), config)
    items: list[Item] = []
    deleted = 0
    for where, row in rows:
        item = _mem0_item(row, where, names)
        if item is None:
            deleted += 1
        else:
            items.append(item)
    for i, relation in enumerate(relations):
        items.append(_mem0_relation(relation, f"relations[{i}]"))
    return items, deleted


def _mem0_relation(item: Any, where: str) -> Item:
    """A relation of mem0's graph memory: {"source", "relationship", "target" (or "destination")}."""
    if not isinstance(item, dict):
        raise ItemError(f"{where}: a relation must be a JSON object.")
    target_field = "target" if "target" in item else "destination"
    source, target = _text(item, "source", where), _text(item, target_field, where)
    return _relation_item(source, _text(item, "relationship", where), target, where, "import:mem0")


def _mem0_rows(top: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(top, list):
        yield from ((f"[{i}]", row) for i, row in enumerate(top))
        return
    if isinstance(top, dict):
        for field in ("results", "memories", "items"):
            if isinstance(top.get(field), list):
                yield from ((f"{field}[{i}]", row) for i, row in enumerate(top[field]))
                return
        if "memory" in top or "content" in top:  # one memory
            yield "the memory", top
            return
    raise ItemError(
        'the file is not a mem0 or OpenMemory export: expected a list of memories, or an object with "results", '
        '"memories" or "items".'
    )


def _names(top: Any, field: str) -> dict[str, str]:
    """OpenMemory's memories.json names categories and apps by id: id -> name."""
    if not isinstance(top, dict) or not isinstance(top.get(field), list):
        return {}
    return {str(c["id"]): c["name"] for c in top[field] if isinstance(c, dict) and isinstance(c.get("name"), str)}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _mem0_item(row: Any, where: str, names: tuple[Mapping[str, str], Mapping[str, str]]) -> Item | None:
    if not isinstance(row, dict):
        raise ItemError(f"{where}: a memory must be a JSON object.")
    if "memory" not in row and "content" not in row:
        raise ItemError(f"{where}: not a mem0 memory (it has no memory field, nor OpenMemory's content).")
    state = str(row.get("state") or "active").lower()
    if state == "deleted" or row.get("deleted_at"):  # left out whatever its text, even none
        return None
    content = _text(row, "memory" if "memory" in row else "content", where)
    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else row.get("metadata_")
    metadata = metadata if isinstance(metadata, dict) else {}
    categories = _strings(row.get("categories"))
    categories += [names[0][str(c)] for c in _list(row.get("category_ids")) if str(c) in names[0]]
    categories += _strings(metadata.get("category")) + _strings(metadata.get("categories"))
    category = next((_MEM0_CATEGORIES[c.casefold()] for c in categories if c.casefold() in _MEM0_CATEGORIES), "fact")
    created = moment(row.get("created_at"), where, "created_at")
    updated = moment(row.get("updated_at"), where, "updated_at")
    archived = None
    if state in ("archived", "paused"):
        archived = (moment(row.get("archived_at"), where, "archived_at") or updated, f"{state} in mem0/OpenMemory")
    ident = row.get("id")
    app = row.get("app") or row.get("app_name") or names[1].get(str(row.get("app_id")))
    role = row.get("role")
    return Item(
        where=where,
        content=content,
        category=category,
        tags=tuple(dict.fromkeys(categories)),
        key=f"mem0:{ident}" if isinstance(ident, (str, int)) and not isinstance(ident, bool) and str(ident) else None,
        source=role if role in ("user", "assistant") else "inferred",
        client=app if isinstance(app, str) and app.strip() else "import:mem0",
        created_at=created,
        updated_at=updated or created,
        archived=archived,
    )
