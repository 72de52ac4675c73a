"""One frozen configuration, built once from flags and environment and passed down.

Nothing here touches the file system: paths are computed, never created, so importing the package
or building a `Config` has no side effects.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import InvalidInput
from .models import CATEGORY_PATTERN

__all__ = [
    "DEFAULT_KEEP_CATEGORIES",
    "ENV_VARS",
    "Config",
    "EnvVar",
    "ScoreWeights",
    "default_cache_dir",
    "default_db_path",
]

APP_NAME = "mcp-memory-server"


@dataclass(frozen=True, kw_only=True)
class ScoreWeights:
    """Weights of the retriever's final score (SPEC 3.3): the seed's, except frequency."""

    keyword: float = 0.40
    category: float = 0.20
    recency: float = 0.15
    frequency: float = 0.05  # the seed's 0.10 halved: both benchmarks gain (BENCHMARKS.md)
    confidence: float = 0.15


# Seed 000's core information (user preferences, coding style) and the identity and profile memories.
DEFAULT_KEEP_CATEGORIES = ("identity", "preference", "user_preferences", "coding_style", "profile")


def _default_category_weights() -> Mapping[str, float]:
    return MappingProxyType({"preference": 1.5, "fact": 1.2, "pattern": 1.0})


@dataclass(frozen=True, kw_only=True)
class Config:
    """Everything the server, the CLI and the benchmarks need to know, in one place."""

    db_path: Path
    cache_dir: Path
    max_content_chars: int = 2000
    max_query_chars: int = 2000
    max_tags: int = 20
    max_tag_chars: int = 40
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
    category_weights: Mapping[str, float] = field(default_factory=_default_category_weights)
    log_level: str = "INFO"
    # Sessions and the memory sieve (SPEC 4 and 7).
    emotion_min_confidence: float = 0.6  # below it, the neutral strategy
    strategy_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    sampling_timeout_s: float = 60.0  # how long the sieve waits for the client's model
    markdown_language: str = "auto"  # headings of memory://MEMORY.md: zh, en, or auto (by the memories)
    markdown_limit: int = 5000  # its soft limit in characters (seed 001)
    sieve_instructions: str = ""  # the user's own instructions for the extractor (seed 004, 5.2.8)

    # ---- lifecycle (SPEC 5, seed 000's cleanup and keep rules, seed 003's working memory) ----
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
                    raise InvalidInput(f"{var.name}={raw!r} is not valid: {exc}") from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        values.setdefault("db_path", default_db_path(env))
        values.setdefault("cache_dir", default_cache_dir(env))
        values["db_path"] = Path(values["db_path"]).expanduser().resolve()
        values["cache_dir"] = Path(values["cache_dir"]).expanduser().resolve()
        config = cls(**values)
        config.validate()
        return config

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


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("must be a positive integer")
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if value <= 0:
        raise ValueError("must be a positive number")
    return value


def _non_negative_float(raw: str) -> float:
    value = float(raw)
    if not value >= 0:
        raise ValueError("must be zero or a positive number")
    return value


def _pairs(raw: str) -> dict[str, float]:
    result: dict[str, float] = {}
    for part in raw.split(","):
        name, sep, number = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"expected name=number pairs separated by commas, got {part!r}")
        result[name.strip()] = float(number)
    return result


def _weights(raw: str) -> ScoreWeights:
    pairs = _pairs(raw)
    known = {f.name for f in fields(ScoreWeights)}
    unknown = set(pairs) - known
    if unknown:
        raise ValueError(f"unknown weight(s) {sorted(unknown)}; known: {sorted(known)}")
    return ScoreWeights(**pairs)


def _category_weights(raw: str) -> Mapping[str, float]:
    merged = dict(_default_category_weights())
    merged.update(_pairs(raw))
    return MappingProxyType(merged)


def _unit(raw: str) -> float:
    value = float(raw)
    if not 0 <= value <= 1:
        raise ValueError("must be between 0 and 1")
    return value


def _json_object(raw: str) -> Mapping[str, Mapping[str, Any]]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError('expected a JSON object of objects, such as {"sad": {"max_length": 300}}')
    return MappingProxyType(value)


def _categories(raw: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    bad = [n for n in names if not CATEGORY_PATTERN.match(n)]
    if bad:
        raise ValueError(f"not lower_snake category names: {bad}")
    return names


def _markdown_language(raw: str) -> str:
    value = raw.lower()
    if value not in ("auto", "zh", "en"):
        raise ValueError("use auto, zh or en")
    return value


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ValueError("use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return level


@dataclass(frozen=True)
class EnvVar:
    """One environment variable the server reads: documented in the README and server.json."""

    name: str
    field: str
    parse: Callable[[str], Any]
    default: str
    description: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "MCP_MEMORY_DB",
        "db_path",
        Path,
        "platform data dir/mcp-memory-server/memory.db",
        "Path of the SQLite database file (created if missing).",
    ),
    EnvVar(
        "MCP_MEMORY_CACHE_DIR",
        "cache_dir",
        Path,
        "platform cache dir/mcp-memory-server",
        "Directory for re-creatable caches (the Chinese segmenter's dictionary).",
    ),
    EnvVar(
        "MCP_MEMORY_MAX_CONTENT",
        "max_content_chars",
        _positive_int,
        "2000",
        "Longest memory content accepted, in characters; longer input is an error.",
    ),
    EnvVar(
        "MCP_MEMORY_MAX_QUERY",
        "max_query_chars",
        _positive_int,
        "2000",
        "Longest recall query accepted, in characters.",
    ),
    EnvVar(
        "MCP_MEMORY_CANDIDATES", "candidate_limit", _positive_int, "50", "Candidates the retriever scores per query."
    ),
    EnvVar(
        "MCP_MEMORY_HALF_LIFE_DAYS",
        "half_life_days",
        _positive_float,
        "7",
        "Half-life of the recency score, in days since last access.",
    ),
    EnvVar(
        "MCP_MEMORY_WEIGHTS",
        "weights",
        _weights,
        "keyword=0.4,category=0.2,recency=0.15,frequency=0.05,confidence=0.15",
        "Weights of the final score.",
    ),
    EnvVar(
        "MCP_MEMORY_CATEGORY_WEIGHTS",
        "category_weights",
        _category_weights,
        "preference=1.5,fact=1.2,pattern=1.0",
        "Category weights (others weigh 1.0).",
    ),
    EnvVar(
        "MCP_MEMORY_TOPIC_BOOST",
        "topic_boost",
        _positive_float,
        "1.3",
        "Score multiplier for memories related to the session's current topic.",
    ),
    EnvVar(
        "MCP_MEMORY_DUPLICATE_THRESHOLD",
        "duplicate_threshold",
        _positive_float,
        "0.85",
        "Similarity (0-1) above which new content in the same category updates the old memory.",
    ),
    EnvVar(
        "MCP_MEMORY_CLEANUP_MIN_MEMORIES",
        "cleanup_min_memories",
        _positive_int,
        "50",
        "Cleanup archives unused and duplicate memories only when there are more memories than this.",
    ),
    EnvVar(
        "MCP_MEMORY_KEEP_CATEGORIES",
        "keep_categories",
        _categories,
        ",".join(DEFAULT_KEEP_CATEGORIES),
        "Categories that cleanup never archives (comma-separated).",
    ),
    EnvVar(
        "MCP_MEMORY_SESSION_IDLE_MINUTES",
        "session_idle_minutes",
        _positive_float,
        "30",
        "Minutes without activity after which a session's working memories are promoted or archived.",
    ),
    EnvVar(
        "MCP_MEMORY_MAINTENANCE_MINUTES",
        "maintenance_minutes",
        _non_negative_float,
        "10",
        "Session expiry and cleanup run at start and then this often, in minutes (0: only at start).",
    ),
    EnvVar("MCP_MEMORY_LOG_LEVEL", "log_level", _log_level, "INFO", "Log level of the messages written to stderr."),
    EnvVar(
        "MCP_MEMORY_EMOTION_MIN_CONFIDENCE",
        "emotion_min_confidence",
        _unit,
        "0.6",
        "An emotion reported with less confidence gets the neutral response strategy.",
    ),
    EnvVar(
        "MCP_MEMORY_STRATEGIES",
        "strategy_overrides",
        _json_object,
        "{}",
        'JSON object changing rows of the emotion -> strategy table, e.g. {"sad": {"max_length": 300}}.',
    ),
    EnvVar(
        "MCP_MEMORY_MARKDOWN_LANGUAGE",
        "markdown_language",
        _markdown_language,
        "auto",
        "Headings of memory://MEMORY.md: zh, en, or auto (Chinese when at least half the core memories are).",
    ),
    EnvVar(
        "MCP_MEMORY_MARKDOWN_LIMIT",
        "markdown_limit",
        _positive_int,
        "5000",
        "Soft limit of memory://MEMORY.md in characters; over it the middle is left out.",
    ),
    EnvVar(
        "MCP_MEMORY_SIEVE_INSTRUCTIONS",
        "sieve_instructions",
        str,
        "",
        "Additional instructions appended to the memory extraction prompt (what to keep or skip).",
    ),
    EnvVar(
        "MCP_MEMORY_SAMPLING_TIMEOUT",
        "sampling_timeout_s",
        _positive_float,
        "60",
        "Seconds the memory sieve waits for the client's model before keeping a fallback note.",
    ),
)
