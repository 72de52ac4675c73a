"""Topics the user marked as not worth remembering, and whether a text is about one.

The profile's low-value signals can be written by hand (edit_profile, the dashboard): 家庭私事（孩子、
配偶）不需要记忆, "work gossip, don't keep". Such a mark is the user's wish, so the sieve honours it in
both channels, not only in the deep channel's prompt (seed 004: a topic marked 不需要记忆).

A mark is cut into topic phrases at its punctuation, brackets and conjunctions (家庭私事, 孩子, 配偶),
the words that only say "do not remember" taken out. A phrase that names one of the families of words
below stands for the whole family (孩子 covers 女儿 and 儿子, 配偶 covers 老公 and wife, 家庭 covers
children, partners and parents); any other phrase matches itself. A Chinese phrase matches inside a
text, a Latin one as whole words. Every step is a scan of the text or a set lookup: linear in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["MarkedTopics"]

_CHILDREN = "孩子 小孩 儿子 女儿 闺女 宝宝 儿女 子女 娃 kid kids child children son sons daughter daughters baby babies"
_PARTNER = "配偶 老婆 老公 妻子 丈夫 爱人 媳妇 太太 伴侣 spouse wife husband girlfriend boyfriend"
_PARENTS = "父母 爸爸 妈妈 爸 妈 父亲 母亲 爹 岳父 岳母 公公 婆婆 parents parent mom mum mother dad father"
_HEALTH = "健康 身体 看病 医院 病情 病 体检 health medical illness doctor hospital"
_MONEY = "钱 财务 收入 工资 薪水 存款 理财 money finances income salary savings"
# Each family: the words of a mark that name it, and the words of a text that are about it.
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("家庭 家人 家里 家事 家务事 亲戚 亲人 family families relatives household", f"{_CHILDREN} {_PARENTS} {_PARTNER}"),
    (_CHILDREN, _CHILDREN),
    (_PARTNER, _PARTNER),
    (_PARENTS, _PARENTS),
    (_HEALTH, _HEALTH),
    (_MONEY, _MONEY),
    ("感情 恋爱 约会 前任 romance dating", "感情 恋爱 约会 前任 分手 romance dating breakup"),
    ("天气 weather", "天气 下雨 weather rain"),
)
# What a mark says besides its topics: the wish itself and words that name no topic.
_NOT_A_TOPIC = re.compile(
    r"不需要记忆|不需要记住|不需要记|不用记住|不用记|不必记|别记住|别记|不要记住|不要记|无需记忆|无需记|"
    r"不想被记住|不想记|请勿记录|不要存|不用存|不重要|的话题|话题|相关的?|之类的?|方面的?|私事|隐私|"
    r"\b(?:do not|don't|dont|no need to|never|not worth|need not)\s+"
    r"(?:remember(?:ing)?|keep(?:ing)?|store|storing|save|saving)\b|"
    r"\b(?:remembering|keeping|worth|matters|matter|stuff|things|topics|topic|private|personal|related|details|about|"
    r"my|the|any|of|to|is|are|be|not|needed|necessary)\b",
    re.IGNORECASE,
)
_CUT = re.compile(r"[，,。.;；:：、/|()（）\[\]【】「」\"“”‘’!！?？—~～]+|\s+-\s+|\b(?:and|or)\b|和|与|及|或|以及")
_LATIN = re.compile(r"[a-z][a-z'-]*")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_MAX_PHRASES = 64


def _words(text: str) -> frozenset[str]:
    return frozenset(text.casefold().split())


_FAMILY_WORDS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple((_words(a), _words(b)) for a, b in _FAMILIES)


@dataclass(frozen=True)
class _Mark:
    text: str  # the mark as the user wrote it
    chinese: frozenset[str]  # what a text must contain (家庭, 女儿, ...)
    latin: frozenset[str]  # the whole words or phrases a text must hold (daughter, work gossip, ...)


class MarkedTopics:
    """The marks of one profile, ready to test texts against."""

    def __init__(self, marks: Iterable[str]) -> None:
        self._marks = tuple(m for m in (_mark(text) for text in marks) if m.chinese or m.latin)

    def __bool__(self) -> bool:
        return bool(self._marks)

    def covering(self, text: str) -> str | None:
        """The first mark `text` is about, as the user wrote it; None when it is about none."""
        if not self._marks:
            return None
        folded = text.casefold()
        words = _LATIN.findall(folded)
        single, joined = set(words), f" {' '.join(words)} "
        for mark in self._marks:
            if any(w in single if " " not in w else f" {w} " in joined for w in mark.latin):
                return mark.text
            if any(word in folded for word in mark.chinese):
                return mark.text
        return None


def _mark(text: str) -> _Mark:
    cut = _CUT.split(_NOT_A_TOPIC.sub(" ", text.casefold()))
    phrases = [" ".join(p.split()) for p in cut if p.strip()][:_MAX_PHRASES]
    chinese: set[str] = set()
    latin: set[str] = set()
    for phrase in phrases:
        for word in _covered(phrase):
            (chinese if _CJK.search(word) else latin).add(word)
    return _Mark(text, frozenset(chinese), frozenset(latin))


def _covered(phrase: str) -> Sequence[str]:
    """The words a topic phrase stands for: its family's when it names one, else itself (a Chinese
    phrase of at least two characters; Latin words, of at least three letters when only one)."""
    if _CJK.search(phrase):
        chinese = "".join(phrase.split())
        for names, members in _FAMILY_WORDS:
            if chinese in names or any(len(n) >= 2 and n in chinese for n in names):
                return sorted(members)
        return [chinese] if len(chinese) >= 2 else []
    words = _LATIN.findall(phrase)
    for names, members in _FAMILY_WORDS:
        if not names.isdisjoint(words):
            return sorted(members)
    if len(words) == 1:
        return words if len(words[0]) >= 3 else []
    return [" ".join(words)] if words else []
