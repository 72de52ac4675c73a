"""Configuration: what can be set (the `MCP_MEMORY_*` variables and flags, grouped by concern),
the one frozen `Config` built from them at start, the bounds that are not settings (limits.py),
and where the memories live (a file or a PostgreSQL URL)."""

from .config import APP_NAME, ENV_VARS, Config, default_cache_dir, default_db_path
from .parsers import parse_tokens
from .settings import EnvVar
from .urls import is_database_url, redact_url

__all__ = [
    "APP_NAME",
    "ENV_VARS",
    "Config",
    "EnvVar",
    "default_cache_dir",
    "default_db_path",
    "is_database_url",
    "parse_tokens",
    "redact_url",
]
