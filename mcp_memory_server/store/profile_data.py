"""The profile's statements: its stored row (the synthesised part and the manual edits, as JSON),
and the memories it is made from and cites. How a profile is synthesised and edited is decided
in profile/profile.py; these run inside the caller's `Tx` (from `Store.reading()` or
`Store.transaction()`)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..models import Memory
from .rows import COLUMNS, ProfileRow, columns, memory_row, scalar, scalars
from .tx import Tx

__all__ = ["core_memories", "live_ids", "manual_edits", "profile", "save", "save_manual_edits"]


async def profile(tx: Tx) -> ProfileRow | None:
    """This namespace's stored profile; None before the first synthesis."""
    rows = await tx._conn.execute_fetchall(
        f"SELECT {columns(ProfileRow)} FROM profile WHERE namespace = ?", (tx.namespace,)
    )
    # SQLite keeps `stale` as 0 or 1.
    return next((row._replace(stale=bool(row.stale)) for row in map(ProfileRow._make, rows)), None)


async def manual_edits(tx: Tx) -> str | None:
    """The manual edits' JSON; None before the profile was first stored."""
    edits: str | None = await scalar(tx._conn, "SELECT manual FROM profile WHERE namespace = ?", (tx.namespace,))
    return edits


async def save(tx: Tx, data: str, manual: str, at: str) -> None:
    """Store a synthesised profile (`data`) with the manual edits; it is fresh from now on."""
    await tx._conn.execute(
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (?, ?, ?, 0, ?)"
        " ON CONFLICT (namespace) DO UPDATE SET data = excluded.data, manual = excluded.manual, stale = 0,"
        " updated_at = excluded.updated_at",
        (tx.namespace, data, manual, at),
    )


async def save_manual_edits(tx: Tx, manual: str, at: str, *, empty: str) -> None:
    """Store the manual edits alone and mark the profile stale, so that the next read synthesises
    it again; a namespace without a profile yet gets `empty` as its synthesised part."""
    await tx._conn.execute(
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (?, ?, ?, 1, ?)"
        " ON CONFLICT (namespace) DO UPDATE SET manual = excluded.manual, stale = 1, updated_at = excluded.updated_at",
        (tx.namespace, empty, manual, at),
    )


async def core_memories(tx: Tx, limit: int) -> list[Memory]:
    """The `limit` most important core memories (then the most recently changed), the profile's
    own and the context notes left out: what a profile is synthesised from."""
    rows = await tx._conn.execute_fetchall(
        f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND tier = 'core'"
        " AND category NOT IN ('profile', 'context') ORDER BY importance DESC, updated_at DESC, seq LIMIT ?",
        (tx.namespace, limit),
    )
    return [memory_row(r).memory() for r in rows]


async def live_ids(tx: Tx, ids: Iterable[str]) -> set[str]:
    """Those of the memory ids (`mem_12`) a profile cites that name a live memory here."""
    found = await scalars(
        tx._conn,
        "SELECT 'mem_' || seq FROM memories WHERE namespace = ? AND 'mem_' || seq IN (SELECT value FROM json_each(?))",
        (tx.namespace, json.dumps(sorted(ids))),
    )
    return set(found)
