"""The user profile: who the user is and what is worth remembering for them,
synthesised from their core memories, every item citing the memories it rests on.

The profile lives in the `profile` table alone (its items, the manual edits, whether it is
stale), never as a memory: reading it writes nothing, and it never shows in recall, listings or
search. Writes of identity, preference or skill memories, and every deletion or archiving, mark
it stale (in the same transaction, so every process sees it).

Who synthesises it, and when (see profile/sampling.py for the model's part):
- the client's model, whenever the client can sample: at session start and at the start of
  `extract` when the profile is stale or missing, and otherwise at most once a day;
- rules (profile/rules.py) only for clients that cannot sample, at the start of `extract`, by
  `refresh_profile` and when a manual edit needs a synthesised part; a model-written profile is
  never replaced by rules while it is younger than `MODEL_KEPT`.
A read shows the stored profile; when rules are due and nothing fresh is stored, it shows the
rule-based profile computed for that read, without storing it. Manual edits (source `manual`) are
kept apart and survive every re-synthesis; what is read never cites a memory that is gone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..argument_errors import problems
from ..config.limits import MAX_PROFILE_TEXT_CHARS
from ..errors import InvalidInput
from ..memory.validate import clean, screen
from ..models import Memory, Model, SharedModel
from ..store import profile_data
from ..store.rows import iso, parse_id, utcnow
from ..store.store import Store
from ..store.tx import Tx
from . import rules

__all__ = [
    "DAILY",
    "FIELDS",
    "MODEL_KEPT",
    "Profile",
    "ProfileItem",
    "Stored",
    "core_for_prompt",
    "edit_profile",
    "get_profile",
    "has_core",
    "manual_edits",
    "marked_not_to_keep",
    "merge_manual",
    "peek",
    "store_model_answer",
    "stored",
    "synthesize_by_rules",
]

FIELDS = ("domains", "high_value_signals", "low_value_signals", "active_projects")
# A profile older than this is synthesised again even when no memory about the user changed.
DAILY = timedelta(days=1)
# A model-written profile is kept, stale or not, this long before rules may replace it (for
# clients that cannot sample): a week-old model profile still reads better than rules.
MODEL_KEPT = timedelta(days=7)
_item = rules.item


class ProfileItem(Model):
    text: str
    sources: list[str] = Field(description="Ids of the memories this item rests on.")
    manual: bool = Field(description="Written by hand (edit_profile): kept through every re-synthesis.")


class Profile(SharedModel):
    summary: ProfileItem
    domains: list[ProfileItem]
    high_value_signals: list[ProfileItem]
    low_value_signals: list[ProfileItem]
    language_preferences: ProfileItem
    active_projects: list[ProfileItem]
    method: Literal["deterministic", "model", "none"] = Field(
        description="How the synthesised part was made: by the client's model, or by rules (deterministic)."
    )
    synthesized_at: datetime | None
    stale: bool = Field(
        description="Memories about the user changed since it was synthesised: the next synthesis replaces it."
    )


_SYNTHESIS_LIMIT = 500  # the most important core memories are enough, and keep a refresh fast at 100k


class Stored(Model):
    """The stored row as synthesis decides on it."""

    data: dict[str, Any] | None
    manual: dict[str, Any]
    stale: bool

    @property
    def method(self) -> str:
        return str((self.data or {}).get("method") or "none")

    def age(self, now: datetime) -> timedelta | None:
        at = (self.data or {}).get("synthesized_at")
        return now - datetime.fromisoformat(at) if isinstance(at, str) else None

    def due_for_model(self, now: datetime) -> bool:
        """A client that can sample should synthesise it: missing, stale, made by rules, or a day old."""
        age = self.age(now)
        return self.data is None or self.stale or self.method != "model" or age is None or age >= DAILY

    def due_for_rules(self, now: datetime) -> bool:
        """Rules should synthesise it (no client can sample): missing, or stale or a day old, and
        not a model's profile younger than `MODEL_KEPT`."""
        age = self.age(now)
        if self.data is None or age is None:
            return True
        if self.method == "model" and age < MODEL_KEPT:
            return False
        return self.stale or age >= DAILY


async def _core(store: Store) -> list[Memory]:
    async with store.reading() as tx:
        memories = await profile_data.core_memories(tx, _SYNTHESIS_LIMIT)
    return sorted(memories, key=lambda m: int(m.id[4:]))


async def has_core(store: Store) -> bool:
    """Whether any memory a profile is synthesised from is stored."""
    async with store.reading() as tx:
        return bool(await profile_data.core_memories(tx, 1))


async def stored(store: Store) -> Stored:
    async with store.reading() as tx:
        row = await profile_data.profile(tx)
    if row is None:
        return Stored(data=None, manual={}, stale=True)
    return Stored(data=json.loads(row.data), manual=json.loads(row.manual), stale=row.stale)


async def _save(
    store: Store,
    data: dict[str, Any],
    manual: Mapping[str, Any] | None,
    now: datetime,
    asked_at: datetime | None = None,
) -> None:
    """Store a synthesised profile in the profile table (never as a memory); it is fresh from now
    on, unless a memory about the user was written after `asked_at` (while a model was writing it
    from the memories before): then it is stale at once, and synthesised again when next due."""
    async with store.transaction() as tx:
        if manual is None:
            manual = await manual_edits(tx)
        data = data | {"synthesized_at": iso(now)}
        await profile_data.save(
            tx, json.dumps(data, ensure_ascii=False), json.dumps(manual, ensure_ascii=False), iso(now)
        )
        if asked_at is not None and await profile_data.changed_since(tx, iso(asked_at)):
            await tx.profile_stale()


def _apply_manual(data: Mapping[str, Any], manual: Mapping[str, Any]) -> dict[str, Any]:
    """Synthesised items, minus those the user removed, plus the user's own (marked manual)."""
    result = dict(data)
    removed = {field: set(texts) for field, texts in manual.get("removed", {}).items()}
    for field in FIELDS:
        kept = [i for i in data.get(field, []) if i["text"] not in removed.get(field, set())]
        result[field] = kept + [_item(t, [], True) for t in manual.get("added", {}).get(field, [])]
    if manual.get("summary"):
        result["summary"] = _item(manual["summary"], [], True)
    if manual.get("language_preferences"):
        result["language_preferences"] = _item(manual["language_preferences"], [], True)
    return result


async def _by_rules(store: Store, now: datetime) -> dict[str, Any]:
    memories = await _core(store)
    return await rules.synthesize(store, memories, now) | {"method": "deterministic" if memories else "none"}


async def synthesize_by_rules(store: Store, *, now: datetime | None = None) -> Profile:
    """Synthesise the profile by rules and store it (a write: `extract`, `refresh_profile`, edits)."""
    now = now or utcnow()
    await _save(store, await _by_rules(store, now), None, now)
    return await get_profile(store, now=now)


async def get_profile(store: Store, *, refresh: bool = False, now: datetime | None = None) -> Profile:
    """The profile as a reader sees it; reading writes nothing. The stored one, unless rules are
    due (see `Stored.due_for_rules`): then the rule-based profile computed for this read. With
    `refresh`, rules synthesise it and store it."""
    now = now or utcnow()
    if refresh:
        return await synthesize_by_rules(store, now=now)
    row = await stored(store)
    data = row.data
    if data is None or row.due_for_rules(now):
        data = await _by_rules(store, now) | {"synthesized_at": iso(now)}
    return await _live_view(store, _apply_manual(data, row.manual) | _meta(data, row, fresh=data is not row.data))


def _meta(data: Mapping[str, Any], row: Stored, *, fresh: bool) -> dict[str, Any]:
    return {
        "method": data.get("method") or "none",
        "synthesized_at": data.get("synthesized_at"),
        "stale": False if fresh else row.stale,
    }


async def marked_not_to_keep(store: Store) -> list[str]:
    """The low-value signals the user wrote by hand (edit_profile, the dashboard): topics they do not
    want remembered, which the sieve honours in both channels (text/topics.py). Synthesised ones only
    calibrate the deep channel's prompt."""
    added = (await stored(store)).manual.get("added", {})
    marks = added.get("low_value_signals", []) if isinstance(added, dict) else []
    return [m for m in marks if isinstance(m, str)]


async def peek(store: Store) -> Profile | None:
    """The stored profile as it is, stale or not, never synthesised here: what the sieve shows its
    model (it must not change between the rounds of one call)."""
    row = await stored(store)
    if row.data is None:
        return None
    return await _live_view(store, _apply_manual(row.data, row.manual) | _meta(row.data, row, fresh=False))


async def _live_view(store: Store, data: dict[str, Any]) -> Profile:
    """The profile with every citation of a memory that is gone left out."""
    cited = {
        s
        for field in ("summary", "language_preferences", *FIELDS)
        for item in (data[field] if field in FIELDS else [data[field]])
        for s in item["sources"]
    }
    async with store.reading() as tx:
        live = await profile_data.live_ids(tx, cited)

    def clean(item: dict[str, Any]) -> dict[str, Any]:
        return item | {"sources": [s for s in item["sources"] if s in live]}

    view = dict(data)
    view["summary"] = clean(data["summary"])
    view["language_preferences"] = clean(data["language_preferences"])
    for field in FIELDS:
        view[field] = [clean(i) for i in data[field] if i["manual"] or not i["sources"] or clean(i)["sources"]]
    return Profile.model_validate(view)


async def store_model_answer(
    store: Store, answer: Mapping[str, Any] | str, *, asked_at: datetime | None = None
) -> Profile:
    """Keep a model's profile (the synthesize_profile prompt's answer): every field checked,
    citations of unknown memories dropped. Raises InvalidInput saying what is wrong."""
    try:
        value = json.loads(answer) if isinstance(answer, str) else dict(answer)
        parsed = _ModelAnswer.model_validate(value)
    except ValidationError as exc:
        raise InvalidInput(f"the profile is not in the synthesize_profile shape: {problems(exc)}") from None
    except (json.JSONDecodeError, TypeError) as exc:
        raise InvalidInput(f"the profile is not a JSON object in the synthesize_profile shape ({exc})") from None
    personal = store.config.limits.personal_numbers

    def item(answer: _AnswerItem, where: str) -> dict[str, Any]:
        # Stored and shown as memories are: secrets withheld (SecretRefused when little is left);
        # a citation that is not a memory id is dropped (it would be kept as written).
        text = screen(answer.text, personal, field=f"profile.{where}")[0]
        return _item(text, [s for s in answer.sources if parse_id(s) is not None])

    data = {
        field: (
            [item(i, f"{field}[{n}]") for n, i in enumerate(getattr(parsed, field))]
            if field in FIELDS
            else item(getattr(parsed, field), field)
        )
        for field in ("summary", "language_preferences", *FIELDS)
    } | {"method": "model"}
    now = utcnow()
    await _save(store, data, None, now, asked_at)
    return await get_profile(store, now=now)


class _AnswerItem(Model):
    text: str = Field(min_length=1, max_length=1000)
    sources: list[str] = Field(default_factory=list, max_length=50)


class _ModelAnswer(Model):
    summary: _AnswerItem
    domains: list[_AnswerItem] = Field(max_length=20)
    high_value_signals: list[_AnswerItem] = Field(max_length=20)
    low_value_signals: list[_AnswerItem] = Field(max_length=20)
    language_preferences: _AnswerItem
    active_projects: list[_AnswerItem] = Field(max_length=20)


Edit = Literal["add", "remove", "set"]


async def edit_profile(store: Store, field: str, action: Edit, text: str) -> Profile:
    """A manual edit: add an item to a list field or remove one (by its text), or set the summary
    or the language preferences. Kept apart from the synthesis, so it survives every refresh."""
    text = " ".join(clean(text).split())  # control characters out, as from memories
    if not text or len(text) > MAX_PROFILE_TEXT_CHARS:
        raise InvalidInput(f"text must be 1-{MAX_PROFILE_TEXT_CHARS} characters.")
    # Secrets withheld as from memories; a remove too, as a text removed is kept in the edits (and
    # it names a stored text, which was screened the same way).
    text, _ = screen(text, store.config.limits.personal_numbers, field="text")
    if field in ("summary", "language_preferences"):
        if action != "set":
            raise InvalidInput(f"{field} is one text: use action set.")
    elif field in FIELDS:
        if action not in ("add", "remove"):
            raise InvalidInput(f"{field} is a list: use action add or remove.")
    else:
        raise InvalidInput(f"field must be one of summary, language_preferences, {', '.join(FIELDS)}.")
    now = utcnow()
    # Rules make a synthesised part only where none is stored, before the write lock is taken.
    first = None if (await stored(store)).data is not None else await _by_rules(store, now)
    async with store.transaction() as tx:
        row = await profile_data.profile(tx)
        manual = json.loads(row.manual) if row is not None else {}
        _edit(manual, field, action, text)
        edits = json.dumps(manual, ensure_ascii=False)
        if row is None:
            data = (first or await _by_rules(store, now)) | {"synthesized_at": iso(now)}
            await profile_data.save(tx, json.dumps(data, ensure_ascii=False), edits, iso(now))
        elif row.stale:  # the edits alone: the synthesised part stays as it is, and stale
            await profile_data.save_manual_edits(tx, edits, iso(now), empty=row.data)
        else:  # the synthesised part as stored (its own time kept), fresh as it was
            await profile_data.save(tx, row.data, edits, iso(now))
    return await get_profile(store, now=now)


def _edit(manual: dict[str, Any], field: str, action: Edit, text: str) -> None:
    if field in ("summary", "language_preferences"):
        manual[field] = text
        return
    added = manual.setdefault("added", {}).setdefault(field, [])
    removed = manual.setdefault("removed", {}).setdefault(field, [])
    if action == "add":
        added.append(text) if text not in added else None
    elif text in added:
        added.remove(text)
    else:
        removed.append(text) if text not in removed else None


async def manual_edits(tx: Tx) -> dict[str, Any]:
    """The manual edits as `edit_profile` keeps them: {summary, language_preferences, added:
    {field: [texts]}, removed: {field: [texts]}}, each part only once it has been edited."""
    edits = await profile_data.manual_edits(tx)
    return json.loads(edits) if edits is not None else {}


async def merge_manual(tx: Tx, edits: Mapping[str, Any], now: datetime) -> bool:
    """Add manual edits from elsewhere (an import) to these: texts added or removed are united,
    and a summary or language preference is taken only where none was set by hand here. Marks
    the profile stale when that changes anything; returns whether it did."""
    current = await manual_edits(tx)
    merged = json.loads(json.dumps(current))
    for part in ("added", "removed"):
        for field, texts in edits.get(part, {}).items():
            kept = merged.setdefault(part, {}).setdefault(field, [])
            kept += [text for text in texts if text not in kept]
    for field in ("summary", "language_preferences"):
        if edits.get(field) and not merged.get(field):
            merged[field] = edits[field]
    if merged == current:
        return False
    # A profile not synthesised yet gets an empty one, stale: the next read synthesises it.
    empty = {"summary": _item(""), "language_preferences": _item(""), "method": "none"} | {f: [] for f in FIELDS}
    await profile_data.save_manual_edits(
        tx, json.dumps(merged, ensure_ascii=False), iso(now), empty=json.dumps(empty, ensure_ascii=False)
    )
    return True


async def core_for_prompt(store: Store, limit: int = 200) -> list[dict[str, Any]]:
    """The core memories the synthesize_profile prompt shows, most important first."""
    memories = sorted(await _core(store), key=lambda m: (-m.importance, m.id))[:limit]
    return [{"id": m.id, "category": m.category, "content": m.content} for m in memories]
