"""jiyi (记忆, "memory"): one persistent long-term memory that every MCP client can share."""

from __future__ import annotations

__version__ = "0.1.0"

from .config import Config
from .errors import InvalidInput, MemoryServerError, NotFound, StoreError
from .memory import MemoryService
from .models import ForgetResult, Hit, ListResult, Memory, RecallResult, RememberResult, Stats
from .store import Store
from .text import Segmenter

__all__ = [
    "Config",
    "ForgetResult",
    "Hit",
    "InvalidInput",
    "ListResult",
    "Memory",
    "MemoryServerError",
    "MemoryService",
    "NotFound",
    "RecallResult",
    "RememberResult",
    "Segmenter",
    "Stats",
    "Store",
    "StoreError",
    "__version__",
]
