"""Open MCP sessions per caller, so that one token can never deny the others.

The SDK's session manager caps sessions only in total (10,000, then 503 for everyone): one token
opened them all in 79 seconds, and every other namespace was refused for the 30 minutes they took
to expire. Here each caller (a bearer token; without tokens, every client together) holds at most
`per_caller` sessions, and the SDK's total is set above what all callers can hold together.

A caller at its cap that opens another session (an `initialize` without `Mcp-Session-Id`) ends
its own least recently used idle session, one with no request in progress and no open GET stream:
a client that forgot to end its sessions (killed, restarted) keeps working, and a client still
holding the ended session gets 404 on its next request, which the MCP spec tells clients to answer
with a new `initialize`. When every one of its sessions is busy, the new one is refused with 429
and a JSON-RPC error that says why and what to do. A session is ended through the SDK's own door,
a `DELETE` with its id, as its client would end it.

A session also belongs to the token that opened it: another token naming its id gets the 404 of
an unknown session (the SDK checks that only for its own authentication, which this server does
not use).
"""

# No `from __future__ import annotations`, like the other modules that use the SDK's types.

import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ..runtime.access import CALLER_SCOPE_KEY, NAMESPACE_SCOPE_KEY

__all__ = ["MCP_PATH", "SessionQuota"]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
_SESSION = b"mcp-session-id"
_VERSION = b"mcp-protocol-version"
_RETRY_AFTER_S = 5  # what a refused client is told to wait: a busy session is usually one call


@dataclass
class _Session:
    caller: str
    busy: int  # requests in progress, an open GET stream included
    used: float  # when the last request ended (or the first began), on the quota's clock


class SessionQuota:
    """ASGI middleware in front of the SDK's streamable HTTP app (stateful mode): at most
    `per_caller` open sessions per caller. `idle_timeout_s` is the SDK's: a session idle longer
    has been ended by it and no longer counts."""

    def __init__(
        self, app: Any, per_caller: int, idle_timeout_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self.per_caller = per_caller
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._by_caller: dict[str, OrderedDict[str, _Session]] = {}  # least recently used first
        self._opening: Counter[str] = Counter()  # initialize requests admitted and not yet answered

    def held(self, caller: str) -> int:
        """Sessions the caller holds, or is opening."""
        return len(self._by_caller.get(caller, ())) + self._opening[caller]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        caller: str = scope.get(CALLER_SCOPE_KEY, "")
        session_id = _header(scope, _SESSION)
        if session_id is None:
            if scope["method"] == "POST" and _header(scope, _VERSION) in (None, *HANDSHAKE_PROTOCOL_VERSIONS):
                await self._open(caller, scope, receive, send)
            else:  # 2026-07-28 requests have no session; the SDK answers the rest
                await self.app(scope, receive, send)
            return
        session = self._sessions.get(session_id)
        if session is None:  # unknown to the SDK as well: it answers 404
            await self.app(scope, receive, send)
        elif session.caller != caller:
            await _json_error(send, 404, "Session not found")
        else:
            await self._use(session_id, session, scope, receive, send)

    async def _use(self, session_id: str, session: _Session, scope: Any, receive: Any, send: Any) -> None:
        session.busy += 1
        self._by_caller[session.caller].move_to_end(session_id)
        status: int | None = None

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            session.busy -= 1
            session.used = self._clock()
            ended = scope["method"] == "DELETE" and status is not None and status < 300
            if status == 404 or ended:  # ended by its client, or by the SDK (idle, crashed)
                self._forget(session_id)

    async def _open(self, caller: str, scope: Any, receive: Any, send: Any) -> None:
        self._expire(caller)
        victim: str | None = None
        if self.held(caller) >= self.per_caller:
            victim = self._least_recently_used_idle(caller)
            if victim is None:
                log.warning(
                    "%s holds %d MCP sessions, its most, each with a request in progress: a new one was refused",
                    _who(scope),
                    self.per_caller,
                )
                await _json_error(send, 429, self._refusal(), [(b"retry-after", str(_RETRY_AFTER_S).encode())])
                return
            self._forget(victim)
        # The slot is reserved before any await, so two initialize requests at once cannot both
        # take the last one.
        self._opening[caller] += 1
        opening = True
        opened: tuple[str, _Session] | None = None

        async def watch(message: Any) -> None:
            nonlocal opening, opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = next((v.decode("latin-1") for k, v in message.get("headers", ()) if k == _SESSION), None)
                if session_id is not None and opening:
                    opening = False
                    self._release_opening(caller)
                    session = _Session(caller, busy=1, used=self._clock())
                    self._sessions[session_id] = session
                    self._by_caller.setdefault(caller, OrderedDict())[session_id] = session
                    opened = session_id, session
            await send(message)

        try:
            if victim is not None:
                log.info(
                    "%s opened more than its %d MCP sessions: its least recently used idle session was ended",
                    _who(scope),
                    self.per_caller,
                )
                await self._end(victim, scope)
            await self.app(scope, receive, watch)
        finally:
            if opening:
                self._release_opening(caller)
            if opened is not None:
                opened[1].busy -= 1
                opened[1].used = self._clock()

    def _refusal(self) -> str:
        return (
            f"Too many sessions: this token holds {self.per_caller} open MCP sessions, the most it may "
            "(MCP_MEMORY_HTTP_SESSIONS_PER_TOKEN), and each has a request in progress. End a session it no longer "
            f"needs (HTTP DELETE with its Mcp-Session-Id), or initialize again in {_RETRY_AFTER_S} seconds."
        )

    def _release_opening(self, caller: str) -> None:
        self._opening[caller] -= 1
        if self._opening[caller] <= 0:
            del self._opening[caller]

    def _expire(self, caller: str) -> None:
        """Forget the caller's sessions the SDK has ended for being idle too long."""
        now = self._clock()
        sessions = self._by_caller.get(caller, OrderedDict())
        stale = [sid for sid, s in sessions.items() if not s.busy and now - s.used > self.idle_timeout_s]
        for session_id in stale:
            self._forget(session_id)

    def _least_recently_used_idle(self, caller: str) -> str | None:
        for session_id, session in self._by_caller.get(caller, OrderedDict()).items():
            if not session.busy:
                return session_id
        return None

    def _forget(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        sessions = self._by_caller[session.caller]
        sessions.pop(session_id, None)
        if not sessions:
            del self._by_caller[session.caller]

    async def _end(self, session_id: str, scope: Any) -> None:
        """End a session as its client would: a DELETE with its id, to the SDK's app (which
        answers 404 if the session has ended meanwhile; either way it is gone)."""
        headers = [(_SESSION, session_id.encode("latin-1"))]
        host = _header(scope, b"host")
        if host is not None:  # the SDK's DNS-rebinding check wants the Host the request passed with
            headers.append((b"host", host.encode("latin-1")))
        request = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}
        received = False

        async def receive() -> dict[str, Any]:
            nonlocal received
            if received:
                return {"type": "http.disconnect"}
            received = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Any) -> None:
            pass

        await self.app(request, receive, discard)


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _who(scope: Any) -> str:
    caller: str = scope.get(CALLER_SCOPE_KEY, "")
    if not caller:
        return "a client (no tokens: all clients count as one)"
    return f"token {caller[:8]}… of namespace {scope.get(NAMESPACE_SCOPE_KEY, '')!r}"


async def _json_error(send: Any, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error without a request id, as the SDK answers requests it refuses unread."""
    error = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message))
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
