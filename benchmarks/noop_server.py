"""A server with one tool that does nothing, on the same MCP SDK: the floor of a tool round trip.

python -m benchmarks.noop_server   (stdio)
"""

from mcp.server import MCPServer

server = MCPServer("noop")


@server.tool()
def noop() -> str:
    """Return at once."""
    return "ok"


if __name__ == "__main__":
    server.run()
