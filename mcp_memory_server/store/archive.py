"""The archive's statements: moving memories between the live tables and the archive (history
included, full-text row dropped and re-created), and the selections that cleanup and session
expiry decide on. Everything runs inside the caller's transaction (a `Tx`); what to archive is
decided in memory/lifecycle.py."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .draft_values import FTS_ROW
from .rows import scalar, scalars
from .tx import Tx

__all__ = [
    "Archived",
    "CleanupRow",
    "IdleSession",
    "WorkingMemory",
    "archive",
    "archived",
    "cleanup_rows",
    "count_use",
    "end_session",
    "idle_sessions",
    "key_holders",
    "live_count",
    "live_numbers",
    "promote",
    "restore",
    "working_memories",
]

_CHUNK = 500  # seqs or numbers per statement


def _chunks(values: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), _CHUNK):
        yield list(values[start : start + _CHUNK])


class Archived(NamedTuple):
    seq: int  # what `restore` takes
    number: int  # its id's
    key: str | None


class CleanupRow(NamedTuple):
    """A live memory that at least one cleanup rule selects, before the keep rules."""

    seq: int  # what `archive` takes
    number: int  # its id's
    content: str
    category: str
    importance: float
    access_count: int
    source: str
    created_at: str  # ISO 8601, UTC: compares as text
    last_accessed: str
    unused: bool
    low_importance: bool
    low_confidence: bool
    duplicate_of: int | None  # the number of the copy of the same content that stays


class IdleSession(NamedTuple):
    session_id: str
    updated_at: str  # its last activity, ISO 8601


class WorkingMemory(NamedTuple):
    seq: int  # what `archive` and `promote` take
    number: int  # its id's
    importance: float
    access_count: int


async def archive(tx: Tx, reasons: Mapping[int, str], at: str) -> list[int]:
    """Move live memories (seq -> reason) to the archive with their history, each keeping its
    number; their full-text rows go, and the change is logged so every process's index drops
    them. Returns the seqs moved."""
    sql = tx._sql
    moved: list[int] = []
    for chunk in _chunks(list(reasons)):
        statement, args = sql.archive_move(at, [(seq, reasons[seq]) for seq in chunk], tx.namespace)
        rows = sorted(await tx._conn.execute_fetchall(statement, args))
        if not rows:
            continue
        found = [seq for seq, _ in rows]
        # History first: memory_history's rows would otherwise go with their memory (ON DELETE CASCADE).
        for statement in (sql.archive_history, sql.delete_history, sql.delete_fts, sql.delete_memories):
            await tx._conn.execute(statement, (sql.array(found),))
        await tx.log(found)
        await tx.profile_forget([number for _, number in rows])  # it may cite or quote what is gone
        moved += found
    return moved


async def restore(tx: Tx, seqs: Sequence[int], at: str) -> None:
    """Move archived memories (by seq, from `archived`) back under their own seqs and numbers,
    hence their own ids, with their history and a new full-text row. Restoring counts as an
    access (last_accessed = `at`), so the next cleanup does not archive them again at once. The
    caller has made sure that their keys are free."""
    sql = tx._sql
    for chunk in _chunks(seqs):
        await tx._conn.execute(sql.restore_memories, (at, sql.array(chunk), tx.namespace))
        rows = list(await tx._conn.execute_fetchall(sql.restore_sources, (sql.array(chunk), tx.namespace)))
        if not rows:
            continue
        values: list[Any] = []
        found: list[int] = []
        for seq, content, key, tags, category in rows:
            values += (seq, *tx.index_row(content, key, json.loads(tags), category))
            found.append(seq)
        await tx._conn.execute(sql.insert_rows("memory_fts", FTS_ROW, 5, len(rows)), values)
        # History before its archived memory goes (ON DELETE CASCADE).
        for statement in (sql.restore_history, sql.delete_archived_history, sql.delete_archived):
            await tx._conn.execute(statement, (sql.array(found),))
        await tx.log(found)
        await tx.profile_stale()  # a restored memory may be about the user


async def archived(tx: Tx, numbers: Sequence[int]) -> list[Archived]:
    """Those of this namespace's memories `numbers` that are in its archive."""
    found: list[Archived] = []
    for chunk in _chunks(numbers):
        rows = await tx._conn.execute_fetchall(tx._sql.archived_keys, (tx._sql.array(chunk), tx.namespace))
        found += map(Archived._make, rows)
    return found


async def live_numbers(tx: Tx, numbers: Sequence[int]) -> set[int]:
    """Those of `numbers` that are live memories of this namespace."""
    found: set[int] = set()
    for chunk in _chunks(numbers):
        found.update(await scalars(tx._conn, tx._sql.live_numbers, (tx._sql.array(chunk), tx.namespace)))
    return found


async def key_holders(tx: Tx, keys: Sequence[str]) -> dict[str, int]:
    """key -> number of the live memory holding it, for those of `keys` that are taken."""
    if not keys:
        return {}
    rows = await tx._conn.execute_fetchall(tx._sql.key_holders, (tx.namespace, tx._sql.array(keys)))
    return dict(rows)  # key -> number


async def count_use(tx: Tx, number: int, at: str) -> None:
    """One use of the live memory `number` at `at` (ISO 8601): a write that found its value
    already there (the original format's `add` on an existing key is a trigger whatever it
    changes), so cleanup does not take it for an unused memory."""
    await tx._conn.execute(tx._sql.touch_number, (at, tx.namespace, number))


async def live_count(tx: Tx) -> int:
    return int(await scalar(tx._conn, tx._sql.live_count, (tx.namespace,)))


async def cleanup_rows(
    tx: Tx,
    *,
    unused_before: str,
    unused_accesses: int,
    stale_before: str,
    low_importance: float,
    unsure_before: str,
    low_confidence: float,
) -> list[CleanupRow]:
    """Live memories selected by a cleanup rule, oldest access first: unused (fewer accesses than
    `unused_accesses`, none since `unused_before`), low importance (below `low_importance`, no
    access since `stale_before`), low confidence (below `low_confidence`, no access since
    `unsure_before`), or a copy of another memory's content in the same category.

    Of each set of copies, the one that stays is the most important (then the most accessed, one
    holding a key, the newest); copies holding a key are never selected, as clients refer to the
    key. Only groups of more than one memory are ranked, so the window sorts few rows."""
    rows = await tx._conn.execute_fetchall(
        tx._sql.cleanup_rows,
        {
            "ns": tx.namespace,
            "accesses": unused_accesses,
            "unused_before": unused_before,
            "low": low_importance,
            "stale_before": stale_before,
            "unsure": low_confidence,
            "unsure_before": unsure_before,
        },
    )
    # SQLite gives the rules' results as 0 or 1, PostgreSQL as booleans.
    return [
        row._replace(
            unused=bool(row.unused), low_importance=bool(row.low_importance), low_confidence=bool(row.low_confidence)
        )
        for row in map(CleanupRow._make, rows)
    ]


async def idle_sessions(tx: Tx, before: str) -> list[IdleSession]:
    """The sessions with no activity since `before`."""
    rows = await tx._conn.execute_fetchall(tx._sql.idle_sessions, (tx.namespace, before))
    return [IdleSession._make(r) for r in rows]


async def working_memories(tx: Tx, session_id: str) -> list[WorkingMemory]:
    """A session's working-tier memories."""
    rows = await tx._conn.execute_fetchall(tx._sql.working_memories, (tx.namespace, session_id))
    return [WorkingMemory._make(r) for r in rows]


async def promote(tx: Tx, seqs: Sequence[int]) -> None:
    """Working memories become core (long-term); their value and timestamps stay as they are."""
    for chunk in _chunks(seqs):
        await tx._conn.execute(tx._sql.promote, (tx._sql.array(chunk), tx.namespace))
        await tx.log(chunk)
        await tx.profile_stale()  # core memories now: the profile may rest on them


async def end_session(tx: Tx, session_id: str) -> None:
    await tx._conn.execute(tx._sql.end_session, (tx.namespace, session_id))
    tx.log_session(session_id)
