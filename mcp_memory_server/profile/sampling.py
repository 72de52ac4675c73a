"""The profile written by the client's model: when it is due, one synthesis at a time per store,
and what a model's answer may do.

A client that can sample synthesises the profile when it is missing, stale, made by rules, or a
day old (`Stored.due_for_model`): at session start, and at the start of `extract` before the
sieve builds its prompt (server/profile_tools.py asks the client; this module decides and keeps
the answer). The store is never locked while the model is awaited: the answer is stored in a
transaction of its own once it is there. A failed, unusable or late answer keeps the stored
profile (rules synthesise one only where none is stored) and holds further attempts off for
`RETRY_AFTER`, so that a client whose model keeps failing is not asked on every call.
"""

from __future__ import annotations

import logging
import weakref
from datetime import datetime, timedelta

import anyio

from ..errors import InvalidInput
from ..store.rows import utcnow
from ..store.store import Store
from . import profile as profiles
from .profile import Profile

__all__ = ["RETRY_AFTER", "SYSTEM", "claim", "due", "json_part", "keep_answer", "release", "settled"]

log = logging.getLogger(__name__)

SYSTEM = "You write a concise, grounded user profile from stored memories. Answer with JSON only."
RETRY_AFTER = timedelta(minutes=10)

# Per store (a namespace in this process): a synthesis under way, and when the last one failed.
_running: weakref.WeakKeyDictionary[Store, anyio.Event] = weakref.WeakKeyDictionary()
_failed: weakref.WeakKeyDictionary[Store, datetime] = weakref.WeakKeyDictionary()


async def due(store: Store, now: datetime | None = None) -> bool:
    """Whether the client's model should synthesise the profile now: it is due, no synthesis is
    under way here, and the last one did not fail within `RETRY_AFTER`."""
    now = now or utcnow()
    failed = _failed.get(store)
    if store in _running or (failed is not None and now - failed < RETRY_AFTER):
        return False
    # Nothing to synthesise from: the first memories about the user make it due.
    return (await profiles.stored(store)).due_for_model(now) and await profiles.has_core(store)


def claim(store: Store) -> bool:
    """Take the store's one synthesis slot; False when another is under way."""
    if store in _running:
        return False
    _running[store] = anyio.Event()
    return True


def release(store: Store) -> None:
    done = _running.pop(store, None)
    if done is not None:
        done.set()


async def settled(store: Store) -> bool:
    """Wait for a synthesis under way to end (the caller bounds the wait); whether one was."""
    running = _running.get(store)
    if running is None:
        return False
    await running.wait()
    return True


def json_part(text: str) -> str:
    """The JSON object in a model's answer (models wrap it in prose or code fences)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


async def keep_answer(
    store: Store, answer: str | None, failure: str | None = None, *, asked_at: datetime | None = None
) -> Profile | None:
    """Store a model's answer as the profile. A failure or an unusable answer keeps the stored
    profile (rules synthesise one where none is stored); returns the new profile, or None when
    the model's answer was not used. `asked_at`: when the memories the model was shown were read
    (a memory about the user written since leaves the new profile stale)."""
    if answer is not None:
        try:
            profile = await profiles.store_model_answer(store, json_part(answer), asked_at=asked_at)
        except InvalidInput as exc:
            failure = f"the answer was unusable ({exc})"
        else:
            _failed.pop(store, None)
            return profile
    log.info("profile synthesis by the client's model failed: %s; the stored profile stays", failure)
    _failed[store] = utcnow()
    if (await profiles.stored(store)).data is None:
        await profiles.synthesize_by_rules(store)
    return None
