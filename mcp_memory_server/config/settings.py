"""What can be set, and how each setting is read from the environment: the `MCP_MEMORY_*`
variables (documented in the README and server.json from this table), their parsers, the score
weights, and the bearer-token syntax. `Config` (config/config.py) is built from them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InvalidInput
from ..models import CATEGORY_PATTERN

__all__ = [
    "BODY_BYTES_PER_ITEM",
    "DEFAULT_KEEP_CATEGORIES",
    "ENV_VARS",
    "NAMESPACE_PATTERN",
    "NAMESPACE_RULE",
    "UNPACK_RATIO",
    "EnvVar",
    "ScoreWeights",
    "check_token",
    "default_category_weights",
    "parse_tokens",
]


@dataclass(frozen=True, kw_only=True)
class ScoreWeights:
    """Weights of the retriever's final score (SPEC 3.3): the original design's, except frequency."""

    keyword: float = 0.40
    category: float = 0.20
    recency: float = 0.15
    frequency: float = 0.05  # the original design's 0.10 halved: both benchmarks gain (BENCHMARKS.md)
    confidence: float = 0.15


# The core information of the original design (user preferences, coding style) and the identity and profile memories.
DEFAULT_KEEP_CATEGORIES = ("identity", "preference", "user_preferences", "coding_style", "profile")


def default_category_weights() -> Mapping[str, float]:
    return MappingProxyType({"preference": 1.5, "fact": 1.2, "pattern": 1.0})


# Empty is the default namespace; others are short lower-case names (they appear in exports and logs).
NAMESPACE_PATTERN = re.compile(r"^(?:[a-z0-9][a-z0-9_.-]{0,63})?$")
NAMESPACE_RULE = "use up to 64 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit."
MIN_TOKEN_CHARS = 16

# What one import may cost, in proportion to MCP_MEMORY_MAX_BODY, so that one setting raises it
# all (Config.max_unpacked_bytes, max_import_values, max_import_items). A compressed file unpacks
# to at most UNPACK_RATIO times the body cap: room for JSON, which gzip shrinks 5 to 12 times,
# while a body of gzipped zeros (4 GiB in 4 MiB) stops at 64 MiB. Its size alone does not bound
# what reading a file costs: Python holds a JSON value in 30 to 70 bytes, so `[{}, {}, ...]` takes
# 20 times its size, and a tiny item costs as much to check as a real one (a 64 KB gzip of
# `[{"memory": "a"}, ...]` unpacks to 32 MB: 3.5 GB and three minutes to read). Hence counts of
# the JSON values a file holds (one per byte of the body cap) and of its items (one per
# BODY_BYTES_PER_ITEM bytes): the largest legal file and the worst one then cost about the same.
UNPACK_RATIO = 16
BODY_BYTES_PER_ITEM = 32
_TOKEN = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: what an Authorization header carries


def check_token(token: str) -> None:
    # The message never repeats the token: it may be a real one with a typo.
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(
            f"a token of {len(token)} characters is too short to guess-proof; use at least {MIN_TOKEN_CHARS} "
            "(`jiyi token` prints a new one)."
        )
    if not _TOKEN.match(token) or "," in token:
        raise InvalidInput("a token may hold only visible ASCII characters other than ',' (no spaces).")


def parse_tokens(raw: str, default_namespace: str = "", *, source: str = "MCP_MEMORY_TOKENS") -> dict[str, str]:
    """Token -> namespace from `namespace:token` entries (or a bare `token`, for the default
    namespace) separated by commas or new lines; `#` starts a comment line."""
    tokens: dict[str, str] = {}
    entries = [e.strip() for line in raw.splitlines() if not line.lstrip().startswith("#") for e in line.split(",")]
    for number, entry in enumerate((e for e in entries if e), start=1):
        namespace, sep, token = entry.partition(":")
        if not sep:
            namespace, token = default_namespace, entry
        namespace = namespace.strip()
        token = token.strip()
        if not NAMESPACE_PATTERN.match(namespace):
            raise InvalidInput(f"{source}, entry {number}: namespace {namespace!r} is not valid: {NAMESPACE_RULE}")
        try:
            check_token(token)
        except InvalidInput as exc:
            raise InvalidInput(f"{source}, entry {number}: {exc}") from None
        if tokens.get(token, namespace) != namespace:
            raise InvalidInput(f"{source}, entry {number}: the same token is given for two namespaces.")
        tokens[token] = namespace
    return tokens


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


def _flag(raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1, true, yes or on (or 0, false, no, off)")


def _state_keys(raw: str) -> tuple[str, ...]:
    keys = tuple(k.strip() for k in raw.split(",") if k.strip())
    # InvalidInput, not ValueError: the caller's message would repeat the value, a secret.
    for number, key in enumerate(keys, start=1):
        if len(key) < _STATE_KEY_CHARS:
            raise InvalidInput(
                f"MCP_MEMORY_STATE_KEYS, key {number}: each key needs at least {_STATE_KEY_CHARS} characters "
                "of secret randomness (`jiyi token` prints one)."
            )
    return keys


_STATE_KEY_CHARS = 32


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
    merged = dict(default_category_weights())
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


def _namespace(raw: str) -> str:
    if not NAMESPACE_PATTERN.match(raw):
        raise ValueError(NAMESPACE_RULE)
    return raw


def _hosts(raw: str) -> tuple[str, ...]:
    hosts = tuple(dict.fromkeys(part.strip().lower() for part in raw.split(",") if part.strip()))
    bad = [h for h in hosts if any(c.isspace() or c in "/@" for c in h)]
    if bad:
        raise ValueError(f"not host names or host:port: {bad}")
    return hosts


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
    secret: bool = False  # its value grants access: never logged, marked secret in server.json


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "MCP_MEMORY_DB",
        "db_path",
        str,
        "platform data dir/mcp-memory-server/memory.db",
        "Path of the SQLite database file (created if missing), or a postgresql:// URL (the postgres extra).",
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
    EnvVar("MCP_MEMORY_MAX_TAGS", "max_tags", _positive_int, "20", "Most tags on one memory (and in one tag filter)."),
    EnvVar("MCP_MEMORY_MAX_TAG_CHARS", "max_tag_chars", _positive_int, "40", "Longest tag, in characters."),
    EnvVar("MCP_MEMORY_MAX_PAGE", "max_page", _positive_int, "200", "Most memories in one page of the list tool."),
    EnvVar(
        "MCP_MEMORY_MAX_BATCH",
        "max_batch",
        _positive_int,
        "200",
        "Most ids in one forget or restore call, and operations in one apply_changes call.",
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
    EnvVar(
        "MCP_MEMORY_NAMESPACE",
        "namespace",
        _namespace,
        "",
        "Namespace served over stdio, over HTTP without tokens, and by the CLI; namespaces never see each other.",
    ),
    EnvVar(
        "MCP_MEMORY_TOKENS",
        "tokens",
        str,
        "(none: HTTP without authentication)",
        "HTTP bearer tokens, comma-separated; namespace:token gives the token its own namespace.",
        secret=True,
    ),
    EnvVar(
        "MCP_MEMORY_TOKENS_FILE",
        "tokens_file",
        Path,
        "(none)",
        "File of HTTP bearer tokens, one namespace:token (or token) a line; read when the server starts.",
    ),
    EnvVar(
        "MCP_MEMORY_ALLOWED_HOSTS",
        "allowed_hosts",
        _hosts,
        "(loopback only)",
        "Host headers HTTP mode accepts besides loopback, comma-separated (host or host:port).",
    ),
    EnvVar(
        "MCP_MEMORY_MAX_BODY",
        "max_body_bytes",
        _positive_int,
        str(4 * 1024 * 1024),
        "Largest HTTP request body, in bytes; larger requests are refused with 413. Imports follow it: a zip or "
        f"gzip file unpacks to at most {UNPACK_RATIO} times this, and holds at most one JSON value per byte and "
        f"one item per {BODY_BYTES_PER_ITEM} bytes of it.",
    ),
    EnvVar(
        "MCP_MEMORY_STATELESS",
        "stateless_http",
        _flag,
        "false",
        "HTTP mode keeps no session between requests, so replicas on one database can answer any request.",
    ),
    EnvVar(
        "MCP_MEMORY_STATE_KEYS",
        "state_keys",
        _state_keys,
        "(none: a key of each process's own)",
        "Keys sealing the state a 2026-07-28 client carries between the rounds of one call, comma-separated "
        "(the first seals, all open); replicas need the same.",
        secret=True,
    ),
    EnvVar(
        "MCP_MEMORY_LOG_LEVEL",
        "log_level",
        _log_level,
        "INFO",
        "Log level of stderr, and the level MCP clients get log messages at until they choose one.",
    ),
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
