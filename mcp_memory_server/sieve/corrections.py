"""Corrections that name only the values: 不是北京，是柏林, "I meant Berlin, not Beijing".

Such a sentence has no words of the fact it corrects (住在, live in), so the patterns of
`text.corrections` cannot tell its key. The store can: when exactly one keyed fact of the user
holds the old value, the correction is that fact's new value, written under its key with the old
value replaced (我住在北京 becomes 我住在柏林, the old text kept in the memory's history). When none
or several hold it, the correction stays a correction of its own, which recall ranks above the
memories it corrects (retrieval/supersession.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..memory.service import MemoryService
from ..text.corrections import KEYED_SLOTS, corrected_pair, replace_value
from .signals import IMPORTANCE, Signal

__all__ = ["resolve_keys"]


async def resolve_keys(service: MemoryService, found: Sequence[Signal]) -> list[Signal]:
    """`found` with each unkeyed correction naming an old value that one keyed fact holds turned
    into that fact's new value (see the module's docstring)."""
    return [await _resolved(service, s) if s.pattern == "correction" and s.key is None else s for s in found]


async def _resolved(service: MemoryService, signal: Signal) -> Signal:
    pair = corrected_pair(signal.content)
    if pair is None:
        return signal
    old, new = pair
    matches: list[tuple[str, str, str]] = []
    async with service.store.reading() as tx:
        for slot in KEYED_SLOTS:
            holder = await tx.by_key(slot.key)
            replaced = replace_value(holder.content, old, new) if holder is not None else None
            if replaced is not None:
                matches.append((slot.key, slot.category, replaced))
    if len(matches) != 1:
        return signal  # no keyed fact holds the old value, or several do: which one is meant is unclear
    key, category, content = matches[0]
    return dataclasses.replace(signal, key=key, category=category, content=content, importance=IMPORTANCE["correction"])
