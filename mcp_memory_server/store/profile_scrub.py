"""Forgetting reaches the profile: when memories are deleted or archived, in the same transaction,
every synthesised profile item resting on one of them goes (and the profile is marked stale, to
be synthesised again from what is left), and a `profile` memory (key user.profile) that older
versions wrote to carry the profile's text is removed with its index row and history. "Forget
this" leaves nothing behind."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .backend import Conn
from .rows import memory_id, scalar, scalars
from .statements import Statements

__all__ = ["MIGRATION", "PROFILE_KEY", "drop_profile_memories", "scrub"]

PROFILE_KEY = "user.profile"
MIGRATION = 13  # the version in store/sqlite/schema.py and store/postgres/schema.py
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


async def scrub(conn: Conn, sql: Statements, namespace: str, numbers: Sequence[int]) -> None:
    """Take the namespace's memories `numbers` (deleted or archived in this transaction) out of
    the profile."""
    gone = {memory_id(n) for n in numbers}
    stored = await scalar(conn, sql.profile_data, (namespace,))
    if stored is not None:
        before = json.loads(stored)
        data = _clean(json.loads(stored), gone)
        # Stale only when it cited what is gone: a note or a working memory the sieve settles
        # every turn would otherwise make the profile due again after every extract.
        if data != before:
            await conn.execute(sql.profile_scrubbed, (json.dumps(data, ensure_ascii=False), namespace))
    await _drop_mirror(conn, sql, namespace)


async def drop_profile_memories(conn: Conn, sql: Statements) -> int:
    """The migration that keeps the profile out of the memories: every namespace's `profile`
    memory goes now, not at the namespace's next deletion. Returns the namespaces that had one."""
    namespaces = await scalars(conn, sql.key_namespaces, (PROFILE_KEY,))
    for namespace in namespaces:
        await _drop_mirror(conn, sql, namespace)
    return len(namespaces)


async def _drop_mirror(conn: Conn, sql: Statements, namespace: str) -> None:
    mirror = await scalars(conn, sql.key_seqs, (namespace, PROFILE_KEY))
    if mirror:
        for statement in (sql.delete_history, sql.delete_fts, sql.delete_memories):
            await conn.execute(statement, (sql.array(mirror),))
        for seq in mirror:
            await conn.execute(sql.log_one, (namespace, seq))
