"""Pydantic types at the boundaries: what tools return, what the store hands back."""

from __future__ import annotations

import copy
import functools
import re
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CATEGORY_PATTERN",
    "KNOWN_CATEGORIES",
    "MAX_CATEGORY_CHARS",
    "SOURCE_ALIASES",
    "Breakdown",
    "Cleaned",
    "CleanedMemory",
    "CleanupCandidate",
    "CleanupResult",
    "CleanupRule",
    "Draft",
    "ExpiredSession",
    "ExpiryResult",
    "ForgetResult",
    "Hit",
    "KeepRule",
    "ListResult",
    "MaintenanceResult",
    "Memory",
    "Model",
    "RecallResult",
    "RememberAction",
    "RememberResult",
    "RestoreConflict",
    "RestoreResult",
    "SemanticStatus",
    "SessionState",
    "SharedModel",
    "Source",
    "Stage",
    "Stats",
    "Tier",
]

Tier = Literal["core", "working"]
Source = Literal["user", "assistant", "both", "system", "manual", "inferred"]
Stage = Literal["keyword", "hybrid", "like", "none"]
RememberAction = Literal["created", "updated", "merged", "unchanged"]
OrderBy = Literal["updated", "created", "importance", "accessed"]
CleanupRule = Literal["unused", "low_importance", "low_confidence", "duplicate"]
KeepRule = Literal["important", "frequently_used", "recent", "core_category", "manual", "critical"]

KNOWN_CATEGORIES: tuple[str, ...] = (
    "identity",
    "preference",
    "decision",
    "fact",
    "insight",
    "todo",
    "correction",
    "skill",
    "relationship",
    "project_state",
    "pattern",
    "event",
    "note",
    "profile",
    "context",
    "desktop_sop",
    "ui_templates",
    "user_preferences",
    "error_patterns",
    "coding_style",
    "workflow_history",
)
MAX_CATEGORY_CHARS = 40
CATEGORY_PATTERN = re.compile(rf"^[a-z][a-z0-9_]{{0,{MAX_CATEGORY_CHARS - 1}}}$")

# Prompts and other tools name sources in several ways; all of them mean one of `Source`.
SOURCE_ALIASES: dict[str, Source] = {
    "用户输入": "user",
    "用户": "user",
    "user_stated": "user",
    "ai输出": "assistant",
    "ai": "assistant",
    "agent": "assistant",
    "系统": "system",
    "手动": "manual",
    "推断": "inferred",
}


def _models_in(annotation: Any) -> set[type[BaseModel]]:
    """The pydantic models an annotation names, at any depth (list[Hit] -> Hit)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {annotation}
    return {model for arg in get_args(annotation) for model in _models_in(arg)}


def _inline(node: Any, model: type[BaseModel]) -> Any:
    """A property schema with its `$ref` (to the one nested model it holds) replaced by that
    model's own schema."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _schema_of(model) | {k: v for k, v in node.items() if k != "$ref"}
        return {k: _inline(v, model) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, model) for v in node]
    return node


@functools.cache
def _generated_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A nested model's JSON schema, a copy of the one generated once: every tool result that
    holds a `Memory` or a `Hit` would otherwise generate it again when the server registers its
    tools, before it can answer `initialize` (about 30 ms at start-up)."""
    return copy.deepcopy(_generated_schema(model))


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [{type: T}, {type: null}]` -> `type: [T, null]`, the same meaning in one subschema."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return prop
    (other,) = (b for b in branches if b != {"type": "null"})
    rest: dict[str, Any] = {k: v for k, v in prop.items() if k != "anyOf"}
    if isinstance(other, dict) and other.get("type") == "object":  # a nullable nested model, inlined
        return rest | other | {"type": ["object", "null"]}
    if not isinstance(other, dict) or not isinstance(other.get("type"), str) or set(other) - {"type", "format"}:
        return prop
    return rest | other | {"type": [other["type"], "null"]}


def _flat_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """Shape a result model's JSON schema for clients that validate every tool result against it
    (the Python SDK's client does, with jsonschema, at a cost that grows with the subschemas it
    walks): nested models inline instead of `$defs`/`$ref`, nullable fields as type lists, no
    generated titles and no `additionalProperties: false`. Same fields, types and enums.
    Every model reads the schema of every tool at every start, so the schema says no more than a
    result's shape: no descriptions (the field descriptions in the code are for its readers and
    the reference docs) and no `required` lists (every field of a result is always present, which
    the reference docs say once instead of every schema saying it for every object). Measured end
    to end, pydantic's own output schemas would make tools/list 7.6 KB longer (BENCHMARKS.md,
    "stdio transport and tool schemas"); no client tested reads them differently.
    `additionalProperties: false` (pydantic's for `extra="forbid"`, a guard for the code that
    builds results) is left out on purpose: an output schema describes what the server sends, and
    left open a client that validates against an older tools/list still accepts a result that
    has since gained a field."""
    _shape(schema, cls, inline=True)


def _shared_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """`_flat_schema` for a result whose nested model repeats (the profile's item, six times):
    that model once under `$defs`, a `$ref` at each use. Fine for a tool called now and then;
    the ones called on every turn stay inline for the client's validation."""
    _shape(schema, cls, inline=False)


def _shape(schema: dict[str, Any], cls: type[BaseModel], *, inline: bool) -> None:
    schema.pop("title", None)
    schema.pop("description", None)
    schema.pop("required", None)
    schema.pop("additionalProperties", None)
    props: dict[str, Any] = schema.get("properties", {})
    for name, prop in props.items():
        prop.pop("title", None)
        prop.pop("description", None)
        field = cls.model_fields.get(name)
        nested = _models_in(field.annotation) if field is not None else set()
        if inline and len(nested) == 1:
            prop = _inline(prop, *nested)
        props[name] = _nullable(prop)
    if "$ref" not in repr(props):  # every nested model is inlined: the definitions are not needed
        schema.pop("$defs", None)


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_flat_schema)


class SharedModel(Model):
    """A result model whose nested models are defined once in its schema (see `_shared_schema`)."""

    model_config = ConfigDict(json_schema_extra=_shared_schema)


class Memory(Model):
    """One stored memory."""

    id: str = Field(description="Stable id such as mem_12; pass it back to forget or update.")
    content: str = Field(description="Self-contained natural-language text.")
    key: str | None = Field(description="Stable slot such as user.city, if any.")
    category: str
    tier: Tier
    importance: float
    confidence: float
    source: Source
    tags: list[str]
    session_id: str | None
    client: str | None = Field(description="The MCP client that wrote it, from its clientInfo.")
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    access_count: int


class Draft(Model):
    """A memory to be written, already validated and normalised by the service."""

    content: str
    key: str | None = None
    category: str = "fact"
    tier: Tier = "core"
    importance: float = 0.5
    confidence: float = 0.8
    source: Source = "user"
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    client: str | None = None
    withheld: tuple[str, ...] = ()  # kinds of secrets taken out of the content (never stored)


class RememberResult(Model):
    id: str = Field(description="Id of the memory written or matched.")
    action: RememberAction = Field(
        description="created: new memory; updated: same key, new value (old value kept in history); "
        "merged: near-identical memory in the same category was updated instead of duplicated; "
        "unchanged: identical memory already stored."
    )
    memory: Memory
    detail: str = Field(description="One sentence saying what happened.")
    withheld: list[str] = Field(
        default_factory=list, description="Kinds of secrets removed from the content before it was stored."
    )


class Breakdown(Model):
    keyword: float = Field(
        description="BM25 over a full match of the query's strongest terms, 0-1 (LIKE stage: share of keywords found)."
    )
    semantic: float | None = Field(
        default=None,
        description="Closeness in meaning, 0-1 on this query's scale; null without the semantic stage "
        "or before the memory is embedded.",
    )
    category: float = Field(description="Category weight.")
    recency: float = Field(description="exp(-ln2/half_life x days since last access).")
    frequency: float = Field(description="log(access_count+1)/log(frequency_scale+1), at most 1.")
    confidence: float
    topic_boost: float = Field(description="1.0, or the topic boost when related to the session topic.")


class Hit(Model):
    id: str
    content: str
    category: str
    key: str | None
    tags: list[str]
    importance: float
    confidence: float
    source: Source
    created_at: datetime
    updated_at: datetime
    score: float
    breakdown: Breakdown


class RecallResult(Model):
    query: str
    keywords: list[str] = Field(description="Keywords searched for, after segmentation and stopwords.")
    stage: Stage = Field(
        description="keyword: keyword index; hybrid: keyword index and meaning; like: substring fallback; "
        "none: no hit (note says why)."
    )
    hits: list[Hit]
    note: str | None = Field(default=None, description="Why there are no hits, when there are none.")


class ForgetResult(Model):
    deleted: list[str]
    not_found: list[str]


class ListResult(Model):
    total: int = Field(description="Memories matching the filters, across all pages.")
    items: list[Memory]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class SessionState(Model):
    session_id: str
    current_topic: str | None
    context_variables: dict[str, object]
    turn_count: int
    last_emotion: str | None
    created_at: datetime
    updated_at: datetime


class SemanticStatus(Model):
    """The semantic stage of recall: its model, and how far the background embedding has come."""

    state: Literal["off", "loading", "embedding", "ready", "failed"] = Field(
        description="off: not enabled (or no embedding backend installed); loading: the model is loading; "
        "embedding: memories are being embedded in the background (recall uses keywords for the others); "
        "ready: every memory has a vector; failed: the model could not load or run, recall is keyword-only."
    )
    model: str | None = Field(description="The embedding model's id (vectors of other models are never used).")
    embedded: int = Field(description="Memories with a vector of this model, computed from their present content.")
    total: int = Field(description="Live memories.")
    reason: str | None = Field(description="Why the stage is off or failed; null otherwise.")


class Stats(Model):
    total: int = Field(description="Live memories (archived ones not included).")
    archived: int = Field(description="Memories set aside by cleanup or session expiry; restore brings them back.")
    by_category: dict[str, int]
    by_tier: dict[str, int]
    sessions: int
    db_path: str | None = Field(
        description="Where the database is; null for a token holder of an HTTP server, whose database other "
        "namespaces may share."
    )
    db_bytes: int | None = Field(
        description="The database's size on disk, every namespace's memories included; null for a token holder "
        "of an HTTP server (it would tell how much the other namespaces write)."
    )
    schema_version: int
    oldest: datetime | None
    newest: datetime | None
    segmenter: Literal["loading", "ready", "failed"] = Field(
        description="jieba's dictionary: until it is ready, Chinese queries are answered from character bigrams.",
    )
    semantic: SemanticStatus | None = Field(
        default=None, description="The semantic stage (a serving process's); null where nothing runs it."
    )
    cleaned: Cleaned | None = Field(
        default=None, description="What automatic cleanup archived in the last 30 days, newest first."
    )


class CleanedMemory(Model):
    """A memory automatic cleanup moved to the archive."""

    id: str = Field(description="Pass it to restore to bring the memory back.")
    preview: str = Field(description="The start of its content.")
    archived_at: datetime
    reason: str = Field(description="The rules that selected it.")


class Cleaned(Model):
    """What cleanup archived lately: nothing it does is hidden from the user."""

    days: int = Field(description="The window looked at, in days.")
    count: int = Field(description="Memories cleanup archived in the window (restore brings them back).")
    latest: list[CleanedMemory] = Field(description="The newest of them, at most 10.")


class CleanupCandidate(Model):
    """A memory the cleanup rules select and no keep rule saves."""

    id: str = Field(description="Memory id; after a real cleanup, pass it to restore to bring the memory back.")
    preview: str = Field(description="The start of its content.")
    category: str
    importance: float
    access_count: int
    last_accessed: datetime
    rules: list[CleanupRule] = Field(
        description="Every rule that selects it. unused: never recalled and not used for 30 days; "
        "low_importance: importance below 0.5 and not accessed for 90 days; low_confidence: confidence below "
        "0.3 and not accessed for 30 days; duplicate: another memory of "
        "the same category has the same content and stays (defaults; thresholds are configurable)."
    )
    duplicate_of: str | None = Field(description="For a duplicate, the id of the copy that stays; otherwise null.")


class CleanupResult(Model):
    dry_run: bool = Field(description="true: nothing was changed; candidates are what a real run would archive.")
    applied: bool = Field(
        description="false when there are too few memories for cleanup to apply (see min_memories); "
        "then nothing is selected."
    )
    memories: int = Field(description="Live memories before the cleanup.")
    min_memories: int = Field(description="Cleanup applies only when there are more memories than this.")
    candidate_count: int = Field(description="Memories selected; candidates lists the first of them.")
    candidates: list[CleanupCandidate] = Field(description="Oldest access first.")
    archived: int = Field(
        description="Memories moved to the archive by this run (0 on a dry run). Nothing is deleted: "
        "restore brings them back with the same ids."
    )
    kept: dict[str, int] = Field(
        description="Memories a rule selected but a keep rule saved, by the first keep rule that applies: "
        "important (importance at least 0.8), frequently_used (accessed at least 10 times), recent "
        "(created in the last 7 days), core_category (identity, preference, ...), manual (source manual), "
        "critical (health, family or identity facts: never archived automatically)."
    )
    detail: str = Field(description="One sentence saying what happened.")


class RestoreConflict(Model):
    id: str
    reason: str = Field(description="Why it stays in the archive, and what to do about it.")


class RestoreResult(Model):
    restored: list[str] = Field(description="Ids back among the live memories, with their history.")
    not_found: list[str] = Field(
        description="Ids of no archived memory: never archived, forgotten, or not an id (see conflicts for live ones)."
    )
    conflicts: list[RestoreConflict] = Field(description="Archived memories left in the archive, with the reason.")


class ExpiredSession(Model):
    session_id: str
    last_active: datetime = Field(description="The session's last activity.")
    promoted: list[str] = Field(description="Working memories made core (important or accessed often enough).")
    archived: list[str] = Field(description="Working memories moved to the archive; restore brings them back.")


class ExpiryResult(Model):
    sessions: list[ExpiredSession] = Field(description="Sessions idle for too long, now ended.")


class MaintenanceResult(Model):
    expiry: ExpiryResult
    cleanup: CleanupResult
