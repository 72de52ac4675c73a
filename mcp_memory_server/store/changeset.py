"""What one committed write changed: built up by its transaction (`Tx`) and reported by the
store to its `on_change` listeners after the commit, so that other layers (MCP change
notifications) learn of changes without the store knowing who listens."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Change", "Noted", "decode", "encode", "tell"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """What one committed transaction changed."""

    numbers: frozenset[int]  # memories written, deleted, archived, restored or promoted (their ids' numbers)
    categories: frozenset[str]  # their categories, before and after
    sessions: frozenset[str]  # sessions whose memories or working state changed
    listing: bool  # memories appeared or went away
    removed: bool  # memories went away (deleted or archived)


@dataclass
class Noted:
    """A `Change` as a transaction builds it up."""

    numbers: set[int] = field(default_factory=set)
    categories: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)
    listing: bool = False
    removed: bool = False

    def rows(self, rows: Iterable[Sequence[Any]]) -> None:
        """(number, category, session_id) of changed memories."""
        for number, category, session in rows:
            self.numbers.add(number)
            self.categories.add(category)
            if session:
                self.sessions.add(session)

    def change(self) -> Change | None:
        """The change noted so far; None when nothing was."""
        if not (self.numbers or self.sessions):
            return None
        return Change(
            frozenset(self.numbers), frozenset(self.categories), frozenset(self.sessions), self.listing, self.removed
        )


def tell(listeners: Iterable[Callable[[Change], None]], change: Change) -> None:
    """Call each listener with a committed change. They run in the writer's call, so they must be
    quick and hand slow work (telling MCP clients) to a task of their own; one that raises is
    logged and skipped, as the write it reports has already committed."""
    for listener in listeners:
        try:
            listener(change)
        except Exception:
            log.exception("a change listener failed")


_PAYLOAD_BYTES = 7000  # PostgreSQL's NOTIFY takes payloads under 8000 bytes


def encode(change: Change, namespace: str, origin: str) -> list[str]:
    """A change as the payloads of one or more notifications to other processes (see store/postgres/backend.py), its
    memories split among them so that each stays under NOTIFY's size limit."""
    head: dict[str, Any] = {"o": origin, "n": namespace, "c": sorted(change.categories), "e": sorted(change.sessions)}
    head |= {"l": change.listing, "r": change.removed}
    numbers = sorted(change.numbers)
    room = max(_PAYLOAD_BYTES - len(json.dumps(head, ensure_ascii=False).encode()), 800) // 12  # digits and a comma
    chunks = [numbers[i : i + room] for i in range(0, len(numbers), room)] or [[]]
    return [json.dumps(head | {"s": chunk}, ensure_ascii=False) for chunk in chunks]


def decode(payload: str) -> tuple[str, str, Change] | None:
    """(origin, namespace, change) of a payload `encode` made; None for anything else."""
    try:
        data = json.loads(payload)
        change = Change(
            frozenset(int(s) for s in data["s"]),
            frozenset(str(c) for c in data["c"]),
            frozenset(str(e) for e in data["e"]),
            bool(data["l"]),
            bool(data["r"]),
        )
        return str(data["o"]), str(data["n"]), change
    except (ValueError, KeyError, TypeError):
        log.warning("ignored a change notification that is not ours: %.100s", payload)
        return None
