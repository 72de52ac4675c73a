"""The JSON export format (version 1) and the checks an imported file passes before anything is
written: every item as strictly as `remember` checks its arguments (memory/validate.py, secrets withheld),
and every error naming the item and the field, such as `memories[3].importance`.

    {"format": "mcp-memory-server", "version": 1, "exported_at": ISO 8601, "namespace": "",
     "memories": [memory], "archived": [memory + archived_at, archive_reason],
     "sessions": [session], "profile_edits": {...}}

    memory = {id, content, key, category, tier, importance, confidence, source, tags,
              session_id, client, created_at, updated_at, last_accessed, access_count,
              history: [{content, key, category, importance, confidence, tags, source,
                         reason, changed_at}]}  (oldest first)

What the format holds and leaves out, and why, is in transfer/json_transfer.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from ..config.config import Config
from ..config.limits import MAX_PROFILE_TEXT_CHARS, MAX_TOPIC_CHARS, MAX_VARIABLES, MAX_VARIABLES_JSON
from ..errors import InvalidInput, SecretRefused
from ..memory import validate
from ..models import Draft
from ..profile.profile import FIELDS
from ..store.profile_scrub import PROFILE_KEY
from ..store.rows import SessionRow, iso, parse_id
from ..text.screening import PersonalNumbers
from ..text.tokens import fingerprint
from .limits import check_items

__all__ = ["FORMAT", "VERSION", "Document", "EarlierValue", "Record", "SessionRow", "read"]

# The export format's name, written into every file: it stays as the first files were written.
FORMAT = "mcp-memory-server"
VERSION = 1
_TOP = {"format", "version", "exported_at", "namespace", "memories", "archived", "sessions", "profile_edits"}
_MEMORY = {
    "id",
    "content",
    "key",
    "category",
    "tier",
    "importance",
    "confidence",
    "source",
    "tags",
    "session_id",
    "client",
    "created_at",
    "updated_at",
    "last_accessed",
    "access_count",
    "history",
}
_ARCHIVED = _MEMORY | {"archived_at", "archive_reason"}
_HISTORY = {"content", "key", "category", "importance", "confidence", "tags", "source", "reason", "changed_at"}
_SESSION = {
    "session_id",
    "current_topic",
    "context_variables",
    "turn_count",
    "last_emotion",
    "created_at",
    "updated_at",
}
_WORD = re.compile(r"^[a-z][a-z0-9_]{0,39}$")  # a history reason, an emotion
_T = TypeVar("_T")
_TYPE_NAMES = {
    "str": "a string",
    "int": "a whole number",
    "int or float": "a number",
    "list": "a list",
    "dict": "a JSON object",
}


@dataclass(frozen=True, slots=True)
class EarlierValue:
    """An earlier value of a memory, in the columns of memory_history (tags as JSON)."""

    content: str
    key: str | None
    category: str
    importance: float
    confidence: float
    tags: str
    source: str
    reason: str
    changed_at: str


@dataclass(frozen=True, slots=True)
class Record:
    """One memory of the file, checked: `where` names it in messages (memories[3])."""

    where: str
    number: int  # of its id in the file (mem_<number>)
    draft: Draft
    content_hash: str
    created_at: str
    updated_at: str
    last_accessed: str
    access_count: int
    history: tuple[EarlierValue, ...]
    archived: tuple[str, str] | None  # (archived_at, archive_reason) for an archived memory


@dataclass(frozen=True)
class Document:
    namespace: str  # the namespace it was exported from (it imports into the store's own)
    memories: list[Record]
    archived: list[Record]
    sessions: list[SessionRow]
    profile_edits: dict[str, Any]
    withheld: int  # items stored with secrets taken out of them
    refused: list[str]  # items (or their earlier values) left out: little was there besides a secret


def read(text: str, config: Config) -> Document:
    """A file's text, checked from end to end; raises InvalidInput on the first problem."""
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"the file is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    if not isinstance(top, dict) or "format" not in top:
        raise InvalidInput(
            f'the file is not an {FORMAT} export (a JSON object with "format": "{FORMAT}"); '
            "JSON from other tools cannot be imported with --format json."
        )
    if top["format"] != FORMAT:
        raise InvalidInput(f"the file's format is {top['format']!r}, not {FORMAT!r}.")
    version = top.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidInput(f"the file's version is {version!r}; it should be a whole number such as {VERSION}.")
    if version > VERSION:
        raise InvalidInput(
            f"the file is version {version}, written by a newer jiyi; this one reads version "
            f"{VERSION}. Upgrade jiyi to import it."
        )
    _fields(top, _TOP, {"format", "version", "memories"}, "the file")
    check_items(len(_list(top, "memories", "")) + len(_list(top, "archived", "")), config)
    reader = _Reader(config)
    memories = [r for i, m in enumerate(_list(top, "memories", "")) if (r := reader.memory(m, f"memories[{i}]", False))]
    archived = [r for i, m in enumerate(_list(top, "archived", "")) if (r := reader.memory(m, f"archived[{i}]", True))]
    _unique([(r.number, r.where) for r in memories + archived], "id")
    _unique([(r.draft.key, r.where) for r in memories if r.draft.key is not None], "key")
    personal = config.limits.personal_numbers
    sessions = [_session(item, f"sessions[{i}]", personal) for i, item in enumerate(_list(top, "sessions", ""))]
    _unique([(s.session_id, f"sessions[{i}]") for i, s in enumerate(sessions)], "session_id")
    namespace = top.get("namespace", "")
    if not isinstance(namespace, str):
        raise InvalidInput("namespace must be a string.")
    edits = reader.profile_edits(top.get("profile_edits", {}))
    return Document(namespace, memories, archived, sessions, edits, reader.withheld, reader.refused)


def _fields(item: object, known: set[str], required: set[str], where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise InvalidInput(f"{where} must be a JSON object, not {type(item).__name__}.")
    unknown = set(item) - known
    if unknown:
        raise InvalidInput(f"{where} has unknown field(s) {sorted(unknown)}; it may have {sorted(known)}.")
    missing = required - set(item)
    if missing:
        raise InvalidInput(f"{where} lacks field(s) {sorted(missing)}.")
    return item


def _list(item: Mapping[str, Any], name: str, where: str) -> list[Any]:
    value = item.get(name, [])
    if not isinstance(value, list):
        raise InvalidInput(f"{where + '.' if where else ''}{name} must be a list.")
    return value


def _unique(values: list[tuple[object, str]], field: str) -> None:
    """(value, item) pairs: two items must not share the value."""
    seen: dict[object, str] = {}
    for value, where in values:
        if value in seen:
            shown = f"mem_{value}" if field == "id" else repr(value)
            raise InvalidInput(f"{where}.{field}: {shown} is also the {field} of {seen[value]}.")
        seen[value] = where


def _check(where: str, field: str, check: Callable[[], _T]) -> _T:
    """`check()`, its InvalidInput prefixed with the item and field it is about."""
    try:
        return check()
    except SecretRefused as exc:
        raise SecretRefused(f"{where}.{field}: {exc}") from None
    except (InvalidInput, TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}.{field}: {exc}") from None


def _typed(value: Any, kind: type | tuple[type, ...], where: str, field: str, optional: bool = False) -> Any:
    if (value is None and optional) or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    expected = _TYPE_NAMES.get(names, names) + (" or null" if optional else "")
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise InvalidInput(f"{where}{'.' + field if field else ''} must be {expected}, not {shown}.")


def _time(value: Any, where: str, field: str) -> str:
    """ISO 8601 with a time zone, as the store writes it (UTC, microseconds)."""
    _typed(value, str, where, field)
    moment = _check(where, field, lambda: datetime.fromisoformat(value))
    if moment.tzinfo is None:
        raise InvalidInput(f"{where}.{field}: {value!r} has no time zone; write it as 2026-03-01T08:00:00+00:00.")
    return iso(moment)


def _count(value: Any, where: str, field: str) -> int:
    _typed(value, int, where, field)
    if value < 0:
        raise InvalidInput(f"{where}.{field} must not be negative, got {value}.")
    return int(value)


def _word(value: Any, where: str, field: str, optional: bool = False) -> str | None:
    if _typed(value, str, where, field, optional) is not None and not _WORD.match(value):
        raise InvalidInput(f"{where}.{field}: {value!r} is not a lower_snake word of at most 40 characters.")
    return value  # type: ignore[no-any-return]


def _named(value: _T, personal: PersonalNumbers) -> _T:
    """`value` once screened as a name (refused whole when it holds a secret): what a check takes."""
    validate.screen_name(value, "it", personal)
    return value


def _session(item: Any, where: str, personal: PersonalNumbers) -> SessionRow:
    """A session as stored: its id and variables' names refused whole when they hold a secret, its
    topic and variables' text values screened as memories are."""
    fields = _fields(item, _SESSION, _SESSION, where)
    raw_sid = _typed(fields["session_id"], str, where, "session_id")
    sid = _check(where, "session_id", lambda: validate.session_id(_named(raw_sid, personal)))
    if sid is None:
        raise InvalidInput(f"{where}.session_id is empty.")
    topic = _typed(fields["current_topic"], str, where, "current_topic", optional=True)
    if topic is not None and len(topic) > MAX_TOPIC_CHARS:
        raise InvalidInput(f"{where}.current_topic is {len(topic)} characters; the limit is {MAX_TOPIC_CHARS}.")
    if topic:
        topic = validate.screen(topic, personal, field=f"{where}.current_topic")[0]
    variables = _typed(fields["context_variables"], dict, where, "context_variables")
    if len(variables) > MAX_VARIABLES:
        raise InvalidInput(f"{where}.context_variables: {len(variables)} variables; the limit is {MAX_VARIABLES}.")
    if len(json.dumps(variables, ensure_ascii=False)) <= MAX_VARIABLES_JSON:  # else refused just below
        variables = validate.screen_variables(variables, personal, field=f"{where}.context_variables")
    encoded = json.dumps(variables, ensure_ascii=False)
    emotion = _word(fields["last_emotion"], where, "last_emotion", optional=True)
    if len(encoded) > MAX_VARIABLES_JSON:
        raise InvalidInput(
            f"{where}.context_variables take {len(encoded):,} characters of JSON; the limit is {MAX_VARIABLES_JSON:,}."
        )
    return SessionRow(
        session_id=sid,
        current_topic=topic,
        context_variables=encoded,
        turn_count=_count(fields["turn_count"], where, "turn_count"),
        last_emotion=_check(where, "last_emotion", lambda: _named(emotion, personal)),
        created_at=_time(fields["created_at"], where, "created_at"),
        updated_at=_time(fields["updated_at"], where, "updated_at"),
    )


def _get(item: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str, optional: bool = False) -> Any:
    """Field `name` of a checked item, of the JSON type expected."""
    return _typed(item[name], kind, where, name, optional)


class _Reader:
    """Checks items one by one, counting secrets withheld and items refused on the way."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.personal = config.limits.personal_numbers
        self.withheld = 0
        self.refused: list[str] = []

    def _content(self, item: Mapping[str, Any], where: str) -> str | None:
        """The text with its secrets withheld, or None when it is essentially a secret."""
        text = _get(item, "content", str, where)
        limit = self.config.limits.max_content_chars
        cleaned = _check(where, "content", lambda: validate.text(text, field="content", limit=limit))
        try:
            screened, withheld = validate.screen(cleaned, self.personal)
        except SecretRefused:
            self.refused.append(where)
            return None
        self.withheld += bool(withheld)
        return screened

    def _value(self, item: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The fields a memory shares with its earlier values, checked and normalised."""
        key = _get(item, "key", str, where, optional=True)
        category = _get(item, "category", str, where)
        importance = _get(item, "importance", (int, float), where)
        confidence = _get(item, "confidence", (int, float), where)
        source = _get(item, "source", str, where)
        tags = _get(item, "tags", list, where)
        for tag in tags:
            _typed(tag, str, where, "tags[]")
        named = self.personal  # names are refused whole when they hold a secret, and before any check quotes them
        return {
            "key": _check(where, "key", lambda: validate.key(_named(key, named))),
            "category": _check(where, "category", lambda: validate.category(_named(category, named))),
            "importance": _check(where, "importance", lambda: validate.unit(importance, "importance")),
            "confidence": _check(where, "confidence", lambda: validate.unit(confidence, "confidence")),
            "source": _check(where, "source", lambda: validate.source(_named(source, named))),
            "tags": _check(where, "tags", lambda: validate.tags([_named(t, named) for t in tags], self.config)),
        }

    def memory(self, item: Any, where: str, archived: bool) -> Record | None:
        """A memory of the file, or None when it is left out as essentially a secret."""
        known = _ARCHIVED if archived else _MEMORY
        fields = _fields(item, known, known - {"history"}, where)
        ident = _get(fields, "id", str, where)
        number = parse_id(ident)
        if number is None or number < 1:
            raise InvalidInput(f"{where}.id: {ident!r} is not a memory id such as mem_12.")
        value = self._value(fields, where)
        if value["key"] == PROFILE_KEY:
            raise InvalidInput(
                f"{where}.key: {PROFILE_KEY} is the profile's own memory, synthesised again from the others; "
                "leave it out (manual edits of the profile go in profile_edits)."
            )
        tier = _get(fields, "tier", str, where)
        session = _get(fields, "session_id", str, where, optional=True)
        client = _get(fields, "client", str, where, optional=True)
        draft = Draft(
            content="",
            tier=_check(where, "tier", lambda: validate.tier(tier)),
            session_id=_check(where, "session_id", lambda: validate.session_id(_named(session, self.personal))),
            client=_check(where, "client", lambda: validate.client_name(_named(client, self.personal))),
            **value,
        )
        history = [self._history(old, f"{where}.history[{i}]") for i, old in enumerate(_list(fields, "history", where))]
        stamps = {name: _time(fields[name], where, name) for name in ("created_at", "updated_at", "last_accessed")}
        access_count = _count(fields["access_count"], where, "access_count")
        reason = _reason(fields, where, self.personal) if archived else ""
        archive = (_time(fields["archived_at"], where, "archived_at"), reason) if archived else None
        content = self._content(fields, where)
        if content is None:
            return None
        return Record(
            where=where,
            number=number,
            draft=draft.model_copy(update={"content": content}),
            content_hash=fingerprint(content),
            access_count=access_count,
            history=tuple(row for row in history if row is not None),
            archived=archive,
            **stamps,
        )

    def _history(self, item: Any, where: str) -> EarlierValue | None:
        fields = _fields(item, _HISTORY, _HISTORY, where)
        value = self._value(fields, where)
        word = _word(fields["reason"], where, "reason") or ""
        reason = _check(where, "reason", lambda: _named(word, self.personal))
        changed_at = _time(fields["changed_at"], where, "changed_at")
        content = self._content(fields, where)
        if content is None:
            return None
        tags = json.dumps(list(value.pop("tags")), ensure_ascii=False)
        return EarlierValue(content=content, tags=tags, reason=reason, changed_at=changed_at, **value)

    def profile_edits(self, value: Any) -> dict[str, Any]:
        """Manual edits of the profile in edit_profile's shape; texts as edit_profile takes them."""
        edits = _fields(value, {"summary", "language_preferences", "added", "removed"}, set(), "profile_edits")

        def text(raw: Any, where: str) -> str | None:
            words = " ".join(_typed(raw, str, where, "").split())
            if not words or len(words) > MAX_PROFILE_TEXT_CHARS:
                raise InvalidInput(f"{where} must be 1-{MAX_PROFILE_TEXT_CHARS} characters.")
            try:
                return validate.screen(words, self.personal, field=where)[0]
            except SecretRefused:
                self.refused.append(where)
                return None

        result: dict[str, Any] = {}
        for field in ("summary", "language_preferences"):
            if edits.get(field) is not None:
                result[field] = text(edits[field], f"profile_edits.{field}")
        for part in ("added", "removed"):
            lists = _fields(edits.get(part, {}), set(FIELDS), set(), f"profile_edits.{part}")
            for field in lists:
                where = f"profile_edits.{part}.{field}"
                texts = [
                    text(raw, f"{where}[{i}]") for i, raw in enumerate(_list(lists, field, f"profile_edits.{part}"))
                ]
                result.setdefault(part, {})[field] = list(dict.fromkeys(t for t in texts if t))
        return {k: v for k, v in result.items() if v}


def _reason(item: Mapping[str, Any], where: str, personal: PersonalNumbers) -> str:
    text = _get(item, "archive_reason", str, where).strip()
    if not text or len(text) > 200:
        raise InvalidInput(f"{where}.archive_reason must be 1-200 characters.")
    return validate.screen(text, personal, field=f"{where}.archive_reason")[0]
