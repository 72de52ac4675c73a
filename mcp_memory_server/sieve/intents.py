"""What the user asks the memory itself to do, read from their message before anything is kept.

Two requests, in Chinese and English:

- forget: 忘了我住在杭州这件事吧, 把我的旧地址忘掉, forget that I live in Hangzhou, please forget about
  my old job, don't remember that I smoke. The sentence is never stored; the stored memories that
  say what it describes are forgotten (the sieve decides which match confidently).
- not this (off the record): 别记这个, 这个不用记, 不要记住关于我前妻的事, don't remember this,
  don't save anything about my health, off the record. With a topic (关于X, about X) the sentences
  and the model's memories on that topic are left out; without one, nothing of the exchange is
  kept. A forget request that names nothing (忘了这个吧, forget it) is read the same way.

No model and no database: patterns over the sentences `signals.split_sentences` cuts. Each pattern
is anchored at the start of a sentence or runs over one clause, with no nested repetition, so
the time it takes grows with the text (tests/text/test_regex_linear.py runs every one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.lazy_pattern import lazy
from ..text.tokens import normalize
from .signal_patterns import is_question, strip_tag
from .signals import split_sentences

__all__ = [
    "COVER_SHARE",
    "MATCH_SHARE",
    "TOPIC_SHARE",
    "Forget",
    "Intents",
    "contained",
    "detect_intents",
]

# A stored memory is forgotten when at least MATCH_SHARE of the user's description is found in it
# and the description accounts for at least COVER_SHARE of the memory: 我住在杭州 forgets 用户住在杭州
# (0.75 and 0.6) but not 我住在杭州西湖区，在阿里做后端 (which says more than was asked to be forgotten).
MATCH_SHARE = 0.7
COVER_SHARE = 0.5
# A text is on a topic the user does not want kept when this share of the topic is found in it.
TOPIC_SHARE = 0.6

# Put in place of what the user asked not to keep, in the note kept for the deep channel and in the
# extraction log's preview: the log must not keep what the memory forgot.
WITHHELD = "[not kept at the user's request]"

_LEAD_ZH = r"(?:算了|好吧|好|那|那么|嗯|还有|另外|对了|哦|噢)?[，,、\s]*"
# 忘了/忘记 also say "I forgot" (忘了带钥匙): they are an order only with a polite lead, a closing
# 吧, or a 这件事 naming what to forget. The other verbs are always orders.
_ZH_FORGET = lazy(
    rf"^{_LEAD_ZH}(?P<who>请你|请|麻烦你|麻烦|帮我|你就|你)?\s*"
    r"(?P<verb>忘掉|忘了|忘记掉|忘记|删掉|删除|别再记着|别记着|别记得|不要再记着|不要记着|不要记得|不要再记得"
    r"|不用再记着|不用记着|别再记得)(?P<rest>.*)$",
    re.DOTALL,
)
_ZH_FORGET_BA = lazy(
    rf"^{_LEAD_ZH}(?P<who>请你|请|麻烦你|麻烦|帮我|你就|你)?\s*把(?P<rest>.+)(?P<verb>忘掉|忘了|忘记|删掉|删了|删除)$",
    re.DOTALL,
)
_ZH_AMBIGUOUS_VERBS = frozenset({"忘了", "忘记", "删了"})
_ZH_POLITE = frozenset({"请你", "请", "麻烦你", "麻烦", "帮我", "你就"})
_ZH_NOT_AN_ORDER = lazy(r"^\s*(?:告诉|说|提|带|问|跟|给|拿|关|写|做|买|交|吃|锁|还|回)")
# Runs are tried from their first character only (the lookbehinds), so a long run is read once.
_ZH_TAIL = lazy(r"(?<![\s。！!？?~～.…，,吧呗啊了哦呀嘛哈])[\s。！!？?~～.…，,吧呗啊了哦呀嘛哈]+$")
# 我之前说的X: names what to forget, and is not part of it.
_ZH_SAID = lazy(r"^\s*我?(?:之前|刚才|以前|上次)?(?:跟你)?(?:说|讲|提|告诉你)(?:过)?的")
_ZH_THING = lazy(r"(?:这件事情|这件事|这回事|这个事情|这个事|这事儿?|这一条|这条记忆|这条|这些|这个|的事情|的事)$")

_EN_FORGET = lazy(
    r"^(?:(?:ok|okay|so|and|also|oh|actually|hey|well|btw|hmm)\b[,\s]*)?"
    r"(?:(?:please|pls|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:just\s+)?"
    r"(?P<verb>forget(?:\s+about)?|stop\s+remembering|(?:don't|do\s+not|dont)\s+remember"
    r"|(?:delete|erase|remove)(?=.*\bmemor(?:y|ies)\b))\b(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_EN_LEAD_WORDS = lazy(
    r"^\s*(?:the\s+fact\s+that|what\s+i\s+(?:said|told\s+you)\s+about|everything\s+about|all\s+about|that|about)\b\s*",
    re.IGNORECASE,
)
_EN_TAIL_WORD = lazy(
    r"(?<![\s,])[\s,]+(?:please|anymore|any\s+more|for\s+me|now|from\s+(?:your\s+)?memor(?:y|ies)|ok(?:ay)?"
    r"|thanks?)$",
    re.IGNORECASE,
)
_EN_TAIL = lazy(r"(?<![\s.!?,;])[\s.!?,;]+$")
_EN_NOTHING_NAMED = frozenset({"this", "it", "these", "those", "everything", "all"})
_ZH_NOTHING_NAMED = frozenset(
    {"这", "那", "它", "这个", "那个", "这些", "那些", "这件事", "那件事", "刚才的", "刚才那个"}
)

# Off the record, with a topic: 不要记住关于X的事, 关于X的事别记, don't save anything about X.
_ZH_TOPIC = lazy(
    r"(?:别|不要|不用|不必|无需)(?:再)?(?:帮我)?(?:记住|记下来|记下|记录|记|保存|存)(?:任何)?(?:关于|有关)"
    r"(?P<topic>[^，,。；;！!？?\n]{1,60}?)的(?:事情|事|内容|东西|信息|一切|话题|话)"
)
_ZH_TOPIC_FIRST = lazy(
    r"(?:关于|有关)(?P<topic>[^，,。；;！!？?\n]{1,60}?)的(?:事情|事|内容|东西|信息|话题|话)[，,\s]*(?:就|都|也|一律)?"
    r"(?:别|不要|不用|不必|无需)(?:再)?(?:帮我)?(?:记|存|保存)"
)
_EN_TOPIC = lazy(
    r"\b(?:don't|do\s+not|dont|never)\s+(?:remember|save|store|record|memorize|keep|note|log)\s+"
    r"(?:anything|stuff|things)\s+(?:about|regarding|on|related\s+to|concerning)\s+(?P<topic>[^.!?;。！？；\n]{1,200})",
    re.IGNORECASE,
)
# Off the record, without a topic: the whole exchange.
_ZH_OFF = lazy(
    r"(?<![我咱])(?:别|不要|不用|不必|无需|甭)(?:再)?(?:帮我)?(?:记住|记下来|记下|记录下来|记录|记|存下来|保存|存)"
    r"(?=这|那|[了吧哦啊呀，,。！!：:\s~～]|$)"
    r"|(?:这个|这些|这件事|这段|这句话|这句|这条|以下|下面的?|上面的?|刚才的?)(?:内容|话题|话)?[，,\s]*(?:就|都|也|可以)?"
    r"(?:别|不要|不用|不必|无需|甭)(?:再)?(?:帮我)?(?:记|存|保存)"
)
_EN_OFF = lazy(
    r"\boff\s+the\s+record\b|\bnot\s+for\s+the\s+record\b"
    r"|\b(?:don't|do\s+not|dont|no\s+need\s+to|you\s+don't\s+need\s+to|never)\s+"
    r"(?:save|store|record|memorize|keep|note\s+down|write\s+down|log)\s+(?:this|that|it|any\s+of\s+(?:this|that|it))\b",
    re.IGNORECASE,
)
_TOPIC_LEAD = lazy(r"^\s*(?:我的|我|(?:my|our|the|a|an)\b)\s*", re.IGNORECASE)
_NOT_ALNUM = lazy(r"[\W_]+")


@dataclass(frozen=True)
class Forget:
    """A request to forget what is stored: the sentence (by its index) and what it describes."""

    sentence: int
    target: str


@dataclass(frozen=True)
class Intents:
    """The requests of one user message and the sentences they keep from being stored."""

    sentences: tuple[str, ...]
    forget: tuple[Forget, ...] = ()
    topics: tuple[str, ...] = ()  # off-the-record topics, as the user named them
    off_record: bool = False  # nothing of this exchange is kept
    excluded: frozenset[int] = frozenset()  # sentences not to store, by index

    @property
    def any(self) -> bool:
        return bool(self.forget or self.topics or self.off_record)

    def kept_message(self) -> str:
        """The message without the sentences under a request, for the fast channel."""
        return "\n".join(s for i, s in enumerate(self.sentences) if i not in self.excluded)

    def shown_message(self) -> str:
        """The message as the note and the log keep it: each excluded sentence replaced by a marker."""
        shown: list[str] = []
        for i, sentence in enumerate(self.sentences):
            if i not in self.excluded:
                shown.append(sentence)
            elif not shown or shown[-1] != WITHHELD:
                shown.append(WITHHELD)
        return " ".join(shown)

    def withheld(self, text: str) -> str | None:
        """Why a proposed memory may not be kept: the request it falls under, or None."""
        if self.off_record:
            return "the user asked not to keep this exchange"
        if any(contained(f.target, text) >= TOPIC_SHARE for f in self.forget if f.target):
            return "it is what the user asked to forget"
        if any(on_topic(text, topic) for topic in self.topics):
            return "it is on a topic the user asked not to remember"
        return None


def _squeeze(text: str) -> str:
    return _NOT_ALNUM.sub("", normalize(text).casefold())


def _bigrams(text: str) -> set[str]:
    squeezed = _squeeze(text)
    return {squeezed[i : i + 2] for i in range(len(squeezed) - 1)}


def contained(part: str, whole: str) -> float:
    """The share of `part`'s character bigrams found in `whole` (case, spacing and punctuation
    ignored); for a `part` of one character or less, whether it occurs in `whole` at all."""
    mine = _bigrams(part)
    if not mine:
        squeezed = _squeeze(part)
        return 1.0 if squeezed and squeezed in _squeeze(whole) else 0.0
    return len(mine & _bigrams(whole)) / len(mine)


def on_topic(text: str, topic: str) -> bool:
    return contained(topic, text) >= TOPIC_SHARE


def _zh_forget(sentence: str) -> str | None:
    """What a Chinese forget order describes ("" when it names nothing), or None when the sentence
    is not one."""
    body = _ZH_TAIL.sub("", sentence)
    closing = body != sentence and "吧" in sentence[len(body) :]
    match = _ZH_FORGET.match(body) or _ZH_FORGET_BA.match(body)
    if match is None:
        return None
    verb, who, rest = match.group("verb"), match.group("who"), match.group("rest")
    rest = _ZH_TAIL.sub("", rest)
    said = _ZH_SAID.match(rest)
    named = _ZH_THING.search(rest) is not None or said is not None
    if said is not None:
        rest = rest[said.end() :]
    if verb in _ZH_AMBIGUOUS_VERBS:
        polite = who in _ZH_POLITE
        if who == "你" and not polite:
            return None  # 你忘了我住在杭州(吧): a reproach or a guess, not an order
        if not (polite or closing or named) or _ZH_NOT_AN_ORDER.match(rest):
            return None  # 忘了带钥匙, 忘了告诉你: the user forgot something
    target = _ZH_THING.sub("", rest).strip(" ，,：:")
    return "" if not _squeeze(target) or target in _ZH_NOTHING_NAMED else target


def _en_forget(sentence: str) -> str | None:
    match = _EN_FORGET.match(sentence.strip())
    if match is None:
        return None
    rest = match.group("rest").strip()
    words = rest.split(None, 1)
    first = words[0].lower() if words else ""
    bare = first.rstrip(":,.;!-—")
    if not words or bare in _EN_NOTHING_NAMED:
        return ""  # forget it, don't remember this: it names nothing stored
    if bare == "that" and (len(words) == 1 or first != bare):
        return ""  # forget that. / don't remember that: what I'm telling you now
    target = _EN_TAIL.sub("", _EN_LEAD_WORDS.sub("", rest, count=1))
    for _ in range(3):  # ", please", " anymore", " from your memory"
        shorter = _EN_TAIL.sub("", _EN_TAIL_WORD.sub("", target))
        if shorter == target:
            break
        target = shorter
    return target.strip()


def _topic(raw: str) -> str:
    return _TOPIC_LEAD.sub("", raw.strip(), count=1).strip() or raw.strip()


def detect_intents(user_message: str) -> Intents:
    """The forget and off-the-record requests of a user message (see the module docstring)."""
    sentences = tuple(split_sentences(user_message))
    forget: list[Forget] = []
    topics: list[str] = []
    off_record = False
    excluded: set[int] = set()
    for i, raw in enumerate(sentences):
        sentence = strip_tag(raw)
        polite_question = sentence.lower().startswith(("can you", "could you", "would you", "will you"))
        if not is_question(sentence) or polite_question:
            target = _zh_forget(sentence)
            if target is None:
                target = _en_forget(sentence)
            if target is not None:
                excluded.add(i)
                if target:
                    forget.append(Forget(i, target))
                else:
                    off_record = True
                continue
        topic = _ZH_TOPIC.search(sentence) or _ZH_TOPIC_FIRST.search(sentence) or _EN_TOPIC.search(sentence)
        if topic is not None:
            excluded.add(i)
            topics.append(_topic(topic.group("topic")))
        elif _ZH_OFF.search(sentence) or _EN_OFF.search(sentence):
            excluded.add(i)
            off_record = True
    if off_record:
        excluded = set(range(len(sentences)))
    elif topics:
        excluded |= {i for i, s in enumerate(sentences) if any(on_topic(s, t) for t in topics)}
    return Intents(sentences, tuple(forget), tuple(topics), off_record, frozenset(excluded))
