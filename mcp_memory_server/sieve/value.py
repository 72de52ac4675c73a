"""Value evaluation: should a candidate memory be stored, kept as working memory, or
skipped? Deterministic: text features and similarity to what is already stored, no model.

    total = 3·forced + (0.5·importance + 0.4·novelty + 0.5·relevance + 0.3·credibility
                        + 0.2·granularity + 0.3·timeliness) / 2.2

Every dimension is on 0-10 and the weights are the original design's. Dividing by their sum (2.2) is ours:
without it the design's thresholds (store at 7, working at 5) sit at a third of the reachable 22, and
anything new (novelty 10 -> 4.0) from the user (credibility 8 -> 2.4) with importance 0.2 scores
7.4, so small talk would be stored and nothing would ever be skipped. Divided, the weighted part is
a weighted mean on its dimensions' own 0-10 scale and the thresholds mean what the design says:
>= 7 high value, 5-7 medium, < 5 low. A forced instruction adds 3 and always stores.

Two adjustments of the bands come from the design's "boundary checks". A near-duplicate of a stored
memory drops one band (it says what is already there). A candidate strongly related to a high-value
stored memory (importance >= 0.8, or core memory) has both thresholds lowered by `RELATED_DISCOUNT`
(1 point: store at 6, working at 4): being related costs it novelty, 0.4·10·similarity/2.2 ≈ 0.9
points at the middle of the related range, and the design asks for the opposite, that detail around
what matters most be kept more readily.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal

from ..errors import InvalidInput
from ..memory import validate
from ..text.stopwords import SINGLE_CHAR_STOPWORDS, STOPWORDS
from ..text.tokens import is_cjk, normalize, similarity

__all__ = [
    "DUPLICATE_SIMILARITY",
    "FORCED_BONUS",
    "RELATED_DISCOUNT",
    "RELATED_SIMILARITY",
    "STORE_THRESHOLD",
    "WEIGHTS",
    "WEIGHT_SUM",
    "WORKING_THRESHOLD",
    "Decision",
    "Nearby",
    "ValueScore",
    "decide",
    "evaluate",
]

Decision = Literal["store", "working", "skip"]

WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"importance": 0.5, "novelty": 0.4, "relevance": 0.5, "credibility": 0.3, "granularity": 0.2, "timeliness": 0.3}
)
WEIGHT_SUM = sum(WEIGHTS.values())  # 2.2: turns the weighted sum into a weighted mean (module docstring)
FORCED_BONUS = 3.0  # "3 × forced instruction", far above any single dimension
STORE_THRESHOLD = 7.0  # >= 7 high value, store (as core memory)
WORKING_THRESHOLD = 5.0  # 5-7 medium value, keep as working memory; below, skip
# Config.duplicate_threshold's default: at this similarity to a stored memory (or this share of the
# candidate found inside one) the candidate is the same memory, which the store merges, not adds.
DUPLICATE_SIMILARITY = 0.85
# From this similarity to a stored memory (up to the duplicate threshold) a candidate is "strongly
# related" to it: about a third of its bigrams are found there (我在阿里巴巴做后端 / 我在阿里巴巴的团队用Go).
RELATED_SIMILARITY = 0.3
# Points off both thresholds for a candidate strongly related to a high-value memory (module docstring).
RELATED_DISCOUNT = 1.0
HIGH_VALUE_IMPORTANCE = 0.8


@dataclass(frozen=True)
class Nearby:
    """A stored memory to compare a candidate with: its text, whether it is high-value (importance
    >= 0.8 or core memory) and its id, which the decision's reason names."""

    content: str
    high_value: bool = False
    id: str | None = None

    @classmethod
    def of(cls, content: str, *, importance: float, core: bool, id: str | None = None) -> Nearby:
        return cls(content, importance >= HIGH_VALUE_IMPORTANCE or core, id)


@dataclass(frozen=True)
class ValueScore:
    """The six dimensions (0-10), the combined total and what to do with the candidate."""

    forced: bool
    importance: float
    novelty: float
    relevance: float
    credibility: float
    granularity: float
    timeliness: float
    total: float
    decision: Decision
    # What the decision rests on besides the total: the closest stored memory (an index into
    # `existing`), how much of the candidate it already says, and the two band adjustments.
    redundancy: float = 0.0
    nearest: int | None = None
    duplicate: bool = False
    related: bool = False

    @property
    def working_threshold(self) -> float:
        return WORKING_THRESHOLD - RELATED_DISCOUNT * self.related

    @property
    def store_threshold(self) -> float:
        return STORE_THRESHOLD - RELATED_DISCOUNT * self.related

    @classmethod
    def from_dimensions(
        cls,
        *,
        forced: bool,
        importance: float,
        novelty: float,
        relevance: float,
        credibility: float,
        granularity: float,
        timeliness: float,
        duplicate: bool = False,
        related: bool = False,
        redundancy: float = 0.0,
        nearest: int | None = None,
    ) -> ValueScore:
        """Combine given dimensions with the module's formula; each is rounded to 2 places first so
        the total shown is the total decided on."""
        given = {
            "importance": importance,
            "novelty": novelty,
            "relevance": relevance,
            "credibility": credibility,
            "granularity": granularity,
            "timeliness": timeliness,
        }
        dims = {name: round(float(value), 2) for name, value in given.items()}
        for name, value in dims.items():
            if not 0.0 <= value <= 10.0:  # also rejects NaN
                raise InvalidInput(f"{name} must be between 0 and 10, got {value}.")
        mean = sum(WEIGHTS[name] * value for name, value in dims.items()) / WEIGHT_SUM
        total = round(FORCED_BONUS * forced + mean, 2)
        return cls(
            forced=forced,
            importance=dims["importance"],
            novelty=dims["novelty"],
            relevance=dims["relevance"],
            credibility=dims["credibility"],
            granularity=dims["granularity"],
            timeliness=dims["timeliness"],
            total=total,
            decision=decide(total, forced=forced, duplicate=duplicate, related=related),
            redundancy=round(redundancy, 2),
            nearest=nearest,
            duplicate=duplicate,
            related=related,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(total: float, *, forced: bool, duplicate: bool = False, related: bool = False) -> Decision:
    """The value bands. Forced always stores. A near-duplicate of a stored memory drops one band:
    what it says is already there, so it is worth less than its score (store -> working,
    working -> skip). A candidate strongly related to a high-value memory has both thresholds
    `RELATED_DISCOUNT` lower."""
    if forced:
        return "store"
    discount = RELATED_DISCOUNT if related else 0.0
    store, working = STORE_THRESHOLD - discount, WORKING_THRESHOLD - discount
    band: Decision = "store" if total >= store else "working" if total >= working else "skip"
    if duplicate:
        band = "working" if band == "store" else "skip"
    return band


def evaluate(
    content: str,
    *,
    category: str,
    importance: float,
    source: str,
    existing: Sequence[str | Nearby] = (),
    forced: bool = False,
    profile_domains: Sequence[str] = (),
    duplicate_threshold: float = DUPLICATE_SIMILARITY,
) -> ValueScore:
    """Score one candidate memory. `importance` is the item's own 0-1 importance (the fast
    channel's or the extractor's), `existing` the texts of stored memories to compare with (the
    closest few are enough), `profile_domains` the user's interests (投资, Python, ...).

    - importance: 10 x the item's importance.
    - novelty: 10 x (1 - redundancy) x substance. Redundancy is the highest similarity to an
      existing text, or the share of the candidate found inside one; substance (0.2-1) is low for
      texts that say little (好的谢谢, discussed something).
    - relevance: by category (identity, preference ... high; fact, note, context low), +2 when
      about the user (我, my, 用户), +1.5 per profile domain named (at most +3), -2 when transient.
    - credibility: by source (user, both, manual 8; system 7; assistant 6; inferred 4), -1.5 per
      hedge (可能, maybe; at most -3), +1 for a sign of verification (实测, according to).
    - granularity: length, numbers, amounts, dates, names and technical terms; vague words lower it.
    - timeliness: by category (who someone is outlasts what they do today), -3 for 今天/right now,
      -1.5 for 目前/currently, +1 for 一直/always.

    A candidate at least `duplicate_threshold` redundant drops one band; one whose closest stored
    memory is high-value (a `Nearby` saying so) and at least `RELATED_SIMILARITY` redundant has both
    thresholds lowered (see `decide`).
    """
    text = content.strip()
    if not text:
        raise InvalidInput("content is empty; there is nothing to evaluate.")
    weight = validate.unit(importance, "importance")
    origin = validate.source(source)
    stored = [other if isinstance(other, Nearby) else Nearby(other) for other in existing]
    scored = [(_redundancy(text, other.content), i) for i, other in enumerate(stored) if other.content.strip()]
    redundancy, nearest = max(scored, key=lambda pair: pair[0], default=(0.0, None))
    duplicate = redundancy >= duplicate_threshold
    related = nearest is not None and stored[nearest].high_value and not duplicate and redundancy >= RELATED_SIMILARITY
    transient = _count(_TRANSIENT, text) > 0 and category != "todo"
    return ValueScore.from_dimensions(
        forced=forced,
        importance=10 * weight,
        novelty=10 * (1 - redundancy) * _substance(text),
        relevance=_relevance(text, category, profile_domains, transient),
        credibility=_credibility(text, origin),
        granularity=_granularity(text),
        timeliness=_timeliness(text, category, transient),
        duplicate=duplicate,
        related=related,
        redundancy=redundancy,
        nearest=nearest if redundancy > 0 else None,
    )


def _clamp(value: float) -> float:
    return min(10.0, max(0.0, value))


def _count(pattern: re.Pattern[str], text: str) -> int:
    """Distinct matches, so one hedge repeated is one hedge."""
    return len({m.group().lower() for m in pattern.finditer(text)})


_LATIN_WORD = re.compile(r"[^\W_]+")
_CONTRACTION = re.compile(r"['’](?:s|m|re|ve|ll|d|t)\b", re.IGNORECASE)


def _content_units(text: str) -> int:
    """How much a text says: a Chinese content character is 1, a content word of other scripts 2
    (one English word carries about what two Chinese characters do)."""
    cjk = sum(1 for ch in text if is_cjk(ch) and ch not in SINGLE_CHAR_STOPWORDS)
    latin = _CONTRACTION.sub("", "".join(" " if is_cjk(ch) else ch for ch in text))
    words = _LATIN_WORD.findall(latin.lower())
    return cjk + 2 * sum(1 for word in words if word not in STOPWORDS)


# Words that stand in for content instead of stating it (the extraction guide's bad example: "discussed yield
# calculation"), and the phatic words of small talk.
_VAGUE = re.compile(
    r"一些|某些|某个|之类|什么的|等等|东西|事情|问题|情况|方面|相关|聊了|聊聊|讨论了|问了|说了|提到|随便|差不多|谢谢|感谢|"
    r"哈哈|呵呵|好的|你好|再见|\b(?:something|somehow|stuff|things?|some|a question|asked|mentioned|talked|chatted"
    r"|discussed|etc|whatever|general|various|thanks|thank you|lol|haha|hello|hi|bye|ok|okay)\b",
    re.IGNORECASE,
)
_SELF = re.compile(r"我|咱|本人|用户|\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|our|user|user's)\b", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"今天|今晚|今早|刚才|刚刚|此刻|这会儿|眼下|马上|\b(?:right now|just now|at the moment|today|tonight|this morning"
    r"|this afternoon|this evening)\b",
    re.IGNORECASE,
)
_FOR_NOW = re.compile(
    r"现在|目前|暂时|最近|这几天|\b(?:currently|for now|these days|recently|temporarily)\b", re.IGNORECASE
)
_DURABLE = re.compile(
    r"一直|总是|从来|向来|每天|每次|每周|长期|永远|始终|\b(?:always|never|usually|every|whenever)\b", re.IGNORECASE
)
_HEDGE = re.compile(
    r"可能|也许|大概|好像|似乎|或许|估计|说不定|貌似|不确定|不太确定|印象中|我猜|不一定|\b(?:maybe|perhaps|probably"
    r"|possibly|might|i think|i guess|i believe|not sure|likely|seems?|apparently|supposedly|iirc|if i recall|afaik"
    r"|i suppose)\b",
    re.IGNORECASE,
)
_CERTAIN = re.compile(
    r"(?<!不)确定|肯定|已验证|验证过|实测|测试过|官方|\b(?:definitely|certainly|confirmed|verified|tested|according to"
    r"|documented|officially)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+|[一二三四五六七八九十百千万两]+(?=[个万千百元块岁年月日号点天次倍%])")
# A number starts a run of digits, or the digit after a currency sign's one ($1234元 is $1, then 234元):
# tried from every digit of a long run, the pattern would read the rest of the run each time.
_AMOUNT = re.compile(
    r"(?:(?<!\d)|(?<=\d)(?<!\d\d))\d+(?:\.\d+)?\s*(?:%|％|万|千|亿|元|块|円|日元|美元|刀|k\b|kb|mb|gb|tb|ms\b|秒|分钟|小时|天|周|个月|年|岁|kg|km|°|度)"
    r"|[$¥€£]\s*\d",
    re.IGNORECASE,
)
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_DATE = re.compile(
    rf"\d{{4}}[-/年.]\d{{1,2}}|\d{{1,2}}月\d{{1,2}}[日号]?|\d{{1,2}}[:：]\d{{2}}|周[一二三四五六日天]|星期[一二三四五六日天]"
    rf"|[上下]午\d|\b(?:{_MONTHS})[a-z]*\.? \d{{1,2}}\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    r"|\b\d{1,2} ?(?:am|pm)\b",
    re.IGNORECASE,
)
_TECHNICAL = re.compile(
    r"[/\\]\w|\w\.(?:py|js|ts|md|json|conf|yaml|yml|toml|sh|go|rs)\b|`|::|\(\)|https?://|\bv?\d+\.\d+"
)
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
_NOT_ALNUM = re.compile(r"[\W_]+")
_LATIN_TERM = re.compile(r"[A-Za-z][\w.+#-]*[A-Za-z0-9+#]|[A-Za-z]{2,}")

# The category guide, read as "how much does this help the next conversation with this user".
_CATEGORY_RELEVANCE: Mapping[str, float] = MappingProxyType(
    {
        **dict.fromkeys(("identity", "preference", "user_preferences", "profile"), 9.0),
        **dict.fromkeys(("skill", "relationship", "project_state", "decision", "todo", "coding_style"), 8.0),
        "correction": 7.0,
        "workflow_history": 6.0,
        **dict.fromkeys(("insight", "pattern", "error_patterns", "desktop_sop", "ui_templates"), 5.0),
        "fact": 4.0,
        **dict.fromkeys(("event", "note"), 3.0),
        "context": 2.0,
    }
)
# How long a memory of each kind stays true: who someone is outlives what they are doing today.
_CATEGORY_TIMELINESS: Mapping[str, float] = MappingProxyType(
    {
        **dict.fromkeys(
            ("identity", "preference", "user_preferences", "profile", "skill", "relationship", "coding_style"), 9.0
        ),
        "correction": 8.0,
        **dict.fromkeys(
            ("fact", "insight", "pattern", "decision", "error_patterns", "desktop_sop", "ui_templates"), 7.0
        ),
        "workflow_history": 6.0,
        **dict.fromkeys(("project_state", "todo", "note"), 5.0),
        "event": 4.0,
        "context": 3.0,
    }
)
_SOURCE_CREDIBILITY: Mapping[str, float] = MappingProxyType(
    {"user": 8.0, "both": 8.0, "manual": 8.0, "system": 7.0, "assistant": 6.0, "inferred": 4.0}
)


def _shingles(text: str) -> set[str]:
    # The same bigrams as tokens.similarity: letters and digits only, case-folded.
    squeezed = _NOT_ALNUM.sub("", normalize(text).casefold())
    return {squeezed[i : i + 2] for i in range(len(squeezed) - 1)}


def _redundancy(text: str, other: str) -> float:
    """How much of the candidate a stored memory already says: their similarity, or the share of
    the candidate's bigrams found in it (a sentence repeated inside a longer memory is not new).
    Containment needs four bigrams, so a short name (Go) is not "found" inside Google."""
    score = similarity(text, other)
    mine = _shingles(text)
    if len(mine) >= 4:
        contained = len(mine & _shingles(other)) / len(mine)
        if not set(_NUMBER.findall(normalize(text))) <= set(_NUMBER.findall(normalize(other))):
            contained /= 2  # 尾号5678 is not found in 尾号1234
        score = max(score, contained)
    return min(1.0, score)


def _substance(text: str) -> float:
    """The value formula's "does it add a new perspective or details": 0.2-1. A new sentence with nothing in
    it (好的谢谢, discussed something) is not novel just because nothing like it is stored."""
    base = min(1.0, 0.4 + 0.1 * _content_units(text))
    return max(0.2, base - 0.2 * _count(_VAGUE, text))


def _relevance(text: str, category: str, domains: Sequence[str], transient: bool) -> float:
    score = _CATEGORY_RELEVANCE.get(category, 4.0)
    if _SELF.search(text):
        score += 2  # about the user (我, my, 用户) rather than about the world
    folded = normalize(text).casefold()
    hits = sum(1 for d in domains if (key := normalize(d).casefold().strip()) and key in folded)
    score += min(3.0, 1.5 * hits)
    if transient:
        score -= 2  # 我今天有点累 is about the user but of no use to the next conversation
    return _clamp(score)


def _credibility(text: str, origin: str) -> float:
    score = _SOURCE_CREDIBILITY[origin] - min(3.0, 1.5 * _count(_HEDGE, text))
    if _CERTAIN.search(text):
        score += 1
    return _clamp(score)


def _granularity(text: str) -> float:
    """Specificity: numbers, amounts, dates, names and technical terms, at a length that holds a
    fact (a word is too little, a page is several memories)."""
    units = _content_units(text)
    score = 1.0 if units < 3 else 3.0 if units < 6 else 5.0 if units <= 60 else 4.0 if units <= 120 else 3.0
    numbers = set(_NUMBER.findall(text))
    if numbers:
        score += 2
        if len(numbers) > 1 or _AMOUNT.search(text):
            score += 1
    if _DATE.search(text):
        score += 1.5
    # Latin terms in Chinese text (Oracle, nftables), capitalised words in English text (Sarah, Stripe)
    names = _LATIN_TERM.findall(text) if any(is_cjk(ch) for ch in text) else _names(text.strip())
    score += min(2.0, float(len(set(names))))
    if _TECHNICAL.search(text):
        score += 1
    score -= min(3.0, 1.5 * _count(_VAGUE, text))
    return _clamp(score)


def _names(text: str) -> set[str]:
    """Capitalised words of English text that are not there for grammar (sentence starts, I)."""
    return {
        m.group()
        for m in _CAPITALISED.finditer(text)
        if not _starts_sentence(text, m.start()) and not m.group().startswith(("I'", "I’")) and m.group() != "I"
    }


def _starts_sentence(text: str, at: int) -> bool:
    """Whether `at` starts the text or follows . ! ? or : and blanks. Read backwards over the blanks
    only: testing the whole text before each capitalised word took time in the square of its length."""
    if at == 0 or (at == 1 and text[0] == "\n"):
        return True
    blanks = at
    while blanks > 0 and text[blanks - 1].isspace():
        blanks -= 1
    return 0 < blanks < at and text[blanks - 1] in ".!?:"


def _timeliness(text: str, category: str, transient: bool) -> float:
    score = _CATEGORY_TIMELINESS.get(category, 6.0)
    if transient:
        score -= 3  # 今天/刚才/right now: true for an afternoon
    elif category not in ("todo", "project_state") and _FOR_NOW.search(text):
        score -= 1.5  # 目前/currently: true for a while
    if _DURABLE.search(text):
        score += 1  # 一直/always: a habit, not a moment
    return _clamp(score)
