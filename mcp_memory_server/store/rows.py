"""The rows the store reads, with names: one NamedTuple per row kind, its fields named and ordered
as the columns of the SELECT that reads it (the column lists below are made from the fields), so
that each kind is built in one place from the driver's row (both backends give the same values:
times as ISO 8601 text, JSON as text). Also ids, timestamps and the helpers that read one value."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from ..models import Memory, SessionState, Source, Tier
from .backend import Conn

__all__ = [
    "COLUMNS",
    "HISTORY_COLUMNS",
    "M_COLUMNS",
    "ORDER_COLUMNS",
    "SESSION_COLUMNS",
    "ArchivedRow",
    "Candidate",
    "HistoryRow",
    "MemoryRow",
    "Page",
    "ProfileRow",
    "SessionRow",
    "columns",
    "iso",
    "memory_id",
    "memory_row",
    "parse_id",
    "preview",
    "scalar",
    "scalars",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def memory_id(number: int) -> str:
    """The id of a namespace's memory `number` (`memories.number`, counted per namespace)."""
    return f"mem_{number}"


def parse_id(text: str) -> int | None:
    """`mem_12` -> 12, the memory's number in its namespace; anything else -> None (it cannot name
    a memory). Only the store turns a number into the memory it names, always within the
    namespace asking (B's mem_1 is not A's mem_1). An id names exactly one memory, written as
    `memory_id` writes it: `mem_012`, `mem_+12` or ` mem_12` name none (were `mem_001` read as
    `mem_1`, a forget of an id nobody was given would delete another memory)."""
    prefix, _, digits = text.partition("_")
    if prefix != "mem" or not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    number = int(digits)
    return number if memory_id(number) == text else None


class MemoryRow(NamedTuple):
    """A memory as stored: tags as JSON text, times as ISO 8601 text in UTC (they compare and sort
    as text). Kept as the row: a recall scores 50 of these and builds models for 5. `seq` is the
    database's own key, never shown; `number` is the memory's in its namespace, its id."""

    seq: int
    number: int
    content: str
    key: str | None
    category: str
    tier: Tier  # the schema's CHECK, and the writes, keep these to the model's values
    importance: float
    confidence: float
    source: Source
    tags: str
    session_id: str | None
    client: str | None
    created_at: str
    updated_at: str
    last_accessed: str
    access_count: int

    @property
    def id(self) -> str:
        return memory_id(self.number)

    def memory(self) -> Memory:
        return Memory(
            id=memory_id(self.number),
            content=self.content,
            key=self.key,
            category=self.category,
            tier=self.tier,
            importance=self.importance,
            confidence=self.confidence,
            source=self.source,
            tags=json.loads(self.tags),
            session_id=self.session_id,
            client=self.client,
            created_at=datetime.fromisoformat(self.created_at),
            updated_at=datetime.fromisoformat(self.updated_at),
            last_accessed=datetime.fromisoformat(self.last_accessed),
            access_count=self.access_count,
        )


# A MemoryRow from the values of `SELECT {COLUMNS}` as the driver gives them. Without `_make`'s
# length check, which costs as much again (a recall builds 50 of these): the select list is made
# from the fields, so the lengths agree.
memory_row = cast("Callable[[Iterable[Any]], MemoryRow]", functools.partial(tuple.__new__, MemoryRow))


class ArchivedRow(NamedTuple):
    """An archived memory: its row as it was live, and when and why it was archived."""

    memory: MemoryRow
    archived_at: str
    archive_reason: str

    @classmethod
    def of(cls, row: Sequence[Any]) -> ArchivedRow:
        """From a row of `SELECT {COLUMNS}, archived_at, archive_reason`."""
        width = len(MemoryRow._fields)
        return cls(memory_row(row[:width]), *row[width:])


class HistoryRow(NamedTuple):
    """An earlier value of a memory (memory_history and memory_history_archive are alike)."""

    memory_seq: int
    content: str
    key: str | None
    category: str
    importance: float
    confidence: float
    tags: str  # JSON
    source: str
    reason: str
    changed_at: str

    def value(self) -> dict[str, Any]:
        """The earlier value without its memory's seq, tags as a list: as `history` shows it."""
        value = self._asdict()
        del value["memory_seq"]
        return value | {"tags": json.loads(self.tags)}


class SessionRow(NamedTuple):
    """A session's working state; its context variables as a JSON object's text."""

    session_id: str
    current_topic: str | None
    context_variables: str
    turn_count: int
    last_emotion: str | None
    created_at: str
    updated_at: str

    def state(self) -> SessionState:
        return SessionState(
            session_id=self.session_id,
            current_topic=self.current_topic,
            context_variables=json.loads(self.context_variables),
            turn_count=self.turn_count,
            last_emotion=self.last_emotion,
            created_at=datetime.fromisoformat(self.created_at),
            updated_at=datetime.fromisoformat(self.updated_at),
        )


class ProfileRow(NamedTuple):
    """The stored profile of a namespace: the synthesised part and the manual edits, as JSON."""

    data: str
    manual: str
    stale: bool


def columns(kind: type[tuple[Any, ...]], alias: str = "") -> str:
    """The select list of a row kind: its fields, in order, optionally qualified by a table alias."""
    fields: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
    return ", ".join(alias + name for name in fields)


COLUMNS = columns(MemoryRow)
M_COLUMNS = columns(MemoryRow, "m.")
HISTORY_COLUMNS = columns(HistoryRow)
SESSION_COLUMNS = columns(SessionRow)
ORDER_COLUMNS = {
    "updated": "updated_at",
    "created": "created_at",
    "importance": "importance",
    "accessed": "last_accessed",
}


async def scalar(conn: Conn, sql: str, args: Any = ()) -> Any:
    """The one value a statement reads (a count, a maximum, a RETURNING seq); None without a row."""
    for row in await conn.execute_fetchall(sql, args):
        return row[0]
    return None


async def scalars(conn: Conn, sql: str, args: Any = ()) -> list[Any]:
    """The values of a statement that reads one column."""
    return [row[0] for row in await conn.execute_fetchall(sql, args)]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory found by a search stage, with its raw stage score (higher is better)."""

    row: MemoryRow
    raw: float

    @property
    def id(self) -> str:
        return memory_id(self.row.number)


@dataclass(frozen=True)
class Page:
    total: int
    items: list[Memory]
    last: tuple[Any, int] | None  # sort value and number of the last item, for the next cursor


_PREVIEW_CHARS = 80


def preview(content: str) -> str:
    """The start of a memory's content on one line, as a list of candidates or of archived
    memories shows it (80 characters at most)."""
    text = " ".join(content.split())
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"
