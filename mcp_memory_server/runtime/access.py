"""Who may use the HTTP server, and whose memories each caller sees.

HTTP mode can require a bearer token on every request (`MCP_MEMORY_TOKENS`,
`MCP_MEMORY_TOKENS_FILE`). Each token belongs to a namespace: the gate in front of the MCP app
checks the token of every request (not only the first of a session, so a stolen session id is
worth nothing without the token that opened it) and writes the token's namespace into the
request's ASGI scope, where the MCP handlers and the dashboard read it (`request_namespace`),
and which token it was (`CALLER_SCOPE_KEY`: what one token holds, such as its MCP sessions, is
counted by it). Only the dashboard's page, its static files and /ui/api/info, which hold no data,
pass without a token. Namespaces are separate memories in one database: every query of the store
is limited to one namespace.

The Host and Origin patterns of DNS-rebinding protection live here too, shared by /mcp and /ui.

Plain ASGI, no web framework: the gate only reads one header and answers 401 itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import stat
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import parse_tokens
from ..config.config import Config
from ..errors import InvalidInput

__all__ = [
    "CALLER_SCOPE_KEY",
    "LOOPBACK",
    "NAMESPACE_SCOPE_KEY",
    "Access",
    "BearerGate",
    "HostGuard",
    "matches",
    "new_token",
    "origin_patterns",
    "request_namespace",
]

log = logging.getLogger(__name__)

# The ASGI scope key the gate sets; ASGI lets servers and middleware add keys of their own.
NAMESPACE_SCOPE_KEY = "mcp_memory_server.namespace"
# Which token made the request, as the hex SHA-256 of it (never the token itself): what one caller
# may hold of the server, such as its MCP sessions, is counted by it.
CALLER_SCOPE_KEY = "mcp_memory_server.caller"
_REALM = 'Bearer realm="jiyi"'

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def origin_patterns(allowed_hosts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(Host patterns, Origin patterns) a request may name: loopback and `allowed_hosts`, each with
    any port unless it names one (`host:*`). The DNS-rebinding rule of /mcp and of the dashboard."""
    hosts: list[str] = []
    origins: list[str] = []
    for host in (*LOOPBACK, *allowed_hosts):
        has_port = host.rsplit(":", 1)[-1].isdigit() and not host.endswith("]")
        patterns = [host] if has_port else [host, f"{host}:*"]
        hosts += patterns
        origins += [f"{scheme}://{pattern}" for scheme in ("http", "https") for pattern in patterns]
    return hosts, origins


def matches(value: str, patterns: Sequence[str]) -> bool:
    """Whether a Host or Origin header is one of `patterns` exactly, or a `name:*` pattern's name
    followed by a port (1-5 ASCII digits and nothing else). The SDK's own check takes any text
    after the colon, so `localhost:evil` and `http://localhost:8765.evil.com` passed it."""
    if value in patterns:
        return True
    for pattern in patterns:
        if pattern.endswith(":*") and value.startswith(pattern[:-1]):
            port = value[len(pattern) - 1 :]
            if 0 < len(port) <= 5 and port.isascii() and port.isdigit():
                return True
    return False


class HostGuard:
    """DNS-rebinding protection for /mcp, in front of the SDK's own (which compares by prefix): a
    request must name this server in its Host header, and a browser's Origin must be one of the
    same hosts (`origin_patterns`). 421 and 403 as the SDK answers them."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts, self.origins = origin_patterns(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            origin = headers.get("origin")
            refusal: tuple[int, bytes] | None = None
            if not matches(headers.get("host", ""), self.hosts):
                refusal = 421, b"Invalid Host header"
            elif origin is not None and not matches(origin, self.origins):
                refusal = 403, b"Invalid Origin header"
            if refusal is not None:
                status, body = refusal
                answer = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body))]
                await send({"type": "http.response.start", "status": status, "headers": answer})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def new_token() -> str:
    """A fresh random token: 32 bytes from the operating system's generator, URL-safe text."""
    return secrets.token_urlsafe(32)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True)
class Access:
    """The accepted tokens, kept as SHA-256 digests, each with its namespace."""

    _tokens: tuple[tuple[bytes, str], ...]

    @classmethod
    def from_tokens(cls, tokens: Mapping[str, str]) -> Access:
        return cls(tuple((_digest(token), namespace) for token, namespace in tokens.items()))

    @classmethod
    def load(cls, config: Config) -> Access | None:
        """The tokens of the configuration and its tokens file; None when there are none (HTTP
        without authentication)."""
        tokens = dict(config.http.tokens)
        if config.http.tokens_file is not None:
            path = config.http.tokens_file
            try:
                text = path.read_text(encoding="utf-8")
                mode = path.stat().st_mode
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput(f"cannot read the tokens file {path}: {exc}") from exc
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                log.warning("the tokens file %s can be read by other users; chmod 600 it", path)
            for token, namespace in parse_tokens(text, config.namespace, source=str(path)).items():
                if tokens.get(token, namespace) != namespace:
                    raise InvalidInput(f"a token in {path} is also given for another namespace in MCP_MEMORY_TOKENS.")
                tokens[token] = namespace
        return cls.from_tokens(tokens) if tokens else None

    @property
    def callers(self) -> int:
        """How many tokens are accepted."""
        return len(self._tokens)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({namespace for _, namespace in self._tokens}))

    def namespace_for(self, token: str) -> str | None:
        """The token's namespace, or None. Every digest is compared, in constant time each, so
        the answer's timing says nothing about how close a guess came."""
        presented = _digest(token)
        found: str | None = None
        for digest, namespace in self._tokens:
            if hmac.compare_digest(digest, presented):
                found = namespace
        return found


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").strip().partition(" ")
            return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else ""
    return None


class BearerGate:
    """ASGI middleware: a request without a valid bearer token gets 401 and reaches nothing,
    except the paths `public` admits (pages that hold no data): they pass without a token, and
    with a valid one carry its namespace like any other request."""

    def __init__(self, app: ASGIApp, access: Access, public: Callable[[str], bool] | None = None) -> None:
        self.app = app
        self.access = access
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan protocol: start-up and shut-down
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        if self.public is not None and self.public(scope.get("path", "")):
            namespace = self.access.namespace_for(token) if token else None
            if token and namespace is not None:
                scope[NAMESPACE_SCOPE_KEY] = namespace
                scope[CALLER_SCOPE_KEY] = _digest(token).hex()
            await self.app(scope, receive, send)
            return
        if token is None:
            await _refuse(send, "invalid_request", "this server needs an Authorization: Bearer <token> header.")
            return
        namespace = self.access.namespace_for(token) if token else None
        if namespace is None:
            await _refuse(send, "invalid_token", "the bearer token is not one this server accepts.")
            return
        scope[NAMESPACE_SCOPE_KEY] = namespace
        scope[CALLER_SCOPE_KEY] = _digest(token).hex()
        await self.app(scope, receive, send)


async def _refuse(send: Send, error: str, description: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    challenge = _REALM if error == "invalid_request" else f'{_REALM}, error="{error}"'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode()),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def request_namespace(request: object) -> str | None:
    """The namespace the gate gave an HTTP request (a Starlette request, as the SDK hands it to
    handlers); None for stdio, in-memory and unauthenticated HTTP requests."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, Mapping):
        namespace = scope.get(NAMESPACE_SCOPE_KEY)
        return namespace if isinstance(namespace, str) else None
    return None
