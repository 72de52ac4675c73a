"""The statements of export and import (transfer/): one namespace read whole, and memories written
with the ids (numbers), times and history a file gives them, live or straight into the archive.
What a file holds and which of its items are written is decided in transfer/; these run inside the
caller's `Tx` (a `Store.snapshot()` for an export, a `Store.transaction()` for an import).
Imported memories always get new seqs (the database's own key, never in a file)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from ..models import Draft
from .draft_values import FTS_ROW, MEMORY_ROW, MEMORY_WIDTH
from .profile_scrub import PROFILE_KEY
from .rows import HISTORY_COLUMNS, ArchivedRow, HistoryRow, MemoryRow, SessionRow, memory_row, scalars
from .tx import Tx

__all__ = [
    "Exported",
    "Imported",
    "KeyHolder",
    "PresentMemory",
    "add_session",
    "exported",
    "held_hashes",
    "insert_imported",
    "key_holders_in_full",
    "new_numbers",
    "numbers_for",
    "present_memories",
]

_CHUNK = 500  # rows per multi-row INSERT: 17 parameters each stays far below SQLite's limit


class Exported(NamedTuple):
    """A namespace as an export holds it: the profile's own memory (key user.profile) left out."""

    memories: list[MemoryRow]
    history: list[HistoryRow]  # of those memories, oldest first
    archived: list[ArchivedRow]
    archived_history: list[HistoryRow]
    sessions: list[SessionRow]


class PresentMemory(NamedTuple):
    """A memory, live or archived, whose content an imported item has."""

    number: int
    category: str
    content_hash: str
    created_at: str


class KeyHolder(NamedTuple):
    """The memory, live first, holding a key an imported item brings."""

    key: str
    number: int
    content_hash: str
    client: str | None
    updated_at: str
    archived: bool
    changed_by: str | None  # the reason of its last change (memory_history), None if never changed


class Earlier(Protocol):
    """An earlier value of an imported memory."""

    @property
    def content(self) -> str: ...
    @property
    def key(self) -> str | None: ...
    @property
    def category(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def confidence(self) -> float: ...
    @property
    def tags(self) -> str: ...  # JSON
    @property
    def source(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def changed_at(self) -> str: ...


class Imported(Protocol):
    """A memory to write as a file gives it: `number` tells it apart (the number written is the one
    the caller maps it to), times as ISO 8601 text, `archived` (archived_at, archive_reason) for
    one that goes straight into the archive."""

    @property
    def number(self) -> int: ...
    @property
    def draft(self) -> Draft: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def created_at(self) -> str: ...
    @property
    def updated_at(self) -> str: ...
    @property
    def last_accessed(self) -> str: ...
    @property
    def access_count(self) -> int: ...
    @property
    def history(self) -> Sequence[Earlier]: ...
    @property
    def archived(self) -> tuple[str, str] | None: ...


# ---- export ----------------------------------------------------------------------------------


async def exported(tx: Tx) -> Exported:
    """This namespace's memories, archive and sessions (read inside one snapshot)."""
    conn, sql, ns = tx._conn, tx._sql, (tx.namespace, PROFILE_KEY)
    live = await conn.execute_fetchall(sql.export_memories, ns)
    history = await conn.execute_fetchall(sql.export_history, ns)
    archived = await conn.execute_fetchall(sql.export_archived, ns)
    archived_history = await conn.execute_fetchall(sql.export_archived_history, ns)
    sessions = await conn.execute_fetchall(sql.export_sessions, (tx.namespace,))
    return Exported(
        memories=[memory_row(r) for r in live],
        history=[HistoryRow._make(r) for r in history],
        archived=[ArchivedRow.of(r) for r in archived],
        archived_history=[HistoryRow._make(r) for r in archived_history],
        sessions=[SessionRow._make(r) for r in sessions],
    )


# ---- import ----------------------------------------------------------------------------------


async def present_memories(tx: Tx, digests: Iterable[str]) -> list[PresentMemory]:
    """The memories here, live or archived, whose content has one of `digests` (fingerprints)."""
    rows = await tx._conn.execute_fetchall(
        tx._sql.present_memories, {"ns": tx.namespace, "digests": tx._sql.array(sorted(digests))}
    )
    return [PresentMemory._make(r) for r in rows]


async def held_hashes(tx: Tx, digests: Iterable[str]) -> set[str]:
    """Those of `digests` that a memory here, live or archived, has (in any category)."""
    found = await scalars(
        tx._conn, tx._sql.held_hashes, {"ns": tx.namespace, "digests": tx._sql.array(sorted(digests))}
    )
    return set(found)


async def key_holders_in_full(tx: Tx, keys: Iterable[str]) -> dict[str, KeyHolder]:
    """key -> the memory holding it here, of those of `keys` that are taken: the live one when
    both a live and an archived memory hold it."""
    rows = await tx._conn.execute_fetchall(
        tx._sql.key_holders_in_full, {"ns": tx.namespace, "keys": tx._sql.array(sorted(keys))}
    )
    holders: dict[str, KeyHolder] = {}
    for row in map(KeyHolder._make, rows):
        holders.setdefault(row.key, row._replace(archived=bool(row.archived)))  # the live one comes first
    return holders


async def numbers_for(tx: Tx, numbers: Sequence[int]) -> dict[int, int]:
    """File number -> number to write in this namespace: its own when no memory here, live or
    archived, holds it (a file exported here and imported back keeps every id); otherwise one
    never handed out here. Numbers kept are never handed out again afterwards."""
    if not numbers:
        return {}
    taken = set(await scalars(tx._conn, tx._sql.taken_numbers, {"ns": tx.namespace, "numbers": tx._sql.array(numbers)}))
    kept = [n for n in numbers if n not in taken]
    if kept:
        await tx._conn.execute(tx._sql.numbers_after, (tx.namespace, max(kept)))
    moved = [n for n in numbers if n in taken]
    first = await tx._sql.take_numbers(tx._conn, tx.namespace, len(moved)) if moved else 0
    return {n: n for n in kept} | {n: first + i for i, n in enumerate(moved)}


async def new_numbers(tx: Tx, count: int) -> list[int]:
    """`count` numbers never handed out in this namespace, taken now."""
    if count <= 0:
        return []
    first = await tx._sql.take_numbers(tx._conn, tx.namespace, count)
    return list(range(first, first + count))


async def add_session(tx: Tx, session: SessionRow) -> bool:
    """Add a session unless this namespace has one of that id (it is then left as it is);
    returns whether it was added."""
    added = await tx._conn.execute_fetchall(tx._sql.add_session, (tx.namespace, *session))
    if not list(added):
        return False
    tx.log_session(session.session_id)
    return True


async def insert_imported(
    tx: Tx,
    records: Sequence[Imported],
    numbers: Mapping[int, int],
    step: Callable[[int], Awaitable[None]] | None = None,
    *,
    arrived: str,
) -> None:
    """Write `records` as new memories under the numbers `numbers` maps theirs to (from
    `numbers_for` or `new_numbers`), each with a new seq: live ones with their full-text rows and
    history, archived ones with theirs; `step` hears of every chunk written. Live ones arrived
    at `arrived` (ISO 8601): cleanup counts their time unused from then at the earliest, whatever
    their times where they came from. The change is logged, and the profile goes stale when a
    live memory came."""
    if not records:
        return
    ns, conn, sql = tx.namespace, tx._conn, tx._sql
    # We hold the write lock: consecutive new seqs, in the file's order.
    first = await sql.next_seqs(conn, len(records))
    seqs = {r.number: first + i for i, r in enumerate(records)}
    for archived in (False, True):
        chosen = [r for r in records if (r.archived is not None) == archived]
        table, history = ("memory_archive", "memory_history_archive") if archived else ("memories", "memory_history")
        extra = ", archived_at, archive_reason" if archived else ""
        for start in range(0, len(chosen), _CHUNK):
            chunk = chosen[start : start + _CHUNK]
            values: list[Any] = []
            for r in chunk:
                d = r.draft
                tags = json.dumps(list(d.tags), ensure_ascii=False)
                values += (seqs[r.number], numbers[r.number], ns, d.content, d.key, d.category, d.tier)
                values += (d.importance, d.confidence)
                values += (d.source, tags, d.session_id, d.client, r.content_hash, r.created_at, r.updated_at)
                values += (r.last_accessed, r.access_count, *(r.archived or ()))
            width = MEMORY_WIDTH + 2 * archived
            await conn.execute(sql.insert_rows(table, MEMORY_ROW + extra, width, len(chunk)), values)
            if not archived:
                await conn.execute(sql.mark_arrived, (arrived, sql.array([seqs[r.number] for r in chunk])))
                fts: list[Any] = []
                for r in chunk:
                    fts += (seqs[r.number], *tx.index_row(r.draft.content, r.draft.key, r.draft.tags, r.draft.category))
                await conn.execute(sql.insert_rows("memory_fts", FTS_ROW, 5, len(chunk)), fts)
            old = [(seqs[r.number], h) for r in chunk for h in r.history]
            for part in range(0, len(old), _CHUNK):
                rows = old[part : part + _CHUNK]
                await conn.execute(
                    sql.insert_rows(history, HISTORY_COLUMNS, 10, len(rows)),
                    [
                        v
                        for seq, h in rows
                        for v in (
                            seq,
                            h.content,
                            h.key,
                            h.category,
                            h.importance,
                            h.confidence,
                            h.tags,
                            h.source,
                            h.reason,
                            h.changed_at,
                        )
                    ],
                )
            if step is not None:
                await step(len(chunk))
    # AUTOINCREMENT must never hand out an imported seq again, archived ones included: restore
    # brings them back under their own seq.
    await sql.seqs_after(conn, first + len(records) - 1)
    await tx.log(list(seqs.values()))
    if any(r.archived is None for r in records):
        await tx.profile_stale()
