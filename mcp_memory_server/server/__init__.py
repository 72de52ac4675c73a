"""The MCP server, the only place that imports the SDK: tools, resources, prompts, log messages,
change notifications, and the stdio and streamable HTTP transports."""

from .build import build_server, serve_http, serve_stdio

__all__ = ["build_server", "serve_http", "serve_stdio"]
