"""The memory service over one store: remember, recall (how a memory is scored: recall.py),
forget and list; change operations, lifecycle (cleanup, archive, restore), sessions and their
working memories, and the response strategy. No MCP here: the CLI, the dashboard and the
benchmarks call the same functions."""

from .service import MemoryService
from .sessions import Sessions

__all__ = ["MemoryService", "Sessions"]
