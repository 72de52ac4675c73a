"""The web dashboard at /ui: its single page and static files (mcp_memory_server/ui/, no build
step) and its JSON API under /ui/api (what each call does: http/dashboard_api.py).

Served two ways: beside /mcp in HTTP mode (`beside`), with the MCP handlers' own namespaces
(the same stores and in-memory indexes, handed over through `Opened`), and alone by the
`dashboard` command (`standalone`), which opens the namespaces itself. Either way the bearer-token
gate of runtime/access.py stands in front, behind the guard below (so its 401 gets the same headers): the
page, its static files and /ui/api/info hold no data and pass without a token; every other call
needs one and is served in its namespace.

Browser safety, on every request: the Host header must be loopback or an allowed host and a
present Origin one of those too (DNS rebinding, other sites); a state-changing call must be
`Content-Type: application/json` (an import also application/octet-stream), which a cross-site form
cannot send; bodies are capped at MCP_MEMORY_MAX_BODY (413), and so is what an imported file
unpacks to and holds (transfer/importing.py). Responses forbid framing and sniffing, and the page allows
only its own scripts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config.config import Config
from ..errors import InvalidInput, MemoryServerError, NotFound, StoreError, TooLarge
from ..runtime.access import Access, BearerGate, matches, origin_patterns, request_namespace
from ..runtime.namespaces import AppState, Opened, Spaces
from ..store.rows import utcnow
from ..text.segmenter import Segmenter
from . import dashboard_api as api

__all__ = ["PREFIX", "UI_DIR", "beside", "dashboard_app", "is_public", "standalone"]

log = logging.getLogger(__name__)

PREFIX = "/ui"
UI_DIR = Path(__file__).parent / "ui"
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "DELETE")  # DELETE has no body; only fetch can send it
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
]


def is_public(path: str) -> bool:
    """The paths that hold no data and need no token (never one with a `..` segment: routing
    does not resolve those, but a public prefix must not lead anywhere else either)."""
    if ".." in path.split("/"):
        return False
    return path in (PREFIX, f"{PREFIX}/", f"{PREFIX}/api/info") or path.startswith(f"{PREFIX}/static/")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


_STATUS = ((NotFound, 404), (TooLarge, 413), (InvalidInput, 400), (StoreError, 503))


class _Dashboard:
    def __init__(self, config: Config, opened: Opened, access: Access | None) -> None:
        self.config = config
        self.opened = opened
        self.auth = access is not None

    def state(self, request: Request) -> AppState:
        spaces = self.opened.get()
        namespace = request_namespace(request)
        if namespace is None and spaces.require_token:  # the gate makes this unreachable
            raise PermissionError
        return spaces.get(namespace)

    async def body(self, request: Request) -> bytes:
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        too_large = TooLarge(f"the request body is over {limit:,} bytes (MCP_MEMORY_MAX_BODY).")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks = bytearray()
        async for chunk in request.stream():
            chunks += chunk
            if len(chunks) > limit:
                raise too_large
        return bytes(chunks)

    async def json(self, request: Request) -> Any:
        raw = await self.body(request)
        try:
            return json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidInput(f"the body is not valid JSON: {exc}") from exc

    def endpoint(
        self, handler: Callable[[AppState, Request], Awaitable[Any]], status: int = 200
    ) -> Callable[[Request], Awaitable[Response]]:
        """A route: our errors become {"error": message} with their status; results become JSON."""

        async def run(request: Request) -> Response:
            try:
                result = await handler(self.state(request), request)
            except PermissionError:
                return _error(401, "this request carries no authenticated namespace.")
            except MemoryServerError as exc:
                code = next((c for kind, c in _STATUS if isinstance(exc, kind)), 500)
                return _error(code, str(exc))
            except Exception:
                log.exception("dashboard call %s %s failed", request.method, request.url.path)
                return _error(500, "internal error; the server's log has the details.")
            if isinstance(result, Response):
                return result
            if isinstance(result, BaseModel):
                result = result.model_dump(mode="json")
            return JSONResponse(result, status_code=status)

        return run

    # ---- pages -------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return self._file(UI_DIR / "index.html")

    async def static(self, request: Request) -> Response:
        name = request.path_params["path"]
        root = UI_DIR.resolve()
        if "\x00" in name or any(part.startswith(".") for part in Path(name).parts):
            return _error(404, "no such file.")
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            return _error(404, "no such file.")
        return self._file(path)

    @staticmethod
    def _file(path: Path) -> Response:
        media = _MEDIA_TYPES.get(path.suffix)
        if media is None or not path.is_file():
            return _error(404, f"{path.name} is not part of the dashboard (is mcp_memory_server/ui installed?).")
        return FileResponse(path, media_type=media, headers={"cache-control": "no-cache"})

    async def info(self, request: Request) -> Response:
        namespace = request_namespace(request)
        if namespace is None and not self.auth:
            namespace = self.config.namespace
        return JSONResponse(api.info(self.config, namespace, self.auth))

    # ---- the API (each a handler of `endpoint`) ----------------------------------------------

    def routes(self) -> list[Route]:
        e = self.endpoint
        base = f"{PREFIX}/api"
        one = f"{base}/memories/{{memory_id}}"

        def query(r: Request) -> dict[str, str]:
            return dict(r.query_params)

        async def add(s: AppState, r: Request) -> Any:
            return await api.add(s, await self.json(r))

        async def edit(s: AppState, r: Request) -> Any:
            return await api.edit(s, r.path_params["memory_id"], await self.json(r))

        async def delete_many(s: AppState, r: Request) -> Any:
            return await api.delete_many(s, await self.json(r))

        async def export(s: AppState, r: Request) -> Response:
            name = f"memories-{utcnow().date().isoformat()}.json"
            return Response(
                await api.export(s),
                media_type="application/json; charset=utf-8",
                headers={"content-disposition": f'attachment; filename="{name}"'},
            )

        async def import_file(s: AppState, r: Request) -> Any:
            return await api.import_file(s, await self.body(r), query(r))

        async def edit_profile(s: AppState, r: Request) -> Any:
            return await api.edit_profile(s, await self.json(r))

        return [
            Route(PREFIX, self.index, methods=["GET"]),
            Route(f"{PREFIX}/", self.index, methods=["GET"]),
            Route(f"{PREFIX}/static/{{path:path}}", self.static, methods=["GET"]),
            Route(f"{base}/info", self.info, methods=["GET"]),
            Route(f"{base}/memories", e(lambda s, r: api.list_memories(s, query(r))), methods=["GET"]),
            Route(f"{base}/memories", e(add, 201), methods=["POST"]),
            Route(f"{base}/memories/delete", e(delete_many), methods=["POST"]),
            Route(one, e(lambda s, r: api.detail(s, r.path_params["memory_id"])), methods=["GET"]),
            Route(one, e(edit), methods=["PATCH"]),
            Route(one, e(lambda s, r: api.delete(s, [r.path_params["memory_id"]])), methods=["DELETE"]),
            Route(f"{base}/search", e(lambda s, r: api.search(s, query(r))), methods=["GET"]),
            Route(f"{base}/export", e(export), methods=["GET"]),
            Route(f"{base}/import", e(import_file), methods=["POST"]),
            Route(f"{base}/profile", e(lambda s, r: api.profile(s)), methods=["GET"]),
            Route(f"{base}/profile", e(edit_profile), methods=["POST"]),
            Route(f"{base}/extraction-log", e(lambda s, r: api.extraction_log(s, query(r))), methods=["GET"]),
            Route(f"{base}/stats", e(lambda s, r: api.stats(s)), methods=["GET"]),
        ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = "no such page or API call." if exc.status_code == 404 else str(exc.detail)
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


def _body_type_ok(path: str, content_type: str) -> bool:
    """JSON, or for an import the file's bytes as they are: neither is a type a cross-site form
    can send or a cross-site fetch can send without a preflight, which this server never answers."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind == "application/octet-stream" and path == f"{PREFIX}/api/import")


class _Guard:
    """Host, Origin and Content-Type checks before anything else, security headers after."""

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...]) -> None:
        self.app = app
        self.hosts, self.origins = origin_patterns(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}
        refusal: tuple[int, str] | None = None
        origin = headers.get("origin")
        if not matches(headers.get("host", ""), self.hosts):
            refusal = 421, "the Host header names no host this server answers for (MCP_MEMORY_ALLOWED_HOSTS)."
        elif origin is not None and not matches(origin, self.origins):
            refusal = 403, f"requests from {origin} are not accepted; open the dashboard from this server."
        elif scope["method"] not in _SAFE_METHODS and not _body_type_ok(scope["path"], headers.get("content-type", "")):
            refusal = 415, "a call that changes something must send Content-Type: application/json."
        if refusal is not None:
            await _error(*refusal)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
                if scope["path"].startswith(f"{PREFIX}/api/"):
                    message["headers"].append((b"cache-control", b"no-store"))
            await send(message)

        await self.app(scope, receive, send_with_headers)


def dashboard_app(config: Config, opened: Opened, access: Access | None, lifespan: Any = None) -> ASGIApp:
    """The dashboard's routes behind the token gate (when there are tokens), both behind the guard:
    the Host check comes before the token check, and the gate's 401 gets the security headers and
    no-store like every other answer."""
    ui = _Dashboard(config, opened, access)
    app: ASGIApp = Starlette(routes=ui.routes(), exception_handlers={HTTPException: _http_error}, lifespan=lifespan)
    if access is not None:
        app = BearerGate(app, access, public=is_public)
    return _Guard(app, config.http.allowed_hosts)


def beside(mcp: ASGIApp, config: Config, opened: Opened, access: Access | None) -> ASGIApp:
    """HTTP mode's app: /ui to the dashboard, everything else (and the lifespan, which opens the
    namespaces into `opened`) to the MCP app; each behind the token gate when there are tokens."""
    ui = dashboard_app(config, opened, access)
    other = BearerGate(mcp, access) if access is not None else mcp

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        target = ui if path == PREFIX or path.startswith(f"{PREFIX}/") else other
        await target(scope, receive, send)

    return route


def standalone(config: Config, access: Access | None) -> ASGIApp:
    """The `dashboard` command's app: only the dashboard, over namespaces it opens itself."""
    opened = Opened()

    @asynccontextmanager
    async def lifespan(_: object) -> AsyncIterator[None]:
        segmenter = Segmenter(config.cache_dir)
        segmenter.start()
        namespaces = access.namespaces if access is not None else ()
        async with Spaces(config, segmenter, namespaces, require_token=access is not None) as spaces:
            opened.set(spaces)
            try:
                yield
            finally:
                opened.set(None)

    return dashboard_app(config, opened, access, lifespan)
