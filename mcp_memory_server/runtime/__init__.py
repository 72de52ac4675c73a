"""What a running server holds, shared by the MCP server, the dashboard and the CLI: the
namespaces it serves (each with its store and services), and who may reach which (tokens)."""

from .access import Access, new_token
from .namespaces import Opened, Spaces

__all__ = ["Access", "Opened", "Spaces", "new_token"]
