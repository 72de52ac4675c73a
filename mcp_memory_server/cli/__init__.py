"""The command line: `jiyi` serves (stdio or HTTP), and imports, exports, backs up, renders
MEMORY.md and manages tokens."""

from .commands import main

__all__ = ["main"]
