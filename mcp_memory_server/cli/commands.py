"""The `jiyi` command: serve (the default), stats, search, backup, JSON export and import,
and MEMORY.md import and export."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .. import __version__
from ..config import ENV_VARS
from ..config.config import Config
from ..config.limits import MAX_RECALL_HITS
from ..errors import InvalidInput, MemoryServerError, NotFound
from ..memory.embedding import EmbeddingWorker, SemanticStage
from ..memory.service import MemoryService
from ..runtime.access import Access, new_token
from ..runtime.namespaces import Opened, semantic_stage
from ..store.store import Store
from ..text.segmenter import Segmenter
from ..transfer.importing import FORMATS, ImportSummary, import_bytes
from ..transfer.json_transfer import export_json
from ..transfer.markdown import render_store
from .progress import Bar

if TYPE_CHECKING:
    from ..store.sqlite.backup import BackupReport

__all__ = ["main"]

log = logging.getLogger("mcp_memory_server")

_DESCRIPTION = """\
One persistent long-term memory for every MCP client (Claude Desktop, Claude Code, Cursor,
VS Code, any agent), with Chinese and English search.

With no command it serves MCP over stdio, which is what MCP clients start it for."""

_EPILOG = (
    "environment:\n"
    + "\n".join(f"  {v.name:<32} {v.description}" for v in ENV_VARS)
    + """

examples:
  jiyi                          serve over stdio (for MCP clients)
  jiyi --transport http         serve on http://127.0.0.1:8765/mcp
  jiyi dashboard               the web dashboard on http://127.0.0.1:8766/ui
  jiyi token                    a new bearer token for MCP_MEMORY_TOKENS
  jiyi search "咖啡"             what would recall return?
  jiyi stats                    counts, database path and size
  jiyi backup memory-copy.db    a consistent copy, safe while servers write
  jiyi export memories.json     every memory, archived ones and history, as JSON
  jiyi import memories.json     load such a file (again: nothing changes)
  jiyi import memory.jsonl      the reference memory server's knowledge graph
  jiyi import export.zip        an OpenMemory export (or mem0's get_all as JSON)
  jiyi import MEMORY.md         a MEMORY.md file's items as memories
  jiyi export --format markdown every core memory as MEMORY.md, untruncated"""
)


def _common(defaults: bool) -> argparse.ArgumentParser:
    # Subcommand parsers must not reset options given before the subcommand: they default to
    # SUPPRESS, and only the top-level parser carries real defaults.
    d: Any = None if defaults else argparse.SUPPRESS
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--db",
        metavar="PATH|URL",
        default=d,
        help="SQLite database file, or a postgresql:// URL (default: $MCP_MEMORY_DB or the platform data dir)",
    )
    parent.add_argument(
        "--namespace",
        metavar="NAME",
        default=d,
        help="whose memories: a namespace name (default: $MCP_MEMORY_NAMESPACE or the default namespace)",
    )
    parent.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        type=str.upper,
        default=d,
        help="log level of stderr messages (default: INFO)",
    )
    parent.add_argument(
        "--semantic",
        choices=["auto", "on", "off"],
        type=str.lower,
        default=d,
        help="semantic recall: an embedding model beside the keywords, embedding memories in the background "
        "(default: $MCP_MEMORY_SEMANTIC or auto: on when the semantic extra is installed)",
    )
    return parent


def _serve_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    def d(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--transport", choices=["stdio", "http"], default=d("stdio"), help="stdio (default) or streamable HTTP"
    )
    parser.add_argument("--host", default=d("127.0.0.1"), help="HTTP bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=d(None), help="HTTP port (default: 8765)")
    parser.add_argument(
        "--tokens-file",
        metavar="PATH",
        default=d(None),
        help="HTTP bearer tokens, one namespace:token a line (default: $MCP_MEMORY_TOKENS_FILE)",
    )
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=d(False),
        help="serve HTTP on a non-loopback address without tokens (anyone who reaches it can read and change "
        "every memory)",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        default=d(False),
        help="HTTP without sessions: any replica on the same database can answer any request "
        "(default: $MCP_MEMORY_STATELESS or off)",
    )


_SERVE_PORT = 8765
_DASHBOARD_PORT = 8766


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jiyi",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_common(True)],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _serve_options(parser, True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", parents=[_common(False)], help="serve MCP (the default)")
    _serve_options(serve, False)
    ui = commands.add_parser(
        "dashboard",
        parents=[_common(False)],
        help="serve the web dashboard alone (browse, search, edit, import and export memories) and print its URL",
    )
    # Like `serve`'s options: SUPPRESS keeps what was given before the subcommand.
    ui.add_argument("--host", default=argparse.SUPPRESS, help="bind address (default: 127.0.0.1)")
    ui.add_argument("--port", type=int, default=argparse.SUPPRESS, help="port (default: 8766; 0: any free port)")
    ui.add_argument("--tokens-file", metavar="PATH", default=argparse.SUPPRESS, help="bearer tokens, as for HTTP mode")
    ui.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=argparse.SUPPRESS,
        help="serve on a non-loopback address without tokens (anyone who reaches it can read and change every memory)",
    )
    ui.add_argument("--open", action="store_true", help="open the dashboard in the default web browser")
    commands.add_parser("stats", parents=[_common(False)], help="print counts, database path and size as JSON")
    commands.add_parser("token", help="print a new random bearer token for MCP_MEMORY_TOKENS")
    search = commands.add_parser(
        "search",
        parents=[_common(False)],
        help="run the retriever on a query, as recall would (does not count as access)",
    )
    search.add_argument("query", help="the query, Chinese or English")
    search.add_argument("--limit", type=int, default=5, help=f"hits to show, 1-{MAX_RECALL_HITS} (default: 5)")
    search.add_argument("--category", help="only this category")
    search.add_argument("--json", action="store_true", help="print the full result as JSON")
    backup = commands.add_parser(
        "backup",
        parents=[_common(False)],
        help="copy the database consistently through SQLite's backup API, safe while servers write to it",
    )
    backup.add_argument("path", help="the backup file to write (written beside it first, then renamed)")
    backup.add_argument("--force", action="store_true", help="replace PATH if it exists")
    exported_json = commands.add_parser(
        "export",
        parents=[_common(False)],
        help="write every memory (archived ones, history, sessions, profile edits) as JSON, losslessly",
    )
    exported_json.add_argument("file", nargs="?", help="where to write it (default: stdout)")
    exported_json.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="json: everything, losslessly (default); markdown: every core memory as MEMORY.md, untruncated",
    )
    imported_json = commands.add_parser(
        "import",
        parents=[_common(False)],
        help="load memories from a file, all or nothing (again: nothing changes)",
    )
    imported_json.add_argument("file", help="the file to import")
    imported_json.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="json (this server's export), memory-jsonl (the reference memory server's memory.jsonl), mem0 "
        "(mem0 or OpenMemory exports) or markdown (MEMORY.md); default: guessed from the file",
    )
    imported = commands.add_parser(
        "import-markdown",
        parents=[_common(False)],
        help="the same as import FILE --format markdown",
    )
    imported.add_argument("file", help="the Markdown file, sections as memory://MEMORY.md writes them")
    exported = commands.add_parser(
        "export-markdown", parents=[_common(False)], help="write memory://MEMORY.md to a file or stdout"
    )
    exported.add_argument("file", nargs="?", help="where to write it (default: stdout)")
    exported.add_argument("--full", action="store_true", help="leave nothing out, whatever the soft limit")
    return parser


def _configure_logging(level: str) -> None:
    # stderr only: in stdio mode stdout is the protocol channel. The handler keeps the level even
    # when a client asks the server's loggers for more (logging/setLevel, see server/log_messages.py).
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level)
    logging.basicConfig(level=level, handlers=[stderr], format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    # Before numpy loads (lazily, with the first index): the server's arrays need no threaded BLAS,
    # and OpenBLAS's threads contending with the server's own on a small machine made a 0.2 ms
    # product take 13-30 ms (BENCHMARKS.md). A value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        if args.command == "token":
            print(new_token())
            return 0
        config = Config.from_env(
            db_path=args.db,
            log_level=args.log_level,
            namespace=args.namespace,
            tokens_file=getattr(args, "tokens_file", None),
            stateless_http=True if getattr(args, "stateless", False) else None,  # else the environment's
            semantic=args.semantic,
        )
        _configure_logging(config.log_level)
        if args.command == "stats":
            return anyio.run(_stats, config)
        if args.command == "dashboard":
            return _dashboard(config, args)
        if args.command == "search":
            return anyio.run(_search, config, args)
        if args.command == "backup":  # it refuses a missing database itself
            copy = anyio.run(_backup, config, Path(args.path), args.force)
            memories = f"{copy.memories:,} memor{'y' if copy.memories == 1 else 'ies'}"
            print(f"backed up {config.db_path} to {copy.path}: {memories}, {copy.bytes:,} bytes")
            return 0
        if args.command == "export":
            _existing(config)
            if args.format == "markdown":
                _write(args.file, anyio.run(_export_markdown, config, True))
            else:
                _write(args.file, anyio.run(_export, config))
            return 0
        if args.command in ("import", "import-markdown"):
            chosen = "markdown" if args.command == "import-markdown" else args.format
            loaded = anyio.run(_import, config, args.file, _read(args.file), chosen)
            print(f"{args.file}: {loaded.detail}")
            _embed_after_import(config, Bar("embedding"))
            return 0
        if args.command == "export-markdown":
            _write(args.file, anyio.run(_export_markdown, config, args.full))
            return 0
        return _serve(config, args)
    except MemoryServerError as exc:
        print(f"jiyi: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _serve(config: Config, args: argparse.Namespace) -> int:
    from ..server.build import build_server, serve_http, serve_stdio  # imports mcp: only when serving

    log.info("jiyi %s, memory database: %s", __version__, config.database)
    if args.transport == "stdio":  # one client, one session: MCP_MEMORY_STATELESS is HTTP's
        anyio.run(serve_stdio, build_server(config.with_changes(stateless_http=False)))
        return 0
    host, port = args.host, _SERVE_PORT if args.port is None else args.port
    access = _access(config, host, args.allow_unauthenticated)

    def serving(base: str) -> None:  # once the socket listens: the port is ours
        url = f"{base}/mcp"
        log.info("serving MCP over streamable HTTP at %s%s", url, " (stateless)" if config.http.stateless_http else "")
        log.info("web dashboard at %s/ui", base)
        log.info(
            "try it: npx @modelcontextprotocol/inspector, then connect with transport 'Streamable HTTP' and URL %s",
            url,
        )

    opened = Opened()
    server = build_server(config, access=access, opened=opened)
    anyio.run(serve_http, server, config, host, port, access, opened, serving)
    return 0


def _access(config: Config, host: str, allow_unauthenticated: bool) -> Access | None:
    """The tokens of HTTP mode and the dashboard; refuses a non-loopback address without them."""
    access = Access.load(config)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if access is None and not loopback and not allow_unauthenticated:
        raise InvalidInput(
            f"refusing to serve {host} without tokens: anyone who can reach it could read and change every "
            "memory. Set MCP_MEMORY_TOKENS (see `jiyi token`), or pass --allow-unauthenticated "
            "if something in front of the server checks who calls."
        )
    if access is not None:
        log.info("bearer token required; namespaces: %s", ", ".join(repr(n) for n in access.namespaces))
    elif not loopback:
        log.warning("listening on %s without tokens: anyone who can reach it can read and change the memories", host)
    if not loopback:
        accepted = ", ".join(("loopback", *config.http.allowed_hosts))
        log.info("Host headers accepted: %s (MCP_MEMORY_ALLOWED_HOSTS adds more)", accepted)
    return access


def _dashboard(config: Config, args: argparse.Namespace) -> int:
    from ..server.transports import serve_dashboard  # imports starlette and uvicorn: only when serving

    log.info("jiyi %s dashboard, memory database: %s", __version__, config.database)
    access = _access(config, args.host, args.allow_unauthenticated)

    def ready(url: str) -> None:
        print(f"dashboard: {url}", flush=True)  # the CLI, not stdio mode: stdout is the user's
        if args.open:
            import webbrowser

            webbrowser.open(url)

    port = _DASHBOARD_PORT if args.port is None else args.port
    anyio.run(serve_dashboard, config, args.host, port, access, ready)
    return 0


def _existing(config: Config) -> None:
    # stats and search only read: a mistyped --db must not silently create an empty database
    # (a PostgreSQL database is created by its administrator, never by us).
    if config.db_url is None and not config.db_path.exists():
        raise NotFound(
            f"there is no memory database at {config.db_path}; check --db or MCP_MEMORY_DB "
            "(the server creates the database when it first starts)"
        )


async def _backup(config: Config, path: Path, force: bool) -> BackupReport:
    from ..store.sqlite.backup import backup  # not loaded when serving

    if config.db_url is not None:
        raise InvalidInput(
            "backup copies an SQLite file; back up a PostgreSQL database with pg_dump "
            f"(pg_dump --format=custom --file=memory.dump '{config.database}'), see the README's deployment section"
        )
    return await backup(config.db_path, path, force=force, busy_timeout_ms=config.busy_timeout_ms)


async def _stats(config: Config) -> int:
    _existing(config)
    async with Store(config, Segmenter(config.cache_dir)) as store:
        stats = await MemoryService(store).stats()
    print(stats.model_dump_json(indent=2))
    return 0


_SEARCH_EMBEDS = 200  # memories a search embeds before it answers (a few seconds at most)


async def _search(config: Config, args: argparse.Namespace) -> int:
    _existing(config)
    async with Store(config, Segmenter(config.cache_dir)) as store:
        # With the semantic stage on, the stored vectors are searched too. A few memories no
        # server has embedded yet are embedded first; more are found by their keywords alone.
        # A one-off search waits for jieba's dictionary (a server answers from bigrams meanwhile).
        await store.segmenter.wait()
        worker = EmbeddingWorker(store, semantic_stage(config))
        if await worker.attach():
            model = worker.stage.model_id or ""
            embedded, total = await store.vector_progress(model)
            if total - embedded <= _SEARCH_EMBEDS:
                await worker.catch_up()
            else:
                print(
                    f"jiyi: {total - embedded} memories have no vector yet and are searched by keywords only; "
                    "a running server embeds them in the background",
                    file=sys.stderr,
                )
        result = await MemoryService(store).recall(
            query=args.query, limit=args.limit, category=args.category, track_access=False
        )
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    print(f"keywords: {', '.join(result.keywords) or '(none)'}   stage: {result.stage}")
    for hit in result.hits:
        b = hit.breakdown
        print(f"{hit.id:>10}  {hit.score:.3f}  [{hit.category}] {hit.content}")
        semantic = f" semantic {b.semantic:.2f}" if b.semantic is not None else ""
        print(
            f"{'':>10}  keyword {b.keyword:.2f}{semantic} category {b.category:.2f} recency {b.recency:.2f} "
            f"frequency {b.frequency:.2f} confidence {b.confidence:.2f} topic x{b.topic_boost:.1f}"
        )
    if not result.hits:
        print("no memories match")
    return 0


def _read(file: str) -> bytes:
    try:
        return Path(file).read_bytes()  # bytes: a zip or gzip export is unpacked, text decoded, by importing
    except OSError as exc:
        raise NotFound(f"cannot read {file}: {exc}") from exc


def _write(file: str | None, text: str) -> None:
    """To stdout when no file is named (this is the CLI: stdout is not a protocol channel here)."""
    if file is None:
        sys.stdout.write(text)
        return
    try:
        Path(file).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise NotFound(f"cannot write {file}: {exc}") from exc


async def _export(config: Config) -> str:
    bar = Bar("exporting")
    try:
        async with Store(config, Segmenter(config.cache_dir)) as store:
            return await export_json(store, progress=bar)
    finally:
        bar.close()


async def _import(config: Config, file: str, data: bytes, file_format: str | None) -> ImportSummary:
    bar = Bar("importing")
    try:
        async with Store(config, Segmenter(config.cache_dir)) as store:
            return await import_bytes(store, data, file_format, name=file, progress=bar)
    finally:
        bar.close()


def _embed_after_import(config: Config, bar: Bar) -> None:
    """On a terminal, with the semantic stage on: embed what the import brought, with a progress
    bar (interrupted, the rest is left to a server's background worker). Elsewhere (a script, a
    pipe) the import returns at once and a server embeds in the background."""
    stage = semantic_stage(config)
    if not bar.enabled or stage.state == "off":
        return
    try:
        anyio.run(_embed_all, config, stage, bar)
    except KeyboardInterrupt:
        bar.close()
        print("jiyi: embedding interrupted; a running server embeds the rest in the background", file=sys.stderr)
    finally:
        bar.close()


async def _embed_all(config: Config, stage: SemanticStage, bar: Bar) -> bool:
    """Every memory without a current vector, embedded now, `bar` showing how many have one."""
    async with Store(config, Segmenter(config.cache_dir)) as store:
        return await EmbeddingWorker(store, stage).catch_up(bar)


async def _export_markdown(config: Config, full: bool) -> str:
    _existing(config)
    async with Store(config, Segmenter(config.cache_dir)) as store:
        return await render_store(store, full=full)
