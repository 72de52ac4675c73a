"""Keyed facts and what a correction replaces.

A few facts about the user have one value at a time: where they live, who they work for, their
job, their name, their partner. The fast channel stores a statement of one of them under its key
(`user.city`, `user.employer`, `user.job`, `user.name`, `user.partner`), so that the next statement
or correction of the same fact updates that memory, the old value kept in its history, instead of
adding a second memory that contradicts the first ("I moved to Berlin" next to 我住在北京).

Recall reads the same tables to rank a superseded memory below what superseded it
(`Successor`): a later memory of the same keyed fact, or a later correction that names the old
value (不是X而是Y, "Y, not X") or restates the corrected fact.

The tables live in `text` because both the sieve (which writes keyed facts) and recall (which
ranks what they supersede) read them. Every pattern here is anchored on words (我住在, I live in,
my wife is) and bounded, so each runs in time linear in the text (tests/text/test_regex_linear.py
runs them on long crafted texts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .keys import normalise_key
from .lazy_pattern import LazyPattern, lazy
from .tokens import _DIGITS, _shingles, normalize

__all__ = [
    "KEYED_SLOTS",
    "RESTATES",
    "Slot",
    "Successor",
    "contains",
    "corrected_pair",
    "corrected_value",
    "find_whole",
    "keyed_slot",
    "replace_value",
    "restates",
    "slot_named",
]


@dataclass(frozen=True)
class Slot:
    """One keyed fact: its key, the category its memory is stored under, and its patterns."""

    key: str
    category: str
    patterns: tuple[LazyPattern, ...]  # one per way of saying it (each names its own negation)


def _each(*alternatives: str) -> tuple[LazyPattern, ...]:
    """One case-insensitive pattern per alternative (each may name its own groups); an apostrophe
    also matches the typographic one phones type (I’m), as in the sieve's tables."""
    return tuple(lazy(a.replace("'", "['’]"), re.IGNORECASE) for a in alternatives)


# The speaker: the user in their own words (我, I), or in the words of a memory about them (用户,
# the user), so that recall recognises "用户住在北京" written by a model as the same fact.
_ZH_WHO = r"(?:我|用户)"
_ZH_ADV = r"(?:现在|目前|已经|刚刚?|也|一直|其实|实际上|本来|后来|去年|今年|上个月|最近)?"
# A negation between the speaker and the verb (我不住在北京了): not a statement of the value,
# except inside a correction (我不是住在北京，而是住在柏林), where the sentence also names the new one.
_ZH_NEG = r"(?P<neg>不是|不再|不|没有?)?"
_EN_WHO = r"\b(?:I|the user|user)"
_EN_NEG = r"(?P<neg> (?:don't|do not|doesn't|does not|no longer|never|didn't|did not|haven't|have not|am not|'m not))?"
_EN_ADV = r"(?: (?:just|recently|now|currently|still|actually|finally|already|also))?"
# A value in Latin script is a name: it starts with a capital letter (Berlin, SAP), which keeps
# "I moved to the next step" and "I work at home" out. Nationalities and languages are not names.
_EN_NAME = (
    r"(?=[A-Z])(?!(?:The|A|An|This|That|My|Our|Home|Work|Python|Go|Rust|Java|JavaScript|TypeScript|Postgres|"
    r"PostgreSQL|MySQL|SQLite|React|Vue|Linux|Windows|Mac|AWS|GCP|Azure|Docker|Kubernetes|Version|V\d)\b)"
)
_NATIONALITY = (
    r"(?:American|British|English|Canadian|Australian|German|French|Italian|Spanish|Russian|Indian|Korean|"
    r"Mexican|Brazilian|Asian|European|African|Irish|Scottish|Dutch|Swiss|Greek|Thai|Vietnamese|Chinese|Japanese)"
)
# Cities that 我在X工作 names as where, not whom, the user works for (我在上海工作 is the city).
_ZH_CITIES = (
    "北京|上海|广州|深圳|杭州|南京|苏州|成都|重庆|武汉|西安|天津|长沙|郑州|青岛|厦门|宁波|合肥|济南|大连|沈阳|"
    "昆明|福州|无锡|东莞|佛山|珠海|香港|澳门|台北|东京|大阪|首尔|新加坡|纽约|伦敦|巴黎|柏林|慕尼黑|硅谷|湾区|"
    "国外|海外|国内|本地|外地|老家|家里?|家乡|这里|那里|这边|那边|附近|远程|线上"
)
# What follows 我在 or 我是 when the sentence is about doing, not about a place or a role (我在考虑换工作,
# 我是说你应该先写测试), as in the sieve's identity rule.
_ZH_NOT_A_PLACE = (
    "工作|上班|想|问|说|找|用|学|看|做|等|写|开|吃|喝|路上|忙|考虑|准备|换|申请|面试|辞|犹豫|纠结|跟|和|给|帮|为"
)
_ZH_NOT_A_ROLE = "说|指|想|问|在|不是|否|来|要|觉得|因为|不|个人|让|被|把|给|跟|和"
_JOB_EN = (
    "engineer|developer|programmer|architect|designer|student|teacher|professor|lecturer|researcher|scientist|"
    "doctor|physician|surgeon|dentist|nurse|pharmacist|lawyer|attorney|accountant|writer|author|journalist|editor|"
    "translator|founder|co-founder|cofounder|ceo|cto|cfo|manager|director|consultant|analyst|investor|trader|"
    "entrepreneur|freelancer|contractor|intern|sre|sysadmin|administrator|postdoc|artist|musician|photographer|chef|"
    "pilot|farmer|specialist|tester|product owner|data scientist"
)
_JOB_ZH = (
    "工程师|程序员|开发者|码农|架构师|设计师|产品经理|项目经理|经理|运维|测试|学生|大学生|研究生|博士生|老师|"
    "教师|教授|讲师|医生|护士|律师|会计|作家|记者|编辑|翻译|创始人|合伙人|总监|主管|研究员|科学家|分析师|顾问|"
    "销售|运营|公务员|主播|博主|摄影师|厨师|司机|[\u4e00-\u9fff]{1,4}(?:工程师|师|员)"
)

_CITY = Slot(
    "user.city",
    "identity",
    _each(
        rf"{_ZH_WHO}{_ZH_ADV}{_ZH_NEG}(?:是)?(?:住在|搬到了?|搬家到了?|搬去了?|搬回了?|定居在|定居于|生活在|常驻)"
        r"(?![这那哪家公附])(?=\s?[\u4e00-\u9fffA-Za-z])",
        rf"{_EN_WHO}(?:'ve| have| has)?{_EN_ADV}{_EN_NEG}{_EN_ADV} (?:live[sd]? in|(?:have |has |'ve )?moved to|"
        rf"relocated to|(?:am |'m |is )?(?:living|based) in|(?:have |'ve |has )?been living in) (?-i:{_EN_NAME})",
    ),
)
_EMPLOYER = Slot(
    "user.employer",
    "identity",
    _each(
        rf"{_ZH_WHO}{_ZH_ADV}{_ZH_NEG}(?:是)?在(?!(?:{_ZH_CITIES})(?:工作|上班|任职|就职)|{_ZH_NOT_A_PLACE})"
        r"(?=\s?[\u4e00-\u9fffA-Za-z0-9][^，,。；;！!？?]{0,15}?(?:工作|上班|任职|就职))",
        rf"{_ZH_WHO}{_ZH_ADV}{_ZH_NEG}(?:入职了?|跳槽到了?|跳槽去了?|加入了)(?=\s?[\u4e00-\u9fffA-Za-z])",
        rf"{_EN_WHO}(?:'ve| have| has|'m| am| is)?{_EN_ADV}{_EN_NEG}{_EN_ADV} (?:work(?:s|ed|ing)? (?:at|for)|joined|"
        rf"(?:am |'m |is )?employed (?:at|by)) (?-i:{_EN_NAME})",
    ),
)
_JOB = Slot(
    "user.job",
    "identity",
    _each(
        rf"{_ZH_WHO}{_ZH_ADV}{_ZH_NEG}(?:是(?!{_ZH_NOT_A_ROLE})|当了?|做)(?:一[名个位]|个|名)?[^，,。；;！!？?]{{0,12}}?(?:{_JOB_ZH})(?=[，,。；;！!？?\s]|的|$)",
        r"我的(?:工作|职业|职位|岗位|头衔)(?:是|叫)",
        rf"{_EN_WHO}(?:'m| am| is| work as| works as){_EN_ADV}{_EN_NEG}{_EN_ADV} (?:a|an) (?:[\w-]+ ){{0,3}}?"
        rf"(?:{_JOB_EN})s?\b",
        r"\bmy (?:job|role|title|profession|occupation|position) is\b",
    ),
)
_NAME = Slot(
    "user.name",
    "identity",
    _each(
        r"我叫(?!了|你|他|她|它|们|人|车|外卖|过|醒|上|来|去|啥|什么|个|一|着)(?=\s?[\u4e00-\u9fffA-Za-z·])",
        r"(?:我|用户)的(?:名字|全名|姓名)(?:是|叫)",
        r"\bmy name(?:'s| is)\b|\bI(?:'m| am) called\b|(?-i:\b[Cc]all me [A-Z][a-z]+)",
    ),
)
_PARTNER = Slot(
    "user.partner",
    "relationship",
    _each(
        r"(?:我|用户)(?:的)?(?:老婆|老公|妻子|丈夫|太太|爱人|女朋友|男朋友|女友|男友|对象|伴侣|未婚妻|未婚夫)"
        r"(?:的名字)?(?:叫|名字(?:是|叫))(?=\s?[\u4e00-\u9fffA-Za-z·])",
        r"\bmy (?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|spouse)"
        rf"(?:'s name is|'s name's| is called| is named| is (?-i:(?!{_NATIONALITY}\b)[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
        r"(?=\s*[.!,;]?\s*$))",
    ),
)

# In order: the first slot whose pattern matches a sentence is its key (我在杭州工作 is checked as
# a city before an employer: the city list keeps it out of the employer's pattern).
KEYED_SLOTS: tuple[Slot, ...] = (_CITY, _EMPLOYER, _JOB, _NAME, _PARTNER)
_BY_KEY = {slot.key: slot for slot in KEYED_SLOTS}
# Every slot's patterns in one, their groups unnamed: most sentences state no keyed fact, and one
# search says so where the slots' own patterns would take about twenty.
_ANY_SLOT = lazy(
    "|".join(p.pattern.replace("(?P<neg>", "(?:") for slot in KEYED_SLOTS for p in slot.patterns), re.IGNORECASE
)

# The old value a correction names: 不是X而是Y, Y，不是X, not X but Y, Y, not X, instead of X.
_OLD_VALUE = (
    lazy(r"不是(?P<old>[^，,。；;！!？?而]{1,20}?)[，,]?\s{0,3}(?:而是|而|其实是|应该是|是)"),
    lazy(r"(?:^|[，,])\s{0,3}(?:而)?不是(?P<old>[^，,。；;！!？?]{1,20})(?=[，,。；;！!？?]|$)"),
    lazy(r"\bnot\s{1,3}(?P<old>[^,.;!?]{1,40}?),?\s{1,3}but\b", re.IGNORECASE),
    lazy(r",\s{0,3}not\s{1,3}(?P<old>[^,.;!?]{1,40})(?=[,.;!?]|$)", re.IGNORECASE),
    lazy(r"\b(?:instead of|rather than)\s{1,3}(?P<old>[^,.;!?]{1,40})", re.IGNORECASE),
)
# The old and the new value together: 不是X，(而)?是Y / Y，不是X / not X but Y / Y, not X.
_PAIR = (
    lazy(
        r"不是(?P<old>[^，,。；;！!？?而]{1,20}?)[，,]?\s{0,3}(?:而是|其实是|应该是|是)\s{0,3}(?P<new>[^，,。；;！!？?]{1,20})"
    ),
    lazy(
        r"(?:^|[，,：:]|是)\s{0,3}(?P<new>[^，,。；;！!？?：:]{1,20}?)\s{0,3}[，,]\s{0,3}(?:而)?不是(?P<old>[^，,。；;！!？?]{1,20})"
        r"(?=[，,。；;！!？?]|$)"
    ),
    lazy(r"\bnot\s{1,3}(?P<old>[^,.;!?]{1,40}?),?\s{1,3}but\s{1,3}(?P<new>[^,.;!?]{1,40})", re.IGNORECASE),
    lazy(
        r"(?:^|[,:]\s{0,3}|\b(?:is|it's|meant|be)\s{1,3})(?P<new>[^,.;!?:]{1,40}?),\s{0,3}not\s{1,3}"
        r"(?P<old>[^,.;!?]{1,40})(?=[,.;!?]|$)",
        re.IGNORECASE,
    ),
)
# The words before a value in what a pair's pattern took (I meant Berlin, 住在柏林, the deadline is
# March 15): only the value is replaced in the memory it corrects.
_LEAD = lazy(r"^.*(?:\b(?:is|it's|was|meant|be|to|in|at|on|for)\s+|是|在|到|为)", re.IGNORECASE)
# What a correction says besides naming itself one: the marker words cut before comparing it with
# the memory it corrects.
_MARKERS = lazy(
    r"更正(?:一下)?[：:，,]?|纠正(?:一下)?[：:，,]?|订正(?:一下)?[：:，,]?|其实|实际上|应该是|才对|搞错了|说错了|记错了"
    r"|口误|\bcorrection\s*[:：,-]?|\bactually,?|\bi meant\b|\bsorry,?|\bmy (?:mistake|bad),?"
    r"|\bto correct (?:myself|that),?",
    re.IGNORECASE,
)
# How alike a correction and an older memory must be, markers cut, for the correction to restate
# it with a new value (`similarity` halves the score of texts whose numbers differ, as a corrected
# date's do): 项目Alpha的截止日期是3月15日 against 项目Alpha的截止日期是3月1日 scores 0.42, "the
# deadline is March 15" against "The Alpha project deadline is March 1" 0.27; 项目Alpha的负责人是李雷
# against the latter Chinese one 0.16, "the meeting is on Friday" against "the meeting room is on
# floor 3" 0.23. Only the order of recall's hits depends on it.
RESTATES = 0.25
_CORRECTION_CATEGORY = "correction"


def keyed_slot(text: str, *, correction: bool = False) -> Slot | None:
    """The keyed fact a sentence states, or None. A negated statement (我不住在北京了, I no longer
    live in Berlin) states no value, unless the sentence is a correction naming the new one too."""
    if _ANY_SLOT.search(text) is None:
        return None
    for slot in KEYED_SLOTS:
        for pattern in slot.patterns:
            for match in pattern.finditer(text):
                if correction or not match.groupdict().get("neg"):
                    return slot
    return None


def slot_named(key: str | None) -> Slot | None:
    """The keyed fact a memory's key names (`User.City` is `user.city`), or None."""
    return _BY_KEY.get(normalise_key(key)) if key else None


def corrected_value(text: str) -> str | None:
    """The old value a correction names (3月1日 in 截止日期不是3月1日而是3月15日, March 1 in
    "the deadline is March 15, not March 1"), or None."""
    for pattern in _OLD_VALUE:
        match = pattern.search(text)
        if match is not None:
            old = _LEAD.sub("", match.group("old"), count=1).strip() or match.group("old").strip()
            if sum(ch.isalnum() for ch in old) >= 2:
                return old
    return None


def corrected_pair(text: str) -> tuple[str, str] | None:
    """The old and the new value a correction names (北京 and 柏林 in 不是北京，是柏林; Beijing and
    Berlin in "I meant Berlin, not Beijing"), or None."""
    for pattern in _PAIR:
        match = pattern.search(text)
        if match is not None:
            old, new = (_LEAD.sub("", v, count=1).strip() or v.strip() for v in match.group("old", "new"))
            if sum(ch.isalnum() for ch in old) >= 2 and any(ch.isalnum() for ch in new):
                return old, new
    return None


def find_whole(text: str, part: str) -> int:
    """Where `part` first occurs in `text` as a whole (March 1 is not in March 15), ignoring case;
    -1 when it does not."""
    folded_text, folded = text.casefold(), part.casefold()
    if len(folded_text) != len(text) or not folded:
        folded_text, folded = text.lower(), part.lower()  # casefold changed lengths (ß): offsets must hold
    start = folded_text.find(folded)
    while start >= 0:
        end = start + len(folded)
        before = folded_text[start - 1] if start else " "
        after = folded_text[end] if end < len(folded_text) else " "
        whole_start = not (folded[0].isascii() and folded[0].isalnum() and before.isascii() and before.isalnum())
        whole_end = not (folded[-1].isascii() and folded[-1].isalnum() and after.isascii() and after.isalnum())
        if whole_start and whole_end:
            return start
        start = folded_text.find(folded, start + 1)
    return -1


def contains(text: str, part: str) -> bool:
    """Whether `part` occurs in `text` as a whole, ignoring case (see `find_whole`)."""
    return find_whole(text, part) >= 0


def replace_value(text: str, old: str, new: str) -> str | None:
    """`text` with its first whole `old` replaced by `new` (我住在北京 with 北京 -> 柏林 is 我住在柏林);
    None when `old` is not in it."""
    at = find_whole(text, old)
    if at < 0 or len(text.lower()) != len(text):
        return None
    return text[:at] + new + text[at + len(old) :]


def restates(correction: str, older: str) -> bool:
    """Whether `correction` corrects `older`: it names a value `older` holds as the wrong one, or,
    naming none, says the same thing with something changed (see `RESTATES`)."""
    return Successor(correction, None, _CORRECTION_CATEGORY).supersedes(Compared(older, None))


class Compared:
    """An older memory as successors compare it: each part is read once, when first needed, however
    many successors it is compared with (a recall compares up to 100 candidates with each other)."""

    __slots__ = ("_digits", "_shingles", "_slot", "_slot_read", "content", "key")

    def __init__(self, content: str, key: str | None) -> None:
        self.content = content
        self.key = key
        self._slot: Slot | None = None
        self._slot_read = False
        self._shingles: set[str] | None = None
        self._digits: list[str] | None = None

    @property
    def slot(self) -> Slot | None:
        if not self._slot_read:
            self._slot, self._slot_read = keyed_slot(self.content), True
        return self._slot

    def similarity(self, other: Compared) -> float:
        """`text.tokens.similarity` of the two texts, from parts each computes once."""
        sa, sb = self.shingles, other.shingles
        if not sa or not sb:
            return 1.0 if sa == sb else 0.0
        score = len(sa & sb) / len(sa | sb)
        return score / 2 if self.digits != other.digits else score

    @property
    def shingles(self) -> set[str]:
        if self._shingles is None:
            self._shingles = _shingles(self.content)
        return self._shingles

    @property
    def digits(self) -> list[str]:
        if self._digits is None:
            self._digits = sorted(_DIGITS.findall(normalize(self.content)))
        return self._digits


class Successor:
    """A memory that can supersede older ones: one holding a keyed fact's key, or a correction.
    What it needs to compare is read once, however many older memories it is compared with."""

    __slots__ = ("body", "correction", "old", "slot")

    def __init__(self, content: str, key: str | None, category: str) -> None:
        self.slot = slot_named(key)
        self.correction = category == _CORRECTION_CATEGORY
        self.old = corrected_value(content) if self.correction else None
        body = _MARKERS.sub(" ", content).strip() if self.correction and self.old is None else ""
        self.body = Compared(body, None) if body else None

    @classmethod
    def of(cls, content: str, key: str | None, category: str) -> Successor | None:
        """The memory as a successor, or None when it cannot supersede anything."""
        return cls(content, key, category) if category == _CORRECTION_CATEGORY or slot_named(key) else None

    def supersedes(self, older: Compared) -> bool:
        """Whether this (newer) memory supersedes an older one: both state the same keyed fact (this
        one under its key, the older one unkeyed in words), or this one is a correction of it."""
        if self.slot is not None and older.key is None and older.slot is self.slot:
            return True
        if not self.correction:
            return False
        if self.old is not None:
            return contains(older.content, self.old)
        return self.body is not None and self.body.similarity(older) >= RESTATES
