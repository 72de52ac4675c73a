"""Forgetting reaches the profile: when memories are deleted or archived, in the same transaction,
every synthesised profile item resting on one of them goes, and the `profile` memory (key
user.profile) that carries the profile's text is removed with its index row and history; the
next read synthesises both again from what is left. "Forget this" leaves nothing behind."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .backend import Conn
from .rows import scalar, scalars

__all__ = ["PROFILE_KEY", "scrub"]

PROFILE_KEY = "user.profile"
_LISTS = ("domains", "high_value_signals", "low_value_signals", "active_projects")
_SINGLE = ("summary", "language_preferences")


def _clean(data: dict[str, Any], gone: set[str]) -> dict[str, Any]:
    for field in _SINGLE:
        item = data.get(field)
        if isinstance(item, dict) and not item.get("manual") and gone & set(item.get("sources", [])):
            data[field] = {"text": "", "sources": [], "manual": False}
    for field in _LISTS:
        data[field] = [i for i in data.get(field, []) if i.get("manual") or not gone & set(i.get("sources", []))]
    return data


async def scrub(conn: Conn, namespace: str, seqs: Sequence[int]) -> None:
    """Take memories `seqs` (deleted or archived in this transaction) out of the profile."""
    gone = {f"mem_{s}" for s in seqs}
    stored = await scalar(conn, "SELECT data FROM profile WHERE namespace = ?", (namespace,))
    if stored is not None:
        data = _clean(json.loads(stored), gone)
        await conn.execute(
            "UPDATE profile SET data = ?, stale = 1 WHERE namespace = ?",
            (json.dumps(data, ensure_ascii=False), namespace),
        )
    mirror = await scalars(conn, "SELECT seq FROM memories WHERE namespace = ? AND key = ?", (namespace, PROFILE_KEY))
    for seq in mirror:
        await conn.execute("DELETE FROM memory_history WHERE memory_seq = ?", (seq,))
        await conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
        await conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
        await conn.execute("INSERT INTO memory_changes (namespace, seq) VALUES (?, ?)", (namespace, seq))
