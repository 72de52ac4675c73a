"""The profile's statements: its stored row (the synthesised part and the manual edits, as JSON),
and the memories it is made from and cites. How a profile is synthesised and edited is decided
in profile/profile.py; these run inside the caller's `Tx` (from `Store.reading()` or
`Store.transaction()`)."""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Memory
from .rows import ProfileRow, memory_row, scalar, scalars
from .tx import PROFILE_CATEGORIES, Tx

__all__ = ["changed_since", "core_memories", "live_ids", "manual_edits", "profile", "save", "save_manual_edits"]


async def profile(tx: Tx) -> ProfileRow | None:
    """This namespace's stored profile; None before the first synthesis."""
    rows = await tx._conn.execute_fetchall(tx._sql.profile, (tx.namespace,))
    # SQLite keeps `stale` as 0 or 1.
    return next((row._replace(stale=bool(row.stale)) for row in map(ProfileRow._make, rows)), None)


async def manual_edits(tx: Tx) -> str | None:
    """The manual edits' JSON; None before the profile was first stored."""
    edits: str | None = await scalar(tx._conn, tx._sql.profile_manual, (tx.namespace,))
    return edits


async def save(tx: Tx, data: str, manual: str, at: str) -> None:
    """Store a synthesised profile (`data`) with the manual edits; it is fresh from now on."""
    await tx._conn.execute(tx._sql.profile_save, (tx.namespace, data, manual, at))


async def changed_since(tx: Tx, since: str) -> bool:
    """Whether a memory about the user (PROFILE_CATEGORIES) was written after `since`."""
    categories = tx._sql.array(sorted(PROFILE_CATEGORIES))
    rows = await tx._conn.execute_fetchall(tx._sql.profile_changed_since, (tx.namespace, categories, since))
    return bool(list(rows))


async def save_manual_edits(tx: Tx, manual: str, at: str, *, empty: str) -> None:
    """Store the manual edits alone and mark the profile stale, so that the next read synthesises
    it again; a namespace without a profile yet gets `empty` as its synthesised part."""
    await tx._conn.execute(tx._sql.profile_save_manual, (tx.namespace, empty, manual, at))


async def core_memories(tx: Tx, limit: int) -> list[Memory]:
    """The `limit` most important core memories (then the most recently changed), the profile's
    own and the context notes left out: what a profile is synthesised from."""
    rows = await tx._conn.execute_fetchall(tx._sql.profile_sources, (tx.namespace, limit))
    return [memory_row(r).memory() for r in rows]


async def live_ids(tx: Tx, ids: Iterable[str]) -> set[str]:
    """Those of the memory ids (`mem_12`) a profile cites that name a live memory here."""
    found = await scalars(tx._conn, tx._sql.profile_live_ids, (tx.namespace, tx._sql.array(sorted(ids))))
    return set(found)
