"""Row mapping shared by the store and its transactions: column lists, ids, timestamps and the
filter clauses every listing and search applies."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..models import Memory

__all__ = [
    "BM25",
    "COLUMNS",
    "M_COLUMNS",
    "ORDER_COLUMNS",
    "Candidate",
    "Page",
    "filters",
    "iso",
    "memory_id",
    "parse_id",
    "row_to_memory",
    "utcnow",
]

COLUMNS = (
    "seq, content, key, category, tier, importance, confidence, source, tags, session_id, client, "
    "created_at, updated_at, last_accessed, access_count"
)
M_COLUMNS = ", ".join("m." + c.strip() for c in COLUMNS.split(","))
BM25 = "bm25(memory_fts, 1.0, 1.0, 1.0, 0.5)"  # content, key, tags, category
ORDER_COLUMNS = {
    "updated": "updated_at",
    "created": "created_at",
    "importance": "importance",
    "accessed": "last_accessed",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def memory_id(seq: int) -> str:
    return f"mem_{seq}"


def parse_id(text: str) -> int | None:
    """`mem_12` -> 12; anything else -> None (it cannot name a memory)."""
    prefix, _, number = text.strip().partition("_")
    if prefix != "mem" or not number.isascii() or not number.isdigit() or len(number) > 18:
        return None
    return int(number)


def row_to_memory(row: Sequence[Any]) -> Memory:
    return Memory(
        id=memory_id(row[0]),
        content=row[1],
        key=row[2],
        category=row[3],
        tier=row[4],
        importance=row[5],
        confidence=row[6],
        source=row[7],
        tags=json.loads(row[8]),
        session_id=row[9],
        client=row[10],
        created_at=datetime.fromisoformat(row[11]),
        updated_at=datetime.fromisoformat(row[12]),
        last_accessed=datetime.fromisoformat(row[13]),
        access_count=row[14],
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory row (in `COLUMNS` order) found by a search stage, with its raw stage score (higher
    is better). Kept as the plain row: a recall scores 50 of these and builds models for 5."""

    row: tuple[Any, ...]
    raw: float

    @property
    def id(self) -> str:
        return memory_id(self.row[0])


@dataclass(frozen=True)
class Page:
    total: int
    items: list[Memory]
    last: tuple[Any, int] | None  # sort value and seq of the last item, for the next cursor


def filters(category: str | None, tags: Sequence[str] | None) -> tuple[str, list[Any]]:
    sql, args = "", []
    if category is not None:
        sql += " AND m.category = ?"
        args.append(category)
    if tags:
        # every requested tag must be present
        sql += (
            " AND NOT EXISTS (SELECT 1 FROM json_each(?) AS want"
            " WHERE want.value NOT IN (SELECT value FROM json_each(m.tags)))"
        )
        args.append(json.dumps(list(tags), ensure_ascii=False))
    return sql, args
