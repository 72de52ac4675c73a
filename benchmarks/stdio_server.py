"""The stdio server as `jiyi` serves it, with the two pieces `benchmarks.stdio_transport` weighs
switchable (for the benchmark only; the product has no such switch):

    python -m benchmarks.stdio_server --db PATH [--transport own|sdk] [--schemas lean|...]

--transport sdk    the SDK's stdio transport (`MCPServer.run_stdio_async`) instead of ours
--schemas pydantic the schemas as the SDK and pydantic make them: input schemas not made lean
                   (titles, `anyOf [T, null]`, `$defs`), output schemas not shaped (titles,
                   descriptions, `required`, `$defs`/`$ref`, `additionalProperties: false`);
                   pydantic-input and pydantic-output leave only that side as pydantic makes it

The environment configures it as it configures `jiyi` (MCP_MEMORY_CACHE_DIR, MCP_MEMORY_LOG_LEVEL).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import anyio


def _pydantic_schemas(inputs: bool, outputs: bool) -> None:
    """Undo schema shapings before any tool registers: pydantic's output schema as the SDK asks
    for it, and the SDK's `tools/list` without our input-schema pass."""
    from mcp.server.mcpserver import MCPServer

    from mcp_memory_server import models
    from mcp_memory_server.server import app

    def unshaped(schema: dict[str, Any], cls: type[Any], *, inline: bool) -> None:
        del schema, cls, inline

    if outputs:
        models._shape = unshaped  # type: ignore[assignment]  # looked up when a schema is generated
    if inputs:
        app.MemoryServer.list_tools = MCPServer.list_tools  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--transport", choices=["own", "sdk"], default="own")
    parser.add_argument("--schemas", choices=["lean", "pydantic", "pydantic-input", "pydantic-output"], default="lean")
    args = parser.parse_args()
    if args.schemas != "lean":
        _pydantic_schemas(args.schemas != "pydantic-output", args.schemas != "pydantic-input")

    from mcp_memory_server.config import Config
    from mcp_memory_server.server import build_server, serve_stdio

    config = Config.from_env(db_path=args.db)
    logging.basicConfig(level=config.log_level, stream=sys.stderr)
    server = build_server(config.with_changes(stateless_http=False))
    anyio.run(type(server).run_stdio_async if args.transport == "sdk" else serve_stdio, server)


if __name__ == "__main__":
    main()
