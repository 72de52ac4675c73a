"""The user profile: who the user is and what is worth remembering for them,
synthesised from their core memories, every item citing the memories it rests on.

The profile lives in the `profile` table (its items, the manual edits, whether it is stale) and,
readable by any client, as one memory of category `profile` under the key `user.profile`. Writes
of identity, preference or skill memories, and every deletion or archiving, mark it stale (in the
same transaction, so every process sees it); the next read synthesises it again. Synthesis is
deterministic (categories, importance, keywords, the Chinese/English mix, recent projects) unless
a model's answer is given. Manual edits (source `manual`) are kept apart and survive every
re-synthesis; what is read never cites a memory that is gone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..argument_errors import problems
from ..config.limits import MAX_PROFILE_TEXT_CHARS
from ..errors import InvalidInput
from ..memory.recall import extract_keywords
from ..memory.validate import clean, screen
from ..models import Draft, Memory, Model, SharedModel
from ..store import profile_data
from ..store.profile_scrub import PROFILE_KEY
from ..store.rows import iso, parse_id, utcnow
from ..store.store import Store
from ..store.tx import Tx
from ..text.tokens import fingerprint

__all__ = [
    "FIELDS",
    "PROFILE_KEY",
    "Profile",
    "ProfileItem",
    "core_for_prompt",
    "edit_profile",
    "get_profile",
    "manual_edits",
    "merge_manual",
    "peek",
    "store_model_answer",
]

FIELDS = ("domains", "high_value_signals", "low_value_signals", "active_projects")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{3,}")
_LABELS = {
    "zh": {
        "none": "还没有足够的核心记忆。",
        "small_talk": "寒暄、闲聊和一次性的简单请求",
        "minor": "不太重要的{cat}细节",
        "valuable": "{cat}相关的信息（例如：{example}）",
        "zh": "主要使用中文",
        "mixed": "中文为主，技术词汇中英混用",
        "en": "Mainly English",
    },
    "en": {
        "none": "Not enough core memories yet.",
        "small_talk": "Small talk, greetings and one-off requests",
        "minor": "Minor {cat} details",
        "valuable": "Information about {cat} (such as: {example})",
        "zh": "Mainly Chinese",
        "mixed": "Chinese and English, mixed",
        "en": "Mainly English",
    },
}


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
    method: Literal["deterministic", "model", "none"] = Field(description="How the synthesised part was made.")
    synthesized_at: datetime | None
    memory_id: str | None = Field(description="The `profile` memory that carries it (key user.profile).")


_CATEGORY_ZH = {
    "identity": "身份背景",
    "preference": "偏好",
    "user_preferences": "偏好设置",
    "decision": "决定",
    "fact": "事实与结论",
    "insight": "观点与分析",
    "todo": "待办",
    "correction": "更正",
    "skill": "技能",
    "relationship": "人际关系",
    "project_state": "项目进展",
    "coding_style": "编码风格",
    "event": "事件",
    "note": "笔记",
}


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _item(text: str, sources: Sequence[str] = (), manual: bool = False) -> dict[str, Any]:
    return {"text": text, "sources": list(dict.fromkeys(sources)), "manual": manual}


async def _synthesize(store: Store, memories: Sequence[Memory], now: datetime) -> dict[str, Any]:
    """The deterministic profile: grounded in `memories` only, the same memories giving the same profile."""
    ranked = sorted(memories, key=lambda m: (-m.importance, m.id))
    chinese = sum(1 for m in memories if _CJK.search(m.content))
    lang = "zh" if memories and chinese * 2 >= len(memories) else "en"
    label = _LABELS[lang]
    about = [m for m in ranked if m.category in ("identity", "skill")][:3]
    about += [m for m in ranked if m.category in ("preference", "user_preferences")][: 5 - len(about)]
    joiner = "；" if lang == "zh" else "; "
    summary = (
        _item(joiner.join(_excerpt(m.content, 80) for m in about), [m.id for m in about])
        if about
        else _item(
            label["none"] if not memories else joiner.join(_excerpt(m.content, 80) for m in ranked[:3]),
            [m.id for m in ranked[:3]],
        )
    )
    holders: dict[str, list[str]] = {}
    # jieba's words, never the dictionary-free tokens a recall makes do with while it loads: the
    # same memories give the same profile.
    await store.segmenter.wait()
    for memory in ranked:
        for word in dict.fromkeys(await extract_keywords(store, memory.content, 8)):
            if len(word) >= 2 and not word.isdigit():
                holders.setdefault(word, []).append(memory.id)
    shared = sorted((w for w, ids in holders.items() if len(ids) >= 2), key=lambda w: (-len(holders[w]), w))
    domains = [_item(w, holders[w][:5]) for w in shared[:6]]
    weight: dict[str, float] = {}
    for memory in memories:
        if memory.category not in ("context", "profile"):
            weight[memory.category] = weight.get(memory.category, 0.0) + memory.importance
    high = []
    for category, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[:3]:
        top = [m for m in ranked if m.category == category][:3]
        name = _CATEGORY_ZH.get(category, category) if lang == "zh" else category.replace("_", " ")
        example = _excerpt(top[0].content, 40)
        high.append(_item(label["valuable"].format(cat=name, example=example), [m.id for m in top]))
    low = [_item(label["small_talk"])]
    minor = Counter(m.category for m in memories if m.importance < 0.4 and m.access_count == 0)
    for category, count in sorted(minor.items(), key=lambda kv: (-kv[1], kv[0])):
        if count >= 3:
            ids = [m.id for m in memories if m.category == category and m.importance < 0.4][:5]
            name = _CATEGORY_ZH.get(category, category) if lang == "zh" else category.replace("_", " ")
            low.append(_item(label["minor"].format(cat=name), ids))
    mixed = sum(1 for m in memories if _CJK.search(m.content) and _LATIN.search(m.content))
    style = "en" if chinese * 2 < len(memories) else ("mixed" if mixed * 4 >= max(chinese, 1) else "zh")
    samples = [m.id for m in ranked if bool(_CJK.search(m.content)) == (style != "en")][:3]
    recent = now - timedelta(days=30)
    projects = sorted(
        (m for m in memories if m.category in ("project_state", "todo") and m.updated_at >= recent),
        key=lambda m: (m.updated_at, m.id),
        reverse=True,
    )[:5]
    return {
        "summary": summary,
        "domains": domains,
        "high_value_signals": high,
        "low_value_signals": low,
        "language_preferences": _item(label[style], samples),
        "active_projects": [_item(_excerpt(m.content, 80), [m.id]) for m in projects],
    }


_SYNTHESIS_LIMIT = 500  # the most important core memories are enough, and keep a refresh fast at 100k


async def _core(store: Store) -> list[Memory]:
    async with store.reading() as tx:
        memories = await profile_data.core_memories(tx, _SYNTHESIS_LIMIT)
    return sorted(memories, key=lambda m: int(m.id[4:]))


async def _row(store: Store) -> tuple[dict[str, Any] | None, dict[str, Any], bool]:
    async with store.reading() as tx:
        row = await profile_data.profile(tx)
    if row is None:
        return None, {}, True
    return json.loads(row.data), json.loads(row.manual), row.stale


def _text(data: Mapping[str, Any]) -> str:
    """The profile as the `profile` memory's content (one paragraph per field)."""
    lines = [data["summary"]["text"], "Domains: " + "; ".join(i["text"] for i in data["domains"])]
    lines.append("Language: " + data["language_preferences"]["text"])
    if data["active_projects"]:
        lines.append("Active projects: " + "; ".join(i["text"] for i in data["active_projects"]))
    return "\n".join(lines)[:1900]


async def _save(store: Store, data: dict[str, Any], manual: Mapping[str, Any] | None) -> None:
    now = utcnow()
    async with store.transaction() as tx:
        if manual is None:
            manual = await manual_edits(tx)
        merged = _apply_manual(data, manual)
        draft = Draft(content=_text(merged), key=PROFILE_KEY, category="profile", importance=0.9, source="system")
        existing = await tx.by_key(PROFILE_KEY)
        if existing is None:
            memory = await tx.insert(draft, fingerprint(draft.content), now)
        elif existing.content != draft.content:
            memory = await tx.replace(int(existing.id[4:]), draft, fingerprint(draft.content), now, "updated")
            # No history for the profile's text: it would keep what forgotten memories said.
            await tx.drop_history(int(memory.id[4:]))
        else:
            memory = existing
        data = data | {"memory_id": memory.id, "synthesized_at": iso(now)}
        await profile_data.save(
            tx, json.dumps(data, ensure_ascii=False), json.dumps(manual, ensure_ascii=False), iso(now)
        )


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


async def get_profile(store: Store, *, refresh: bool = False, now: datetime | None = None) -> Profile:
    """The profile, synthesised again (deterministically) when stale, missing or `refresh`."""
    data, manual, stale = await _row(store)
    if data is None or stale or refresh:
        memories = await _core(store)
        data = await _synthesize(store, memories, now or utcnow()) | {"method": "deterministic" if memories else "none"}
        await _save(store, data, manual)
        data, manual, _ = await _row(store)
        assert data is not None
    extra = {k: data.get(k) for k in ("method", "synthesized_at", "memory_id")}
    return await _live_view(store, _apply_manual(data, manual) | extra)


async def peek(store: Store) -> Profile | None:
    """The stored profile as it is, stale or not, never synthesised here: what the sieve shows its
    model (it must not change between the rounds of one call)."""
    data, manual, _ = await _row(store)
    if data is None:
        return None
    extra = {k: data.get(k) for k in ("method", "synthesized_at", "memory_id")}
    return await _live_view(store, _apply_manual(data, manual) | extra)


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


async def store_model_answer(store: Store, answer: Mapping[str, Any] | str) -> Profile:
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
    _, manual, _ = await _row(store)
    await _save(store, data, manual)
    return await get_profile(store)


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
    _, manual, _ = await _row(store)
    if field in ("summary", "language_preferences"):
        if action != "set":
            raise InvalidInput(f"{field} is one text: use action set.")
        manual[field] = text
    elif field in FIELDS:
        if action not in ("add", "remove"):
            raise InvalidInput(f"{field} is a list: use action add or remove.")
        added = manual.setdefault("added", {}).setdefault(field, [])
        removed = manual.setdefault("removed", {}).setdefault(field, [])
        if action == "add":
            added.append(text) if text not in added else None
        elif text in added:
            added.remove(text)
        else:
            removed.append(text) if text not in removed else None
    else:
        raise InvalidInput(f"field must be one of summary, language_preferences, {', '.join(FIELDS)}.")
    await get_profile(store)  # makes sure a synthesised part exists
    data, _, _ = await _row(store)
    assert data is not None
    await _save(store, data, manual)
    return await get_profile(store)


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
