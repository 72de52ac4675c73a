"""How many connections HTTP mode holds at once, and the accept loop that keeps to it.

Each open connection is a file descriptor. asyncio's own accept loop takes every connection the
kernel has queued; once the process runs out of descriptors it logs the failure, with its
traceback, for every connection still queued, round after round (1,030 half-open sockets made
143,139 such errors in 20 seconds), and the database and every other file the server needs can no
longer be opened either. Here connections are accepted only while fewer than the cap are open:
the others wait in the kernel's listen queue, as they would for a busy server, and are taken as
open ones close (the read deadlines close the idle and stalled ones; read_deadlines.py). At
start the soft open-file limit is raised to the hard one, and the cap leaves half of it to the
database, the model files and the logs.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import socket
import sys
from collections.abc import Callable
from contextlib import suppress

__all__ = ["AUTO_CAP", "Acceptor", "connection_cap", "raise_open_file_limit"]

log = logging.getLogger(__name__)

AUTO_CAP = 4096  # connections at most when the cap is derived from the open-file limit
_RESERVED = 128  # descriptors kept for the rest of the process however the cap is set (half, below 256)
_RETRY_S = 0.5  # pause after the system refused a connection for want of descriptors or memory
_GAVE_UP = (errno.ECONNABORTED, errno.EPROTO, errno.EINTR)  # the client left while queued
_CLOSED = (errno.EBADF, errno.EINVAL, errno.ENOTSOCK)


def raise_open_file_limit() -> int | None:
    """Raise the soft limit on open files to the hard one (where the system allows); the soft
    limit then in force, or None where there is no such limit (Windows)."""
    if sys.platform == "win32":
        return None
    import resource  # not on Windows

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # macOS reports an infinite hard limit but refuses a soft one above its own per-process
    # maximum (10,240 by default): try the hard limit first, then less.
    for wanted in (hard, 65536, 10240):
        if wanted == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or wanted <= soft:
            continue
        if hard != resource.RLIM_INFINITY and wanted > hard:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            continue
        soft = wanted
        break
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_cap(configured: int, open_files: int | None) -> int:
    """The connection cap: `configured`, or for 0 half the open-file limit and at most
    `AUTO_CAP`; never so high that the connections could take the descriptors the rest of the
    process needs (a higher configured value is lowered, with a warning)."""
    room = AUTO_CAP if open_files is None else max(1, open_files - min(_RESERVED, open_files // 2))
    if configured == 0:
        return max(1, min(AUTO_CAP, room, (open_files or 2 * AUTO_CAP) // 2))
    if configured > room:
        log.warning(
            "MCP_MEMORY_HTTP_MAX_CONNECTIONS=%d is more than the open-file limit (%s) leaves room for: %d are used",
            configured,
            open_files,
            room,
        )
        return room
    return configured


class Acceptor:
    """Accepts connections on a listening socket while fewer than `cap` are open, and hands each
    to a protocol made by `protocol(release)`; the protocol calls `release()` once its connection
    is closed (calls after the first are ignored)."""

    def __init__(
        self, sock: socket.socket, protocol: Callable[[Callable[[], None]], asyncio.Protocol], cap: int, backlog: int
    ) -> None:
        self._sock = sock
        self._protocol = protocol
        self.cap = cap
        self._backlog = backlog
        self.open = 0
        self._room = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._sock.listen(self._backlog)
        self._sock.setblocking(False)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="accept connections")

    def close(self) -> None:
        """Stop accepting; the connections already open are the server's to close."""
        if self._task is not None:
            self._task.cancel()

    async def wait_closed(self) -> None:
        if self._task is not None:
            with suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self.open >= self.cap:
                log.warning(
                    "%d connections are open, the most (MCP_MEMORY_HTTP_MAX_CONNECTIONS): new ones wait", self.cap
                )
                while self.open >= self.cap:
                    self._room.clear()
                    await self._room.wait()
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except OSError as exc:
                if exc.errno in _GAVE_UP:
                    continue
                if exc.errno in _CLOSED:  # the server is stopping
                    return
                # Out of descriptors or memory: the connection stays queued and is tried again
                # (asyncio's own loop retries every queued one at once, logging each failure).
                log.error("cannot accept a connection with %d open: %s; new ones wait", self.open, exc.strerror)
                await asyncio.sleep(_RETRY_S)
                continue
            self.open += 1
            release = self._releaser()
            try:
                await loop.connect_accepted_socket(functools.partial(self._protocol, release), conn)
            except OSError:  # closed before it was set up
                conn.close()
                release()

    def _releaser(self) -> Callable[[], None]:
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.open -= 1
                self._room.set()

        return release
