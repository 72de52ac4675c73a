"""The rule-based profile, for clients that cannot sample: built from the memories' structure,
never from their most frequent words.

- The summary's identity line comes from keyed facts (`user.name`, `user.job`, `user.employer`,
  `user.city`, any `user.*` slot), each value cut out of its sentence where a common phrasing
  allows ("我住在杭州" -> 杭州, "I work at Zalando" -> Zalando), else the sentence itself, short;
  identity and skill memories without a key follow; then the user's preferences.
- Domains are what the memories name on purpose: their tags, project slots (`project.blog`),
  then technical terms and content words several memories share, with function words in both
  languages and the words that only say what kind of memory it is (用户, 喜欢, 日期, user,
  prefer, deadline, ...) left out: those are the sieve's signal kinds, counted as such.
- High-value signals are the memory kinds the user's memories hold most (preferences,
  decisions, to-dos, ...), each with its strongest example; low-value ones are small talk and the
  kinds that pile up unused.
Every item cites the memories it rests on; the same memories give the same profile.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ..models import Memory
from ..retrieval.plan import extract_keywords
from ..store.store import Store
from ..text.corrections import keyed_slot, slot_named
from ..text.stopwords import STOPWORDS

__all__ = ["GENERIC_WORDS", "item", "synthesize"]

_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{3,}")
# A technical term or a name: a capital or a digit inside a Latin word (Python, FastAPI, k8s, Hugo).
_TERM = re.compile(r"\b[A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#]\b")

# Words that say what kind of memory a sentence is, or who it is about, not what it is about:
# the sieve's signal words and the usual fillers of a memory's sentence, in both languages.
_GENERIC = """
    用户 我 我的 喜欢 不喜欢 偏好 讨厌 习惯 希望 想要 需要 决定 选择 选了 确定 记得 提醒 待办 别忘了 截止 日期
    时间 今天 明天 昨天 周一 周二 周三 周四 周五 周六 周日 每天 每周 以后 之前 目前 现在 正在 已经 开始
    重要 关键 核心 本质 问题 方案 东西 事情 信息 内容 工作 项目 进展 更正 其实 不是 而是 主要 一名 一个 使用 用来
    user users prefer prefers preferred preference like likes liked dislike dislikes hate hates want wants need needs
    decided decide decision choose chose chosen remind reminder todo deadline date due today tomorrow yesterday
    monday tuesday wednesday thursday friday saturday sunday daily weekly always never usually often mostly
    important key note remember thing things stuff information project projects working work works use uses using
    used make makes made going currently now every week weeks day days month months year years new
    """
GENERIC_WORDS = frozenset(_GENERIC.split())

_LABELS: dict[str, dict[str, str]] = {
    "zh": {
        "none": "还没有足够的核心记忆。",
        "identity": "身份：",
        "prefers": "偏好：",
        "domains": "主要领域：",
        "small_talk": "寒暄、闲聊和一次性的简单请求",
        "minor": "不太重要的{cat}细节",
        "valuable": "{cat}（例如：{example}）",
        "zh": "主要使用中文",
        "mixed": "中文为主，技术词汇中英混用",
        "en": "Mainly English",
        "sep": "；",
        "kv": "{label} {value}",
        "end": "。",
    },
    "en": {
        "none": "Not enough core memories yet.",
        "identity": "Identity: ",
        "prefers": "Preferences: ",
        "domains": "Main domains: ",
        "small_talk": "Small talk, greetings and one-off requests",
        "minor": "Minor {cat} details",
        "valuable": "{cat} (such as: {example})",
        "zh": "Mainly Chinese",
        "mixed": "Chinese and English, mixed",
        "en": "Mainly English",
        "sep": "; ",
        "kv": "{label}: {value}",
        "end": ".",
    },
}

# The identity slots in the order an identity line names them, with their labels.
_SLOTS: dict[str, tuple[str, str]] = {
    "name": ("名字", "name"),
    "job": ("职业", "role"),
    "role": ("职业", "role"),
    "occupation": ("职业", "role"),
    "title": ("职位", "title"),
    "employer": ("雇主", "employer"),
    "company": ("公司", "company"),
    "city": ("城市", "city"),
    "location": ("所在地", "location"),
    "country": ("国家", "country"),
    "partner": ("伴侣", "partner"),
    "language": ("语言", "language"),
    "languages": ("语言", "languages"),
}

# The kinds of memory, as a profile names them (high-value signals).
_KINDS: dict[str, tuple[str, str]] = {
    "identity": ("身份背景", "Who the user is"),
    "preference": ("偏好与厌恶", "Preferences and dislikes"),
    "user_preferences": ("偏好设置", "Preference settings"),
    "decision": ("做过的决定", "Decisions made"),
    "fact": ("事实与结论", "Facts and conclusions"),
    "insight": ("观点与分析", "Opinions and analyses"),
    "todo": ("待办与截止日期", "To-dos and deadlines"),
    "correction": ("更正过的信息", "Corrections"),
    "skill": ("技能与工具", "Skills and tools"),
    "relationship": ("人与组织", "People and organisations"),
    "project_state": ("项目进展", "Project status"),
    "coding_style": ("编码风格", "Coding style"),
    "event": ("事件", "Events"),
    "note": ("笔记", "Notes"),
}

# Phrasings a keyed fact's sentence wraps its value in, cut away to leave the value.
_ZH_LEAD = re.compile(
    r"^(?:(?:用户|我)(?:的)?)?(?:名字|职业|工作|城市|公司|伴侣)?(?:现在|目前|已经)?"
    r"(?:叫做|叫|是|住在|生活在|搬到了|搬到|就职于|任职于|在)?(?:一名|一位|一个)?"
)
_ZH_TAIL = re.compile(r"(?:工作|上班|生活|居住|的人)?[。.!！]*$")
_EN_LEAD = re.compile(
    r"^(?:the user|user|i|my (?:\w+ )?(?:name|job|role|employer|city|partner)?)\s*(?:'m|am|is|'s)?\s*"
    r"(?:called |named |living in |live in |lives in |moved to |working (?:at|for|as) |work (?:at|for|as) |"
    r"works (?:at|for|as) |based in |from )?(?:a |an |the )?",
    re.IGNORECASE,
)
_EN_TAIL = re.compile(r"[.!]+$")


def item(text: str, sources: Sequence[str] = (), manual: bool = False) -> dict[str, Any]:
    return {"text": text, "sources": list(dict.fromkeys(sources)), "manual": manual}


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_CLAUSE_CUT = re.compile(r"(?<!\s)\s*[，,；;]\s*|(?<!\s)\s+and\s+")  # a run of blanks entered once


def _clause(content: str, key: str | None) -> str:
    """The clause of a sentence that states the keyed fact `key` names (住在东京 of 我叫Harry，住在东京
    under user.city), the speaker written in where a clause leaves it out; the sentence itself when
    it is one clause or no clause states it."""
    slot = slot_named(key)
    clauses = [c for c in _CLAUSE_CUT.split(content.strip()) if c]
    if slot is None or len(clauses) < 2:
        return content
    for clause in clauses:
        spoken = (
            clause
            if clause.startswith(("我", "用户", "I ", "I'", "My ", "my "))
            else (("我" if _CJK.match(clause) else "I ") + clause)
        )
        if keyed_slot(spoken) is slot:
            return spoken
    return content


def _value(content: str, key: str | None = None) -> str:
    """The value of a keyed fact, cut out of its sentence where a common phrasing allows."""
    flat = " ".join(_clause(content, key).split())
    cut = _ZH_TAIL.sub("", _ZH_LEAD.sub("", flat, count=1)) if _CJK.search(flat) else flat
    if not _CJK.search(flat):
        cut = _EN_TAIL.sub("", _EN_LEAD.sub("", flat, count=1))
    cut = cut.strip(" ,，:：")
    return _excerpt(cut if 0 < len(cut) <= 40 else flat, 40)


def _slot(key: str | None) -> str | None:
    """`user.city` -> city; None for a key that is not about the user."""
    if key is None or not key.startswith(("user.", "profile.", "me.")):
        return None
    return key.split(".", 1)[1].replace("-", "_") or None


def _identity(memories: Sequence[Memory], lang: str) -> tuple[str, list[str]]:
    """The identity line: keyed facts first (in `_SLOTS` order), then identity and skill memories
    without a key (two at most)."""
    label = _LABELS[lang]
    keyed = [(s, m) for m in memories if (s := _slot(m.key)) is not None]
    order = list(_SLOTS)
    keyed.sort(key=lambda sm: (order.index(sm[0]) if sm[0] in order else len(order), sm[0], sm[1].id))
    parts: list[str] = []
    sources: list[str] = []
    for slot, memory in keyed[:6]:
        names = _SLOTS.get(slot, (slot.replace("_", " "), slot.replace("_", " ")))
        parts.append(
            label["kv"].format(label=names[0] if lang == "zh" else names[1], value=_value(memory.content, memory.key))
        )
        sources.append(memory.id)
    unkeyed = [m for m in memories if m.key is None and m.category in ("identity", "skill")]
    for memory in unkeyed[: max(0, 3 - len(parts))]:
        parts.append(_excerpt(memory.content, 50))
        sources.append(memory.id)
    return (label["identity"] + label["sep"].join(parts) + label["end"] if parts else ""), sources


def _is_domain_word(word: str) -> bool:
    lower = word.lower()
    return (
        len(word) >= 2
        and not word.isdigit()
        and lower not in STOPWORDS
        and lower not in GENERIC_WORDS
        and not lower.startswith(("mem_", "user."))
    )


async def _domains(store: Store, ranked: Sequence[Memory]) -> list[dict[str, Any]]:
    """Tags and project slots first (named on purpose), then terms shared by two memories or more."""
    spelled = {w.lower(): w for m in reversed(ranked) for w in _TERM.findall(m.content)}
    named: dict[str, list[str]] = {}
    for memory in ranked:
        for tag in memory.tags:
            if _is_domain_word(tag):  # tags are kept in lower case: spelt as the memories spell them
                named.setdefault(spelled.get(tag.lower(), tag), []).append(memory.id)
        if memory.key and memory.key.startswith("project."):
            name = memory.key.split(".", 1)[1].replace("_", " ").replace("-", " ")
            if name:
                named.setdefault(name, []).append(memory.id)
    shared: dict[str, list[str]] = {}
    # jieba's words, never the dictionary-free tokens a recall makes do with while it loads: the
    # same memories give the same profile.
    await store.segmenter.wait()
    for memory in ranked:
        if memory.category in ("todo",):
            continue  # a to-do's words are its errand, not what the user is about
        words = dict.fromkeys(await extract_keywords(store, memory.content, 8))
        words |= dict.fromkeys(t for t in _TERM.findall(memory.content) if t[0].isupper() or not t.isalpha())
        for word in words:
            if _is_domain_word(word):
                shared.setdefault(word.lower() if word.isascii() else word, []).append(memory.id)
    first = list(named)  # in the order of the memories' importance
    chosen = sorted(named, key=lambda w: (-len(named[w]), first.index(w)))[:4]
    seen = {w.lower() for w in chosen}
    common = sorted((w for w, ids in shared.items() if len(set(ids)) >= 2), key=lambda w: (-len(set(shared[w])), w))
    for word in common:
        if len(chosen) >= 6:
            break
        if word.lower() in seen or any(word.lower() in c.lower() or c.lower() in word.lower() for c in chosen):
            continue
        chosen.append(spelled.get(word, word))
        seen.add(word.lower())
        named[chosen[-1]] = shared[word]
    return [item(w, named[w][:5]) for w in chosen]


def _kind_name(category: str, lang: str) -> str:
    names = _KINDS.get(category)
    if names is None:
        return category.replace("_", " ")
    return names[0] if lang == "zh" else names[1]


async def synthesize(store: Store, memories: Sequence[Memory], now: datetime) -> dict[str, Any]:
    """The rule-based profile: grounded in `memories` only, the same memories giving the same profile."""
    ranked = sorted(memories, key=lambda m: (-m.importance, m.id))
    chinese = sum(1 for m in memories if _CJK.search(m.content))
    lang = "zh" if memories and chinese * 2 >= len(memories) else "en"
    label = _LABELS[lang]
    domains = await _domains(store, ranked)
    identity, who = _identity(ranked, lang)
    liked = [m for m in ranked if m.category in ("preference", "user_preferences", "coding_style")][:3]
    sentences = [identity] if identity else []
    if liked:
        sentences.append(label["prefers"] + label["sep"].join(_excerpt(m.content, 50) for m in liked) + label["end"])
    if domains:
        joined = ("、" if lang == "zh" else ", ").join(d["text"] for d in domains[:4])
        sentences.append(label["domains"] + joined + label["end"])
    cited = who + [m.id for m in liked] + [s for d in domains[:4] for s in d["sources"][:1]]
    summary = item(("" if lang == "zh" else " ").join(sentences) or label["none"], cited)

    weight: dict[str, float] = {}
    for memory in memories:
        if memory.category not in ("context", "profile"):
            weight[memory.category] = weight.get(memory.category, 0.0) + memory.importance
    high = []
    for category, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[:4]:
        top = [m for m in ranked if m.category == category][:3]
        example = _excerpt(top[0].content, 40)
        text = label["valuable"].format(cat=_kind_name(category, lang), example=example)
        high.append(item(text, [m.id for m in top]))
    low = [item(label["small_talk"])]
    minor = Counter(m.category for m in memories if m.importance < 0.4 and m.access_count == 0)
    for category, count in sorted(minor.items(), key=lambda kv: (-kv[1], kv[0])):
        if count >= 3:
            ids = [m.id for m in memories if m.category == category and m.importance < 0.4][:5]
            low.append(item(label["minor"].format(cat=_kind_name(category, lang)), ids))
    mixed = sum(1 for m in memories if _CJK.search(m.content) and _LATIN.search(m.content))
    style = "en" if chinese * 2 < len(memories) else ("mixed" if mixed * 4 >= max(chinese, 1) else "zh")
    samples = [m.id for m in ranked if bool(_CJK.search(m.content)) == (style != "en")][:3]
    recent = now - timedelta(days=30)
    projects = sorted(
        (
            m
            for m in memories
            if (m.category == "project_state" or (m.key or "").startswith("project.")) and m.updated_at >= recent
        ),
        key=lambda m: (m.updated_at, m.id),
        reverse=True,
    )[:5]
    return {
        "summary": summary,
        "domains": domains,
        "high_value_signals": high,
        "low_value_signals": low,
        "language_preferences": item(label[style], samples),
        "active_projects": [item(_excerpt(m.content, 80), [m.id]) for m in projects],
    }
