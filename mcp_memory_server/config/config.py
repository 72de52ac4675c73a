"""One frozen configuration, built once from flags and environment and passed down.

Nothing here touches the file system: paths are computed, never created, so importing the package
or building a `Config` has no side effects.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput
from .settings import (
    BODY_BYTES_PER_ITEM,
    DEFAULT_KEEP_CATEGORIES,
    ENV_VARS,
    NAMESPACE_PATTERN,
    NAMESPACE_RULE,
    UNPACK_RATIO,
    ScoreWeights,
    check_token,
    default_category_weights,
    parse_tokens,
)
from .urls import is_database_url, redact_url

__all__ = ["Config", "default_cache_dir", "default_db_path"]

# The data and cache directories keep the name the project had before it was published as `jiyi`:
# existing users' memories live there.
APP_NAME = "mcp-memory-server"


@dataclass(frozen=True, kw_only=True)
class Config:
    """Everything the server, the CLI and the benchmarks need to know, in one place."""

    db_path: Path  # the SQLite file; os.devnull when `db_url` names a PostgreSQL database
    cache_dir: Path
    db_url: str | None = field(default=None, repr=False)  # a postgresql:// URL (it may hold a password)
    max_content_chars: int = 2000
    max_query_chars: int = 2000
    max_tags: int = 20
    max_tag_chars: int = 40
    max_page: int = 200  # memories in one page of `list`
    max_batch: int = 200  # ids in one forget or restore, operations in one apply_changes
    max_keywords: int = 10
    candidate_limit: int = 50
    default_limit: int = 5
    half_life_days: float = 7.0
    topic_boost: float = 1.3
    duplicate_threshold: float = 0.85
    busy_timeout_ms: int = 5000
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    bm25_b_cjk: float = 0.9  # length normalisation of Chinese text (see Bm25Index._length_norm)
    coordination: float = 0.1
    char_weight: float = 0.5
    feedback_docs: int = 3
    feedback_terms: int = 10
    feedback_weight: float = 0.2
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    category_weights: Mapping[str, float] = field(default_factory=default_category_weights)
    log_level: str = "INFO"
    # Sessions and the memory sieve (SPEC 4 and 7).
    emotion_min_confidence: float = 0.6  # below it, the neutral strategy
    strategy_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    sampling_timeout_s: float = 60.0  # how long the sieve waits for the client's model
    markdown_language: str = "auto"  # headings of memory://MEMORY.md: zh, en, or auto (by the memories)
    markdown_limit: int = 5000  # its soft limit in characters
    sieve_instructions: str = ""  # the user's own instructions for the extractor

    # ---- lifecycle (SPEC 5: cleanup and its keep rules, the working memory of sessions) ----
    # Cleanup applies only when the namespace holds more than this many live memories.
    cleanup_min_memories: int = 50
    # Rule "unused": accessed fewer than `cleanup_unused_accesses` times, not for this many days.
    cleanup_unused_days: float = 30.0
    cleanup_unused_accesses: int = 2
    # Rule "low_importance": importance below `cleanup_low_importance`, not accessed for this long.
    cleanup_stale_days: float = 90.0
    cleanup_low_importance: float = 0.5
    # Keep rules: whatever a rule selects stays when it matches one of these (or its source is manual).
    keep_importance: float = 0.8
    keep_accesses: int = 10
    keep_recent_days: float = 7.0
    keep_categories: tuple[str, ...] = DEFAULT_KEEP_CATEGORIES
    # A session without activity for this long expires: its working memories with importance at
    # least `promote_importance` or `promote_accesses` accesses become core, the rest are archived.
    session_idle_minutes: float = 30.0
    maintenance_minutes: float = 10.0  # session expiry and cleanup at start and this often (0: start only)
    promote_importance: float = 0.7
    promote_accesses: int = 2

    # ---- whose memories, and HTTP access (SPEC 10) ----
    # The namespace served when a request names none: stdio, HTTP without tokens, the CLI.
    namespace: str = ""
    # Bearer token -> namespace. Kept out of repr: a logged Config must not show them.
    tokens: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    tokens_file: Path | None = None  # more tokens, one `namespace:token` a line (read when HTTP starts)
    allowed_hosts: tuple[str, ...] = ()  # Host headers accepted besides loopback (DNS-rebinding protection)
    max_body_bytes: int = 4 * 1024 * 1024  # largest HTTP request body
    stateless_http: bool = False  # no MCP session between HTTP requests: replicas behind a load balancer
    # Keys sealing a 2026-07-28 call's state between its rounds (first seals, all open): replicas
    # share them so a round may reach another one. Empty: a random key of this process.
    state_keys: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        """Build from `MCP_MEMORY_*` variables; keyword overrides (from flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for var in ENV_VARS:
            raw = env.get(var.name)
            if raw is not None and raw.strip() != "":
                try:
                    values[var.field] = var.parse(raw.strip())
                except ValueError as exc:
                    # A secret, or a database URL's password, never reaches a message.
                    shown = "(value withheld)" if var.secret else repr(redact_url(raw.strip()))
                    reason = str(exc).replace(repr(raw.strip()), shown).replace(raw.strip(), shown)
                    raise InvalidInput(f"{var.name}={shown} is not valid: {reason}") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        if isinstance(values.get("tokens"), str):  # bare tokens belong to the namespace configured above
            values["tokens"] = MappingProxyType(parse_tokens(values["tokens"], values.get("namespace", "")))
        values.setdefault("db_path", default_db_path(env))
        if is_database_url(str(values["db_path"])):
            values["db_url"] = str(values["db_path"])
            values["db_path"] = os.devnull
        values.setdefault("cache_dir", default_cache_dir(env))
        values["db_path"] = Path(values["db_path"]).expanduser().resolve()
        values["cache_dir"] = Path(values["cache_dir"]).expanduser().resolve()
        config = cls(**values)
        config.validate()
        return config

    @property
    def database(self) -> str:
        """Where the memories live, for logs and messages: the file, or the URL without password."""
        return redact_url(self.db_url) if self.db_url is not None else str(self.db_path)

    @property
    def database_name(self) -> str:
        """The database's name alone (no directory, host or user): the file or database name."""
        if self.db_url is None:
            return self.db_path.name
        return urlsplit(self.db_url).path.strip("/") or "postgresql"

    # What one import may cost follows the body cap (settings.UNPACK_RATIO says why).
    @property
    def max_unpacked_bytes(self) -> int:
        """The most an imported zip or gzip file may unpack to."""
        return UNPACK_RATIO * self.max_body_bytes

    @property
    def max_import_values(self) -> int:
        """The most JSON values an imported file may hold."""
        return self.max_body_bytes

    @property
    def max_import_items(self) -> int:
        """The most items (memories, observations, relations, list items) one import takes."""
        return self.max_body_bytes // BODY_BYTES_PER_ITEM

    def with_changes(self, **changes: Any) -> Config:
        """A copy with some fields replaced (tests and benchmarks use this)."""
        config = replace(self, **changes)
        config.validate()
        return config

    def validate(self) -> None:
        """Reject settings that would make the server misbehave, naming the setting."""
        for name in (
            "max_content_chars",
            "max_query_chars",
            "max_tags",
            "max_tag_chars",
            "max_page",
            "max_batch",
            "max_body_bytes",
            "max_keywords",
            "candidate_limit",
            "default_limit",
            "busy_timeout_ms",
        ):
            if getattr(self, name) < 1:
                raise InvalidInput(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("cleanup_min_memories", "cleanup_unused_accesses", "keep_accesses", "promote_accesses"):
            if getattr(self, name) < 0:
                raise InvalidInput(f"{name} must not be negative, got {getattr(self, name)}")
        for name in ("cleanup_unused_days", "cleanup_stale_days", "keep_recent_days", "session_idle_minutes"):
            if not getattr(self, name) > 0:
                raise InvalidInput(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("cleanup_low_importance", "keep_importance", "promote_importance"):
            if not 0 <= getattr(self, name) <= 1:
                raise InvalidInput(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        if self.half_life_days <= 0:
            raise InvalidInput(f"half_life_days must be positive, got {self.half_life_days}")
        if not 0 < self.duplicate_threshold <= 1:
            raise InvalidInput(f"duplicate_threshold must be in (0, 1], got {self.duplicate_threshold}")
        if self.topic_boost < 1:
            raise InvalidInput(f"topic_boost must be at least 1, got {self.topic_boost}")
        for f in fields(self.weights):
            if getattr(self.weights, f.name) < 0:
                raise InvalidInput(f"score weight {f.name} must not be negative")
        if any(w < 0 for w in self.category_weights.values()):
            raise InvalidInput("category weights must not be negative")
        if not 0 <= self.emotion_min_confidence <= 1:
            raise InvalidInput(f"emotion_min_confidence must be in [0, 1], got {self.emotion_min_confidence}")
        if not NAMESPACE_PATTERN.match(self.namespace):
            raise InvalidInput(f"namespace {self.namespace!r} is not valid: {NAMESPACE_RULE}")
        for token, namespace in self.tokens.items():
            check_token(token)
            if not NAMESPACE_PATTERN.match(namespace):
                raise InvalidInput(f"namespace {namespace!r} of a token is not valid: {NAMESPACE_RULE}")
        if self.sampling_timeout_s <= 0:
            raise InvalidInput(f"sampling_timeout_s must be positive, got {self.sampling_timeout_s}")

    def category_weight(self, category: str) -> float:
        return self.category_weights.get(category, 1.0)


def _data_home(env: Mapping[str, str]) -> Path:
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _cache_home(env: Mapping[str, str]) -> Path:
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The platform data directory's `mcp-memory-server/memory.db`."""
    return _data_home(os.environ if env is None else env) / APP_NAME / "memory.db"


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where derived, re-creatable files (the segmenter's dictionary cache) live."""
    return _cache_home(os.environ if env is None else env) / APP_NAME
