"""The migration that gives every key slot its one spelling (text/keys.py), run once by the store
inside the migration's transaction: keys were stored as written until then, so `user.city`,
`User.City` and `user.сity` (a Cyrillic с) could be three slots holding three values of one fact.

Each group of memories whose keys name one slot becomes one memory, as if every write had used the
one spelling from the start: the most recently updated memory keeps the slot, the others' values
join its history (as `merged`, their own history with them), and they are deleted. Archived
memories' keys are respelt too (a restore into a slot another memory holds stays archived, as
ever). The full-text index is rebuilt afterwards, since it indexes keys.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..text.keys import normalise_key
from .backend import Conn
from .rows import iso, utcnow
from .statements import Statements
from .tx import Tx

__all__ = ["MIGRATION", "merge_key_slots"]

log = logging.getLogger(__name__)

MIGRATION = 12  # the version in store/sqlite/schema.py and store/postgres/schema.py


async def merge_key_slots(conn: Conn, sql: Statements, tx_for: Callable[[Conn, str], Tx]) -> None:
    """See the module's docstring. `tx_for` gives a transaction view of `conn` in a namespace."""
    slots: dict[tuple[str, str], list[tuple[Any, int, str, int]]] = defaultdict(list)
    for seq, number, namespace, key, updated_at in await conn.execute_fetchall(sql.keyed_memories):
        slots[(namespace, normalise_key(key))].append((updated_at, seq, key, number))
    moment = iso(utcnow())
    merged = respelt = 0
    doomed: dict[str, list[int]] = defaultdict(list)
    for (namespace, slot), holders in slots.items():
        holders.sort()
        _, keeper, spelt, _ = holders[-1]
        for _, seq, _, number in holders[:-1]:  # oldest first, so the history reads in order
            await conn.execute(sql.merge_into_history, (keeper, moment, seq))
            await conn.execute(sql.adopt_history, (keeper, seq))
            doomed[namespace].append(number)
        if spelt != slot:
            respelt += 1
        merged += len(holders) - 1
    for namespace, numbers in doomed.items():
        await tx_for(conn, namespace).delete(numbers)  # its index rows, the change log, the profile's citations
    for (_, slot), holders in slots.items():
        if holders[-1][2] != slot:
            await conn.execute(sql.set_key, (slot, holders[-1][1]))
    archived = 0
    for seq, key in await conn.execute_fetchall(sql.keyed_archived):
        if (slot := normalise_key(key)) != key:
            await conn.execute(sql.set_archived_key, (slot, seq))
            archived += 1
    if merged or respelt:
        await conn.execute(sql.index_version_set, ("0",))  # rebuilt with the keys' new spelling at open
    if merged or respelt or archived:
        log.info(
            "key slots: %d memories merged into the memory holding their slot, %d keys respelt, %d archived keys"
            " respelt",
            merged,
            respelt,
            archived,
        )
