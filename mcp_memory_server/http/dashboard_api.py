"""What the dashboard's JSON API does, free of HTTP: each function takes the namespace's state and
the request's parsed query or body, checks the types a JSON body can get wrong (the service checks
the values, with the same limits as the MCP tools) and returns what the API answers.

Every write goes through the service layer and the namespace's store, so its change reaches MCP
subscribers (server/notify.py listens to the store) like a write through the tools."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast, get_args

from .. import __version__
from ..config.config import Config
from ..config.limits import MAX_ID_CHARS, MAX_KEY_CHARS, MAX_RECALL_HITS
from ..errors import InvalidInput
from ..memory.validate import quoted
from ..models import KNOWN_CATEGORIES, ForgetResult, OrderBy, RememberResult, Stats
from ..profile import profile as profiles
from ..profile.profile import Profile
from ..runtime.namespaces import AppState
from ..store.extraction_log import LogEntry
from ..transfer.importing import FORMATS, ImportSummary, import_bytes
from ..transfer.json_transfer import export_json

__all__ = [
    "CLIENT",
    "add",
    "delete",
    "detail",
    "edit",
    "edit_profile",
    "export",
    "extraction_log",
    "import_file",
    "info",
    "list_memories",
    "profile",
    "search",
    "stats",
]

CLIENT = "dashboard"  # the `client` of memories added through the dashboard
_ORDERS: tuple[str, ...] = get_args(OrderBy)
_PROFILE_FIELDS = ("summary", "language_preferences", *profiles.FIELDS)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _unit(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _texts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(t, str) for t in v)


_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "content": ("text", _text),
    "key": ("text or null", lambda v: v is None or isinstance(v, str)),
    "category": ("text", _text),
    "tier": ('"core" or "working"', _text),
    "importance": ("a number from 0 to 1", _unit),
    "confidence": ("a number from 0 to 1", _unit),
    "tags": ("a list of texts", _texts),
    "ids": ("a list of ids such as mem_12", _texts),
    "field": ("text", _text),
    "action": ("text", _text),
    "text": ("text", _text),
}


def _fields(body: Any, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The body as a JSON object of `allowed` fields, each of its JSON type."""
    if not isinstance(body, dict):
        raise InvalidInput(f"the body must be a JSON object with the fields {', '.join(allowed)}.")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(map(quoted, unknown))}; allowed: {', '.join(allowed)}.")
    missing = [name for name in required if name not in body]
    if missing:
        raise InvalidInput(f"{', '.join(missing)} missing.")
    for name, value in body.items():
        what, check = _TYPES[name]
        if not check(value):
            raise InvalidInput(f"{name} must be {what}.")
    return dict(body)


def _int(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.lstrip("-").isdigit() or len(raw) > 12:
        raise InvalidInput(f"{name} must be a whole number, got {quoted(raw)}.")
    value = int(raw)
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}, got {value}.")
    return value


def _opt(query: Mapping[str, str], name: str) -> str | None:
    return query.get(name, "").strip() or None


def info(config: Config, namespace: str | None, auth: bool) -> dict[str, Any]:
    """What the page needs before signing in: no memories, no token."""
    return {
        "version": __version__,
        "namespace": namespace,
        "auth": auth,
        "limits": {
            "max_page": config.limits.max_page,
            "max_batch": config.limits.max_batch,
            "max_content": config.limits.max_content_chars,
            "max_query": config.limits.max_query_chars,
            "max_tags": config.limits.max_tags,
            "max_tag_chars": config.limits.max_tag_chars,
            "max_key": MAX_KEY_CHARS,
            "max_search": MAX_RECALL_HITS,
            "max_body": config.limits.max_body_bytes,
        },
        "categories": list(KNOWN_CATEGORIES),
        "tiers": ["core", "working"],
        "orders": list(_ORDERS),
        "profile_fields": list(_PROFILE_FIELDS),
        "import_formats": ["auto", *FORMATS],
    }


async def list_memories(state: AppState, query: Mapping[str, str]) -> dict[str, Any]:
    order = query.get("order", "").strip() or "updated"
    if order not in _ORDERS:
        raise InvalidInput(f"order {quoted(order)} is not one of {', '.join(_ORDERS)}.")
    page = await state.service.list_memories(
        category=_opt(query, "category"),
        tier=_opt(query, "tier"),
        order_by=cast(OrderBy, order),
        limit=_int(query, "limit", min(20, state.config.limits.max_page), 1, state.config.limits.max_page),
        cursor=_opt(query, "cursor"),
    )
    return page.model_dump(mode="json")


async def search(state: AppState, query: Mapping[str, str]) -> dict[str, Any]:
    """The retriever as recall runs it, without counting as a use of the memories found."""
    text = query.get("q", "")
    if not text.strip():
        raise InvalidInput("q is empty: give the words to search for.")
    result = await state.service.recall(
        query=text,
        limit=_int(query, "limit", 20, 1, MAX_RECALL_HITS),
        category=_opt(query, "category"),
        track_access=False,
    )
    return result.model_dump(mode="json")


async def detail(state: AppState, memory_id: str) -> dict[str, Any]:
    memory = await state.service.get(memory_id)
    history = await state.service.history(memory.id)
    return {
        "memory": memory.model_dump(mode="json"),
        "history": [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in h.items()} for h in history],
        "archived": False,
    }


async def add(state: AppState, body: Any) -> RememberResult:
    """Written like `remember` (same key: updated; near-identical: merged), source manual."""
    fields = _fields(body, ("content", "key", "category", "tier", "importance", "confidence", "tags"), ("content",))
    return await state.service.remember(source="manual", client=CLIENT, **fields)


async def edit(state: AppState, memory_id: str, body: Any) -> RememberResult:
    fields = _fields(body, ("content", "key", "category", "importance", "confidence", "tags"))
    return await state.service.edit(memory_id, fields)


async def delete(state: AppState, ids: list[str]) -> ForgetResult:
    if any(len(i) > MAX_ID_CHARS for i in ids):
        raise InvalidInput(f"an id is longer than {MAX_ID_CHARS} characters; ids look like mem_12.")
    return await state.service.forget(ids)


async def delete_many(state: AppState, body: Any) -> ForgetResult:
    return await delete(state, _fields(body, ("ids",), ("ids",))["ids"])


async def export(state: AppState) -> str:
    return await export_json(state.store)


async def import_file(state: AppState, data: bytes, query: Mapping[str, str]) -> ImportSummary:
    """A file in any format the CLI's import reads (zip and gzip unpacked), in the format the
    query names or the one it looks like; the same summary as the import_memories tool."""
    chosen = query.get("format", "").strip() or "auto"
    if chosen not in ("auto", *FORMATS):
        raise InvalidInput(f"format {quoted(chosen)} is not one of auto, {', '.join(FORMATS)}.")
    if not data.strip():
        raise InvalidInput("the file is empty; nothing was imported.")
    return await import_bytes(state.store, data, None if chosen == "auto" else chosen)


async def profile(state: AppState) -> Profile:
    return await profiles.get_profile(state.store)


async def edit_profile(state: AppState, body: Any) -> Profile:
    fields = _fields(body, ("field", "action", "text"), ("field", "action", "text"))
    if fields["field"] not in _PROFILE_FIELDS:
        raise InvalidInput(f"field {quoted(fields['field'])} is not one of {', '.join(_PROFILE_FIELDS)}.")
    if fields["action"] not in ("add", "remove", "set"):
        raise InvalidInput(f"action {quoted(fields['action'])} is not one of add, remove, set.")
    return await profiles.edit_profile(state.store, fields["field"], fields["action"], fields["text"])


async def extraction_log(state: AppState, query: Mapping[str, str]) -> dict[str, Any]:
    entries: list[LogEntry] = await state.sieve.log(_int(query, "limit", 50, 1, state.config.limits.max_page))
    return {"entries": [e.model_dump(mode="json") for e in entries]}


async def stats(state: AppState) -> Stats:
    return await state.stats()
