"""Read deadlines for HTTP connections, which uvicorn does not have.

uvicorn's HTTP/1.1 protocol (h11) times out only a connection idle between requests (keep-alive),
so a socket that sent half a request's head, or stopped or trickled halfway through its body, was
held for ever (1,030 such sockets took every file descriptor). The protocol built here closes
those, and no other.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["deadline_protocol"]

log = logging.getLogger(__name__)

_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


@functools.cache
def deadline_protocol() -> Callable[..., asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11) with read deadlines, which it does not have: it times
    out only a connection idle between requests (keep-alive), so a socket that sent half a
    request's head, or stopped or trickled halfway through its body, was held for ever (1,030
    such sockets took every file descriptor). Here a request's head must arrive whole within `read_s` of its
    first byte (of the connection, for the first request), and its body may pause no longer than
    `read_s` and take no longer than `body_s` in all; a connection that misses a deadline is
    closed (a late head is answered 408 first), the others never notice. The pause is not counted
    while the server itself has stopped reading (the app has not taken what came). Built on first
    use: stdio mode never imports uvicorn."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        def __init__(
            self,
            config: Any,
            server_state: Any,
            app_state: dict[str, Any],
            release: Callable[[], None],
            read_s: float,
            body_s: float,
        ) -> None:
            super().__init__(config, server_state, app_state)
            self._release = release
            self._read_s = read_s
            self._body_s = body_s
            self._phase: Literal["head", "body"] | None = None
            self._began = 0.0  # when the phase began
            self._heard = 0.0  # when bytes last arrived
            self._timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._heard = self.loop.time()
            self._enter("head")

        def data_received(self, data: bytes) -> None:
            self._heard = self.loop.time()
            super().data_received(data)
            self._watch(arrived=True)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch(arrived=bool(self.conn.trailing_data[0]))

        def connection_lost(self, exc: Exception | None) -> None:
            self._enter(None)
            try:
                super().connection_lost(exc)
            finally:
                self._release()

        def _watch(self, arrived: bool) -> None:
            """Follow the request being read: its head (from its first byte: uvicorn's keep-alive
            timer closes a connection that sends none), its body, or nothing to read."""
            state = self.conn.their_state
            if self.transport.is_closing():
                self._enter(None)
            elif state is h11.IDLE:
                if self._phase != "head" and arrived:
                    self._enter("head")
            elif state is h11.SEND_BODY:
                if self._phase != "body":
                    self._enter("body")
            else:
                self._enter(None)

        def _enter(self, phase: Literal["head", "body"] | None) -> None:
            self._phase = phase
            self._began = self._heard = self.loop.time()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if phase is not None:
                self._timer = self.loop.call_at(self._deadline(), self._check)

        def _deadline(self) -> float:
            if self._phase == "head":
                return self._began + self._read_s
            if self.flow.read_paused:  # not the client's pause: the app has not read what came
                self._heard = self.loop.time()
            return min(self._began + self._body_s, self._heard + self._read_s)

        def _check(self) -> None:
            self._timer = None
            if self._phase is None or self.transport.is_closing():
                return
            deadline = self._deadline()
            if self.loop.time() < deadline:
                self._timer = self.loop.call_at(deadline, self._check)
            elif self._phase == "head":
                log.info("closed a connection that did not send a request's headers in %g s", self._read_s)
                message = b"The request's headers did not arrive in time.\n"
                self.transport.write(_REQUEST_TIMEOUT % (len(message), message))
                self._phase = None
                self.transport.close()
            else:
                log.info(
                    "closed a connection whose request body paused over %g s or took over %g s",
                    self._read_s,
                    self._body_s,
                )
                self._phase = None
                self.transport.abort()  # nothing can be answered in the middle of a request

    return Protocol
