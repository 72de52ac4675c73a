"""Change operations: a JSON array of `add` / `del` operations that a model emits after
reading an exchange and the related memories, applied in one transaction: all or nothing.

An operation names its memory by `key`. The original format's keys look like `mem_001`; ours are ids
(`mem_12`) or key slots (`user.city`). A key resolves to the memory holding that key slot, else to
the memory with that exact id; an `add` whose key resolves to nothing creates a memory under that
key slot, so a later operation with the same key finds it again. Counters and timestamps are the
program's: fields such as `trigger_count` or `updated_at` are ignored, and the result says so.

A `del` obeys the keep rules (memory/lifecycle.py), which are for what nobody asked: a memory
stored minutes ago is `kept`. A `del` with `"asked": true` is the user's own request in the
exchange (我刚才说错了，把芒果那条删掉): it applies whatever the rules, as an archive the user can
`restore`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..config.config import Config
from ..config.limits import MAX_CATEGORY_CHARS, MAX_KEY_CHARS
from ..errors import InvalidInput, SecretRefused
from ..models import Draft, Memory, Model, RememberAction
from ..store import archive
from ..store.rows import iso, parse_id, utcnow
from ..store.tx import Tx
from ..text.redaction import describe
from ..text.screening import screen_text
from . import lifecycle, validate
from .requests import request
from .service import MemoryService, same_value

__all__ = ["ASKED", "MANAGED_FIELDS", "ApplyChangesResult", "ChangeOp", "ChangeOutcome", "apply_changes"]

# The archive's reason for a memory a model removed at the user's request ("asked": true).
ASKED = "asked"

# Program-managed fields, of the original format and ours: never taken from a model.
MANAGED_FIELDS = frozenset(
    {
        "trigger_count",
        "created_at",
        "updated_at",
        "last_triggered",
        "last_accessed",
        "access_count",
        "id",
        "content_hash",
    }
)


class ChangeOp(BaseModel):
    """One operation, as a model writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="Memory id or key slot; a new key creates one.",
    )
    action: Literal["add", "del"] = Field(description="add: create or replace; del: delete.")
    category: str = Field(
        max_length=MAX_CATEGORY_CHARS,
        description="For del, the memory's current one.",
    )
    payload: str | None = Field(default=None, description="add (required): the full new text.")
    importance: int | None = Field(default=None, ge=1, le=10, strict=True, description="add (required): 1-10.")
    source: str | None = Field(default=None, max_length=20, description="add (required): user, assistant or both.")
    tags: list[str] = Field(default_factory=list, description="add: short labels.")
    asked: bool = Field(
        default=False,
        strict=True,
        description="del: the user asked for it (archived, not kept).",
    )

    @model_validator(mode="after")
    def _complete(self) -> ChangeOp:
        if self.action == "add":
            missing = [n for n in ("payload", "importance", "source") if getattr(self, n) is None]
            if missing:
                raise ValueError(f"an add needs {', '.join(missing)}")
        elif self.payload is not None or self.importance is not None or self.source is not None or self.tags:
            raise ValueError("a del takes only key, action, category and asked")
        if self.asked and self.action != "del":
            raise ValueError("asked belongs to a del")
        return self


ChangeAction = Literal["created", "updated", "merged", "unchanged", "deleted", "archived", "kept"]


class ChangeOutcome(Model):
    op: int = Field(description="Position of the operation in the array, from 1.")
    key: str
    action: ChangeAction
    id: str = Field(description="Id of the memory created, changed, matched or deleted.")
    withheld: list[str] = Field(default_factory=list, description="Kinds of secrets taken out of the payload.")
    reason: str | None = Field(
        default=None, description="Why a del was refused (action kept): the keep rule that protects the memory."
    )


class ApplyChangesResult(Model):
    applied: list[ChangeOutcome]
    ignored_fields: list[str] = Field(description="Program-managed fields present in the input and ignored.")
    detail: str


def _describe(position: int, raw: Mapping[str, Any]) -> str:
    key, action = raw.get("key"), raw.get("action")
    if not (isinstance(key, str) and isinstance(action, str)):
        return f"op {position}"
    # An invalid op's key can be any length, and hold a secret: masked before it is cut.
    return f"op {position} ({_cut(action, 20)} {_cut(screen_text(key).text, 60)})"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def _parse(raw: object, position: int, ignored: set[str]) -> ChangeOp:
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"op {position} is not an object; nothing was applied.")
    managed = {name for name in raw if name in MANAGED_FIELDS}
    ignored.update(managed)
    try:
        return ChangeOp.model_validate({k: v for k, v in raw.items() if k not in managed})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(_cut(str(p), 40) for p in e['loc']) or 'op'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise InvalidInput(f"{_describe(position, raw)}: {problems}. Nothing was applied.") from None


async def _resolve(tx: Tx, key: str) -> tuple[Memory | None, bool]:
    """The memory an operation's key names, and whether it named it by id. An id names exactly its
    memory (`mem_12`; `mem_012` is a key slot, not mem_12); any other key names the memory holding
    that slot, in its one spelling (`User.City` is `user.city`). A slot is never spelt like an id."""
    if (seq := parse_id(key)) is not None:
        return await tx.get(seq), True
    slot = validate.key(key)
    return (await tx.by_key(slot) if slot is not None else None), False


def _draft(service: MemoryService, op: ChangeOp, position: int, client: str | None) -> Draft:
    assert op.payload is not None
    assert op.importance is not None
    assert op.source is not None
    try:
        return validate.draft(
            service.config,
            content=op.payload,
            category_name=op.category,
            key_name=None if parse_id(op.key) is not None else op.key,  # an id is not a slot
            importance=op.importance / 10,
            confidence=0.8,
            tag_list=op.tags,
            source_name=op.source,
            client=client,
        )
    except SecretRefused as exc:  # stays itself, and never quotes the key (it may be the secret)
        raise SecretRefused(f"op {position} ({op.action}): {exc} Nothing was applied.") from None
    except InvalidInput as exc:
        raise type(exc)(f"op {position} ({op.action} {op.key}): {exc} Nothing was applied.") from None


async def apply_changes(
    service: MemoryService,
    ops: Sequence[object],
    *,
    client: str | None = None,
    now: datetime | None = None,
    request_id: str | None = None,
) -> ApplyChangesResult:
    """Validate every operation, then apply them in order in one transaction; the first one that
    cannot be applied rolls everything back and its message names it. With a `request_id`, a
    retry of the same call answers as the first did and changes nothing."""
    validate.batch(len(ops), service.config, "operations")
    asked = request("apply_changes", request_id, {"ops": list(ops)})
    ignored: set[str] = set()
    parsed = [_parse(raw, i, ignored) for i, raw in enumerate(ops, 1)]
    for i, op in enumerate(parsed, 1):  # a del's key too: every answer and error quotes it
        validate.screen_name(op.key, f"op {i} key", service.config.limits.personal_numbers)
    drafts: dict[int, tuple[Draft, str, str]] = {}
    for i, op in enumerate(parsed, 1):
        if op.action == "add":
            draft = _draft(service, op, i, client)
            drafts[i] = (draft, *await service.prepare(draft))
        else:
            validate.category(op.category)  # a malformed category is an input error, not a mismatch
    now = now or utcnow()
    if any(op.action == "del" for op in parsed):
        await service.store.flush()  # accesses recorded but not yet written decide the keep rule "frequently used"
    outcomes: list[ChangeOutcome] = []
    async with service.store.transaction(asked) as tx:
        if (first := tx.replayed(ApplyChangesResult)) is not None:
            return first
        for i, op in enumerate(parsed, 1):
            target, by_id = await _resolve(tx, op.key)
            if op.action == "del":
                outcomes.append(await _delete(tx, op, i, target, service.config, now))
                continue
            draft, digest, near_match = drafts[i]
            # An id that names no memory (deleted meanwhile): the payload becomes a new memory with
            # no key slot, since a slot is never spelt like an id.
            action, mid = await _add(service, tx, draft, digest, near_match, now, target if by_id else None)
            outcomes.append(ChangeOutcome(op=i, key=op.key, action=action, id=mid, withheld=list(draft.withheld)))
        result = _result(outcomes, ignored)
        tx.answer(result)
    return result


def _result(outcomes: list[ChangeOutcome], ignored: set[str]) -> ApplyChangesResult:
    counts = {
        a: sum(o.action == a for o in outcomes)
        for a in ("created", "updated", "merged", "unchanged", "deleted", "archived", "kept")
    }
    summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n) or "no operations"
    note = f" Ignored program-managed fields: {', '.join(sorted(ignored))}." if ignored else ""
    for o in outcomes:
        if o.action == "kept":
            note += f" op {o.op} (del {_cut(o.key, 60)}) was refused: {o.reason}"
    withheld = [kind for o in outcomes for kind in o.withheld]
    if withheld:
        note += " " + describe(withheld)
    return ApplyChangesResult(applied=outcomes, ignored_fields=sorted(ignored), detail=f"Applied: {summary}.{note}")


def _protected(target: Memory, config: Config, now: datetime) -> str | None:
    """Why a model may not delete this memory: the keep rule protecting it, in words; None when
    no rule does. Seed 000 leaves these rules to the program, whatever the model answers."""
    rule = lifecycle.keep_rule(
        config,
        lifecycle.recent_since(config, now),
        importance=target.importance,
        access_count=target.access_count,
        created_at=iso(target.created_at),
        category=target.category,
        source=target.source,
    )
    if rule is None:
        return None
    settings = config.lifecycle
    why = {
        "important": f"its importance is {target.importance * 10:g} of 10 "
        f"(kept at {settings.keep_importance * 10:g} or more)",
        "frequently_used": f"it was used {target.access_count} times (kept at {settings.keep_accesses} or more)",
        "recent": f"it was created less than {settings.keep_recent_days:g} days ago",
        "core_category": f"its category {target.category!r} is a core category",
        "manual": "it was written by hand (source manual)",
    }[rule]
    return (
        f"keep rule {rule!r}: {why}, so it is not deleted. To change it, add with its key; when the user "
        'asked for the deletion, send the del with "asked": true (archived, restorable), or use forget.'
    )


async def _delete(
    tx: Tx, op: ChangeOp, position: int, target: Memory | None, config: Config, now: datetime
) -> ChangeOutcome:
    if target is None:
        raise InvalidInput(f"op {position} (del {op.key}): no memory has this key or id. Nothing was applied.")
    category = validate.category(op.category)
    if target.category != category:
        raise InvalidInput(
            f"op {position} (del {op.key}): the category given, {category!r}, is not the memory's "
            f"category {target.category!r}; check that this is the memory meant. Nothing was applied."
        )
    seq = parse_id(target.id)
    assert seq is not None
    if op.asked:  # the user's own request, in the exchange: no keep rule stands, and restore brings it back
        await archive.archive(tx, {seq: ASKED}, iso(now))
        return ChangeOutcome(op=position, key=op.key, action="archived", id=target.id)
    reason = _protected(target, config, now)
    if reason is not None:  # the other operations still apply: a refused del is an answer, not an error
        return ChangeOutcome(op=position, key=op.key, action="kept", id=target.id, reason=reason)
    await tx.delete([seq])
    return ChangeOutcome(op=position, key=op.key, action="deleted", id=target.id)


async def _add(
    service: MemoryService,
    tx: Tx,
    draft: Draft,
    digest: str,
    near_match: str,
    now: datetime,
    target: Memory | None,
) -> tuple[RememberAction, str]:
    if target is None:
        # A key slot, new or held: remember's own rules apply (an update of the memory holding it).
        result = await service.write(tx, draft, digest, near_match, now)
        return result.action, result.id
    # Named by its id: the memory keeps its own key slot (or none) and takes the new value.
    keep = {"key": target.key, "tier": target.tier, "session_id": target.session_id, "confidence": target.confidence}
    replacement = draft.model_copy(update=keep)
    seq = parse_id(target.id)
    assert seq is not None
    if same_value(target, replacement):
        await archive.count_use(tx, seq, iso(now))  # an add on an existing memory is a use of it
        return "unchanged", target.id
    await tx.replace(seq, replacement, digest, now, "updated")
    return "updated", target.id
