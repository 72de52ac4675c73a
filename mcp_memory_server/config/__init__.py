"""Configuration: what can be set (the `MCP_MEMORY_*` variables and flags), the one frozen
`Config` built from them at start, and where the memories live (a file or a PostgreSQL URL)."""

from .config import APP_NAME, Config, default_cache_dir, default_db_path
from .settings import ENV_VARS, EnvVar, parse_tokens
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
