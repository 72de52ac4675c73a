"""The archive's statements: moving memories between the live tables and the archive (history
included, full-text row dropped and re-created), and the selections that cleanup and session
expiry decide on. Everything runs inside the caller's transaction (a `Tx`); what to archive is
decided in memory/lifecycle.py."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store.tx import Tx

__all__ = [
    "HISTORY_COLUMNS",
    "Archived",
    "CleanupRow",
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

_MEMORY = (
    "seq, namespace, content, key, category, tier, importance, confidence, source, tags, session_id, client,"
    " content_hash, created_at, updated_at, last_accessed, access_count"
)
# The columns of memory_history and memory_history_archive, which are alike.
HISTORY_COLUMNS = "memory_seq, content, key, category, importance, confidence, tags, source, reason, changed_at"
_CHUNK = 500  # seqs per statement: a few thousand parameters at most


def _chunks(seqs: Sequence[int]) -> Iterator[tuple[list[int], str]]:
    """The seqs in chunks, each with its `?, ?, ...` placeholders."""
    for start in range(0, len(seqs), _CHUNK):
        chunk = list(seqs[start : start + _CHUNK])
        yield chunk, ",".join("?" * len(chunk))


@dataclass(frozen=True, slots=True)
class Archived:
    seq: int
    key: str | None


@dataclass(frozen=True, slots=True)
class CleanupRow:
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


async def archive(tx: Tx, reasons: Mapping[int, str], at: str) -> list[int]:
    """Move live memories (seq -> reason) to the archive with their history; their full-text rows
    go, and the change is logged so every process's index drops them. Returns the seqs moved."""
    moved: list[int] = []
    for chunk, marks in _chunks(list(reasons)):
        why = " ".join("WHEN ? THEN ?" for _ in chunk)
        rows = await tx.fetch(
            f"INSERT INTO memory_archive ({_MEMORY}, archived_at, archive_reason)"
            f" SELECT {_MEMORY}, ?, CASE seq {why} END"
            f" FROM memories WHERE seq IN ({marks}) AND +namespace = ? RETURNING seq",
            (at, *(v for seq in chunk for v in (seq, reasons[seq])), *chunk, tx.namespace),
        )
        found = sorted(r[0] for r in rows)
        if not found:
            continue
        marks = ",".join("?" * len(found))
        # History first: memory_history's rows would otherwise go with their memory (ON DELETE CASCADE).
        await tx.execute(
            f"INSERT INTO memory_history_archive ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history"
            f" WHERE memory_seq IN ({marks}) ORDER BY seq",
            found,
        )
        await tx.execute(f"DELETE FROM memory_history WHERE memory_seq IN ({marks})", found)
        await tx.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", found)
        await tx.execute(f"DELETE FROM memories WHERE seq IN ({marks})", found)
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
        await tx.execute(
            f"INSERT INTO memories ({_MEMORY}) SELECT {columns} FROM memory_archive"
            f" WHERE seq IN ({marks}) AND +namespace = ?",
            (at, *chunk, tx.namespace),
        )
        rows = await tx.fetch(
            f"SELECT seq, content, key, tags, category FROM memory_archive WHERE seq IN ({marks}) AND +namespace = ?",
            (*chunk, tx.namespace),
        )
        if not rows:
            continue
        values: list[Any] = []
        for seq, content, key, tags, category in rows:
            values += (seq, *tx.index_row(content, key, json.loads(tags), category))
        await tx.execute(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows)),
            values,
        )
        found = [r[0] for r in rows]
        marks = ",".join("?" * len(found))
        await tx.execute(
            f"INSERT INTO memory_history ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history_archive"
            f" WHERE memory_seq IN ({marks}) ORDER BY seq",
            found,
        )
        await tx.execute(f"DELETE FROM memory_history_archive WHERE memory_seq IN ({marks})", found)
        await tx.execute(f"DELETE FROM memory_archive WHERE seq IN ({marks})", found)
        await tx.log(found)
        await tx.profile_stale()  # a restored memory may be about the user


async def archived(tx: Tx, seqs: Sequence[int]) -> list[Archived]:
    """Those of `seqs` in this namespace's archive."""
    found: list[Archived] = []
    for chunk, marks in _chunks(seqs):
        rows = await tx.fetch(
            f"SELECT seq, key FROM memory_archive WHERE seq IN ({marks}) AND +namespace = ?", (*chunk, tx.namespace)
        )
        found += (Archived(r[0], r[1]) for r in rows)
    return found


async def live_seqs(tx: Tx, seqs: Sequence[int]) -> set[int]:
    """Those of `seqs` that are live memories of this namespace."""
    found: set[int] = set()
    for chunk, marks in _chunks(seqs):
        rows = await tx.fetch(
            f"SELECT seq FROM memories WHERE seq IN ({marks}) AND +namespace = ?", (*chunk, tx.namespace)
        )
        found.update(r[0] for r in rows)
    return found


async def key_holders(tx: Tx, keys: Sequence[str]) -> dict[str, int]:
    """key -> seq of the live memory holding it, for those of `keys` that are taken."""
    if not keys:
        return {}
    rows = await tx.fetch(
        "SELECT key, seq FROM memories WHERE namespace = ? AND key IN (SELECT value FROM json_each(?))",
        (tx.namespace, json.dumps(list(keys), ensure_ascii=False)),
    )
    return {r[0]: r[1] for r in rows}


async def live_count(tx: Tx) -> int:
    rows = await tx.fetch("SELECT count(*) FROM memories WHERE namespace = ?", (tx.namespace,))
    return int(rows[0][0])


async def cleanup_rows(
    tx: Tx, *, unused_before: str, unused_accesses: int, stale_before: str, low_importance: float
) -> list[CleanupRow]:
    """Live memories selected by a cleanup rule, oldest access first: unused (fewer accesses than
    `unused_accesses`, none since `unused_before`), low importance (below `low_importance`, no
    access since `stale_before`), or a copy of another memory's content in the same category.

    Of each set of copies, the one that stays is the most important (then the most accessed, one
    holding a key, the newest); copies holding a key are never selected, as clients refer to the
    key. Only groups of more than one memory are ranked, so the window sorts few rows."""
    rows = await tx.fetch(
        """WITH copies AS (
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
           SELECT * FROM (
               SELECT m.seq, m.content, m.category, m.importance, m.access_count, m.source, m.created_at,
                   m.last_accessed,
                   m.access_count < :accesses AND m.last_accessed < :unused_before AS unused,
                   m.importance < :low AND m.last_accessed < :stale_before AS low,
                   CASE WHEN m.key IS NULL AND k.keeper != m.seq THEN k.keeper END AS duplicate_of
               FROM memories m LEFT JOIN keepers k ON k.seq = m.seq
               WHERE m.namespace = :ns
           ) AS selected WHERE unused OR low OR duplicate_of IS NOT NULL
           ORDER BY last_accessed, seq""",
        {
            "ns": tx.namespace,
            "accesses": unused_accesses,
            "unused_before": unused_before,
            "low": low_importance,
            "stale_before": stale_before,
        },
    )
    return [
        CleanupRow(
            seq=r[0],
            content=r[1],
            category=r[2],
            importance=r[3],
            access_count=r[4],
            source=r[5],
            created_at=r[6],
            last_accessed=r[7],
            unused=bool(r[8]),
            low_importance=bool(r[9]),
            duplicate_of=r[10],
        )
        for r in rows
    ]


async def idle_sessions(tx: Tx, before: str) -> list[tuple[str, str]]:
    """(session_id, updated_at) of the sessions with no activity since `before`."""
    rows = await tx.fetch(
        "SELECT session_id, updated_at FROM sessions WHERE namespace = ? AND updated_at < ? ORDER BY updated_at",
        (tx.namespace, before),
    )
    return [(r[0], r[1]) for r in rows]


async def working_memories(tx: Tx, session_id: str) -> list[tuple[int, float, int]]:
    """(seq, importance, access_count) of a session's working-tier memories."""
    rows = await tx.fetch(
        "SELECT seq, importance, access_count FROM memories"
        " WHERE namespace = ? AND session_id = ? AND tier = 'working' ORDER BY seq",
        (tx.namespace, session_id),
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def promote(tx: Tx, seqs: Sequence[int]) -> None:
    """Working memories become core (long-term); their value and timestamps stay as they are."""
    for chunk, marks in _chunks(seqs):
        await tx.execute(
            f"UPDATE memories SET tier = 'core' WHERE seq IN ({marks}) AND +namespace = ?", (*chunk, tx.namespace)
        )
        await tx.log(chunk)
        await tx.profile_stale()  # core memories now: the profile may rest on them


async def end_session(tx: Tx, session_id: str) -> None:
    await tx.execute("DELETE FROM sessions WHERE namespace = ? AND session_id = ?", (tx.namespace, session_id))
    tx.log_session(session_id)
