"""Access tracking after recall: how often each memory was returned and when last (not
`updated_at`), and which sessions recalled (they count as active, see memory/lifecycle.py).

A recall never waits for this write: the counts wait in memory for up to `TOUCH_DELAY` seconds, so
a burst of recalls shares one transaction, and until then this process's searches add them to the
rows they read, so that ranking does not depend on when the write lands. The store owns the
connection and hands in what writes a batch (`Write`) under its lock. Where searches run alongside
that write (PostgreSQL's pooled reads), a gate keeps each search wholly before or after it: a
search must see each access once, in its rows or in the overlay, never in neither or both."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from datetime import datetime

import anyio

from ..errors import MemoryServerError
from .rows import MemoryRow, iso

__all__ = ["TOUCH_DELAY", "Accesses", "Write"]

TOUCH_DELAY = 0.5  # seconds between a recall and the write of its access statistics

# (seq -> accesses to add, ISO 8601 time of the last one, sessions recalled with): one transaction
Write = Callable[[Mapping[int, int], str, set[str]], Awaitable[None]]

log = logging.getLogger(__name__)


class OverlayGate:
    """Many holders of the shared side at once, or one of the exclusive side; a waiting exclusive
    holder goes before shared holders that come after it."""

    def __init__(self) -> None:
        self._changed = anyio.Condition()
        self._shared = 0
        self._exclusive = False

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._changed:
            while self._exclusive:
                await self._changed.wait()
            self._shared += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._shared -= 1
                    self._changed.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._changed:
            while self._exclusive:
                await self._changed.wait()
            self._exclusive = True
            try:
                while self._shared:
                    await self._changed.wait()
            except BaseException:
                self._exclusive = False
                self._changed.notify_all()
                raise
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._exclusive = False
                    self._changed.notify_all()


class Accesses:
    """The accesses recorded and not yet written, for one store."""

    def __init__(
        self, lock: anyio.Lock, write: Write, is_open: Callable[[], bool], *, reads_alongside: bool = False
    ) -> None:
        self._lock = lock  # the store's: the batch is taken and written while no other work runs
        self._write = write
        self._is_open = is_open
        # Searches that do not take the store's lock wait for (and hold up) the write at this gate.
        self._gate = OverlayGate() if reads_alongside else None
        self._touches: dict[int, int] = {}
        self._sessions: set[str] = set()
        self._moment = ""
        self._flusher: asyncio.Task[None] | None = None

    def record(self, seqs: Sequence[int], moment: datetime, session_id: str | None = None) -> None:
        """One recall returned `seqs`; written in the background up to `TOUCH_DELAY` later."""
        for seq in seqs:
            self._touches[seq] = self._touches.get(seq, 0) + 1
        if session_id is not None:
            self._sessions.add(session_id)
        self._moment = iso(moment)
        if (self._touches or self._sessions) and self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    async def flush(self) -> None:
        """Write every access recorded so far."""
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.cancel()
        await self._write_pending()

    async def _flush_later(self) -> None:
        await asyncio.sleep(TOUCH_DELAY)
        self._flusher = None
        await self._write_pending()

    async def _write_pending(self) -> None:
        if not self._is_open():
            return
        # The lock is taken even when nothing is pending: a write already under way (by the
        # delayed flush, which has taken the counts) holds it, and the store's close must not
        # shut the database under it.
        async with self._lock, self._gate.exclusive() if self._gate else nullcontext():
            if not (self._touches or self._sessions) or not self._is_open():
                return
            # Taken under the lock: searches that ran while it was awaited still saw these counts.
            pending, self._touches = self._touches, {}
            sessions, self._sessions = self._sessions, set()
            try:
                await self._write(pending, self._moment, sessions)
            except MemoryServerError as exc:  # access statistics are not worth failing over
                log.warning("could not record memory access: %s", exc)

    def reading(self) -> AbstractAsyncContextManager[None]:
        """Held by a search from reading its rows until `with_pending` has been applied to them."""
        return self._gate.shared() if self._gate else nullcontext()

    def with_pending(self, row: MemoryRow) -> MemoryRow:
        """A memory row with this process's not-yet-written accesses added."""
        extra = self._touches.get(row.seq)
        if not extra:
            return row
        return row._replace(last_accessed=self._moment, access_count=row.access_count + extra)
