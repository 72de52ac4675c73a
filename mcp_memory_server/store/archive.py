"""The archive's statements: moving memories between the live tables and the archive (history
included, full-text row dropped and re-created), and the selections that cleanup and session
expiry decide on. Everything runs inside the caller's transaction (a `Tx`); what to archive is
decided in memory/lifecycle.py."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .draft_values import MEMORY_ROW
from .rows import HISTORY_COLUMNS, columns, scalar, scalars
from .tx import Tx

__all__ = [
    "Archived",
    "CleanupRow",
    "IdleSession",
    "WorkingMemory",
    "archive",
    "archived",
    "cleanup_rows",
    "end_session",
    "idle_sessions",
    "key_holders",
    "live_count",
    "live_seqs",
    "promote",
    "restore",
    "working_memories",
]

_MEMORY = MEMORY_ROW  # every column of a memory: the archive has them all, and two more
_CHUNK = 500  # seqs per statement: a few thousand parameters at most


def _chunks(seqs: Sequence[int]) -> Iterator[tuple[list[int], str]]:
    """The seqs in chunks, each with its `?, ?, ...` placeholders."""
    for start in range(0, len(seqs), _CHUNK):
        chunk = list(seqs[start : start + _CHUNK])
        yield chunk, ",".join("?" * len(chunk))


class Archived(NamedTuple):
    seq: int
    key: str | None


class CleanupRow(NamedTuple):
    """A live memory that at least one cleanup rule selects, before the keep rules."""

    seq: int
    content: str
    category: str
    importance: float
    access_count: int
    source: str
    created_at: str  # ISO 8601, UTC: compares as text
    last_accessed: str
    unused: bool
    low_importance: bool
    duplicate_of: int | None  # the copy of the same content that stays


class IdleSession(NamedTuple):
    session_id: str
    updated_at: str  # its last activity, ISO 8601


class WorkingMemory(NamedTuple):
    seq: int
    importance: float
    access_count: int


async def archive(tx: Tx, reasons: Mapping[int, str], at: str) -> list[int]:
    """Move live memories (seq -> reason) to the archive with their history; their full-text rows
    go, and the change is logged so every process's index drops them. Returns the seqs moved."""
    moved: list[int] = []
    for chunk, marks in _chunks(list(reasons)):
        why = " ".join("WHEN ? THEN ?" for _ in chunk)
        found = sorted(
            await scalars(
                tx._conn,
                f"INSERT INTO memory_archive ({_MEMORY}, archived_at, archive_reason)"
                f" SELECT {_MEMORY}, ?, CASE seq {why} END"
                f" FROM memories WHERE seq IN ({marks}) AND +namespace = ? RETURNING seq",
                (at, *(v for seq in chunk for v in (seq, reasons[seq])), *chunk, tx.namespace),
            )
        )
        if not found:
            continue
        marks = ",".join("?" * len(found))
        # History first: memory_history's rows would otherwise go with their memory (ON DELETE CASCADE).
        await tx._conn.execute(
            f"INSERT INTO memory_history_archive ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history"
            f" WHERE memory_seq IN ({marks}) ORDER BY seq",
            found,
        )
        await tx._conn.execute(f"DELETE FROM memory_history WHERE memory_seq IN ({marks})", found)
        await tx._conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", found)
        await tx._conn.execute(f"DELETE FROM memories WHERE seq IN ({marks})", found)
        await tx.log(found)
        await tx.profile_forget(found)  # it may cite or quote what is gone
        moved += found
    return moved


async def restore(tx: Tx, seqs: Sequence[int], at: str) -> None:
    """Move archived memories back under their own seqs, with their history and a new full-text
    row. Restoring counts as an access (last_accessed = `at`), so the next cleanup does not
    archive them again at once. The caller has made sure that their keys are free."""
    columns = _MEMORY.replace("last_accessed", "?")
    for chunk, marks in _chunks(seqs):
        await tx._conn.execute(
            f"INSERT INTO memories ({_MEMORY}) SELECT {columns} FROM memory_archive"
            f" WHERE seq IN ({marks}) AND +namespace = ?",
            (at, *chunk, tx.namespace),
        )
        rows = list(
            await tx._conn.execute_fetchall(
                "SELECT seq, content, key, tags, category FROM memory_archive"
                f" WHERE seq IN ({marks}) AND +namespace = ?",
                (*chunk, tx.namespace),
            )
        )
        if not rows:
            continue
        values: list[Any] = []
        found: list[int] = []
        for seq, content, key, tags, category in rows:
            values += (seq, *tx.index_row(content, key, json.loads(tags), category))
            found.append(seq)
        await tx._conn.execute(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows)),
            values,
        )
        marks = ",".join("?" * len(found))
        await tx._conn.execute(
            f"INSERT INTO memory_history ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history_archive"
            f" WHERE memory_seq IN ({marks}) ORDER BY seq",
            found,
        )
        await tx._conn.execute(f"DELETE FROM memory_history_archive WHERE memory_seq IN ({marks})", found)
        await tx._conn.execute(f"DELETE FROM memory_archive WHERE seq IN ({marks})", found)
        await tx.log(found)
        await tx.profile_stale()  # a restored memory may be about the user


async def archived(tx: Tx, seqs: Sequence[int]) -> list[Archived]:
    """Those of `seqs` in this namespace's archive."""
    found: list[Archived] = []
    for chunk, marks in _chunks(seqs):
        rows = await tx._conn.execute_fetchall(
            f"SELECT {columns(Archived)} FROM memory_archive WHERE seq IN ({marks}) AND +namespace = ?",
            (*chunk, tx.namespace),
        )
        found += map(Archived._make, rows)
    return found


async def live_seqs(tx: Tx, seqs: Sequence[int]) -> set[int]:
    """Those of `seqs` that are live memories of this namespace."""
    found: set[int] = set()
    for chunk, marks in _chunks(seqs):
        found.update(
            await scalars(
                tx._conn, f"SELECT seq FROM memories WHERE seq IN ({marks}) AND +namespace = ?", (*chunk, tx.namespace)
            )
        )
    return found


async def key_holders(tx: Tx, keys: Sequence[str]) -> dict[str, int]:
    """key -> seq of the live memory holding it, for those of `keys` that are taken."""
    if not keys:
        return {}
    rows = await tx._conn.execute_fetchall(
        "SELECT key, seq FROM memories WHERE namespace = ? AND key IN (SELECT value FROM json_each(?))",
        (tx.namespace, json.dumps(list(keys), ensure_ascii=False)),
    )
    return dict(rows)  # key -> seq


async def live_count(tx: Tx) -> int:
    return int(await scalar(tx._conn, "SELECT count(*) FROM memories WHERE namespace = ?", (tx.namespace,)))


async def cleanup_rows(
    tx: Tx, *, unused_before: str, unused_accesses: int, stale_before: str, low_importance: float
) -> list[CleanupRow]:
    """Live memories selected by a cleanup rule, oldest access first: unused (fewer accesses than
    `unused_accesses`, none since `unused_before`), low importance (below `low_importance`, no
    access since `stale_before`), or a copy of another memory's content in the same category.

    Of each set of copies, the one that stays is the most important (then the most accessed, one
    holding a key, the newest); copies holding a key are never selected, as clients refer to the
    key. Only groups of more than one memory are ranked, so the window sorts few rows."""
    rows = await tx._conn.execute_fetchall(
        f"""WITH copies AS (
               SELECT category, content_hash FROM memories WHERE namespace = :ns
               GROUP BY category, content_hash HAVING count(*) > 1
           ), keepers AS (
               SELECT m.seq, first_value(m.seq) OVER (
                   PARTITION BY m.category, m.content_hash
                   ORDER BY m.importance DESC, m.access_count DESC, m.key IS NULL, m.updated_at DESC, m.seq DESC
               ) AS keeper
               FROM copies c JOIN memories m
               ON m.namespace = :ns AND m.category = c.category AND m.content_hash = c.content_hash
           )
           SELECT {columns(CleanupRow)} FROM (
               SELECT m.seq, m.content, m.category, m.importance, m.access_count, m.source, m.created_at,
                   m.last_accessed,
                   m.access_count < :accesses AND m.last_accessed < :unused_before AS unused,
                   m.importance < :low AND m.last_accessed < :stale_before AS low_importance,
                   CASE WHEN m.key IS NULL AND k.keeper != m.seq THEN k.keeper END AS duplicate_of
               FROM memories m LEFT JOIN keepers k ON k.seq = m.seq
               WHERE m.namespace = :ns
           ) AS selected WHERE unused OR low_importance OR duplicate_of IS NOT NULL
           ORDER BY last_accessed, seq""",
        {
            "ns": tx.namespace,
            "accesses": unused_accesses,
            "unused_before": unused_before,
            "low": low_importance,
            "stale_before": stale_before,
        },
    )
    # SQLite gives the two rules' results as 0 or 1, PostgreSQL as booleans.
    return [
        row._replace(unused=bool(row.unused), low_importance=bool(row.low_importance))
        for row in map(CleanupRow._make, rows)
    ]


async def idle_sessions(tx: Tx, before: str) -> list[IdleSession]:
    """The sessions with no activity since `before`."""
    rows = await tx._conn.execute_fetchall(
        f"SELECT {columns(IdleSession)} FROM sessions WHERE namespace = ? AND updated_at < ? ORDER BY updated_at",
        (tx.namespace, before),
    )
    return [IdleSession._make(r) for r in rows]


async def working_memories(tx: Tx, session_id: str) -> list[WorkingMemory]:
    """A session's working-tier memories."""
    rows = await tx._conn.execute_fetchall(
        f"SELECT {columns(WorkingMemory)} FROM memories"
        " WHERE namespace = ? AND session_id = ? AND tier = 'working' ORDER BY seq",
        (tx.namespace, session_id),
    )
    return [WorkingMemory._make(r) for r in rows]


async def promote(tx: Tx, seqs: Sequence[int]) -> None:
    """Working memories become core (long-term); their value and timestamps stay as they are."""
    for chunk, marks in _chunks(seqs):
        await tx._conn.execute(
            f"UPDATE memories SET tier = 'core' WHERE seq IN ({marks}) AND +namespace = ?", (*chunk, tx.namespace)
        )
        await tx.log(chunk)
        await tx.profile_stale()  # core memories now: the profile may rest on them


async def end_session(tx: Tx, session_id: str) -> None:
    await tx._conn.execute("DELETE FROM sessions WHERE namespace = ? AND session_id = ?", (tx.namespace, session_id))
    tx.log_session(session_id)
