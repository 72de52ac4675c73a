"""The memory sieve's fast channel: high-signal sentences found by patterns.

No model and no database. A user message is cut into sentences and each sentence yields at most
one `Signal`: the first kind in `KINDS` order that matches. A correction comes first because it
overrides something stored before; identity next because it is the most durable. A sentence of
several facts about the speaker yields one per clause (`compound_parts`), and a statement of a fact
with one value at a time (where the user lives, works, their job, name, partner) carries its key
(`text.corrections`), so that the next statement or correction of it updates the same memory.

Patterns are anchored on the speaker (我喜欢, I prefer, 我们决定), not on bare keywords: that keeps
talk about other people (他喜欢) and requests (I'd like to ask) out. Questions, hypotheticals
(如果我是你, if I were you) and sentences with nothing but the trigger (就这样吧, I love it) yield
nothing, because a memory has to make sense when it is read alone months later. The pattern
tables live in `signal_patterns`; this module is the pipeline around them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.corrections import keyed_slot
from ..text.lazy_pattern import lazy
from ..text.stopwords import SINGLE_CHAR_STOPWORDS, STOPWORDS
from ..text.tokens import fingerprint, is_cjk
from .signal_patterns import (
    EMPHASIS,
    EMPHASIS_PREFIX,
    EN_FORCED,
    FILLER_PREFIX,
    FORCED_PREFIXES,
    HYPOTHETICAL,
    NOT_A_CORRECTION,
    NOT_OUR_DECISION,
    OTHERS_SPEECH,
    POLITE_REQUEST,
    RULES,
    ZH_FORCED,
    ZH_FORCED_NOT_AN_ORDER,
    is_question,
    re_alternatives,
    statement,
    strip_tag,
)

__all__ = [
    "FORCED_IMPORTANCE",
    "IMPORTANCE",
    "KINDS",
    "SMALL_TALK_REPLY_CHARS",
    "Signal",
    "compound_parts",
    "detect_signals",
    "forced_instruction",
    "is_small_talk",
    "split_sentences",
]

KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in RULES))

# The importance guide: core identity and corrections high, habits and plans a step lower.
IMPORTANCE: dict[str, float] = {
    "correction": 0.8,
    "identity": 0.8,
    "relationship": 0.6,
    "preference": 0.7,
    "decision": 0.7,
    "todo": 0.6,
    "important": 0.7,
}
# Something the user told us to remember is never below this (forced instructions win).
FORCED_IMPORTANCE = 0.8
# The deep channel is skipped for small talk only when the assistant's reply is short too: a
# long reply to "thanks" may still carry a conclusion worth keeping.
SMALL_TALK_REPLY_CHARS = 100

# Kinds whose patterns match only the trigger words, so the rest of the sentence must say something
# (就这样吧, 提醒我, 你搞错了 and "I love it" alone are not memories).
_NEEDS_SUBSTANCE = frozenset({"correction", "preference", "decision", "todo", "important"})
# Kinds about the speaker: reported speech (他说我是…, they think I'm…) is not the user's own claim.
_ABOUT_SPEAKER = frozenset({"identity", "preference", "decision"})
# Characters that carry no content even though the stopword list lets them through.
_FILLER_CHARS = frozenset("样么吧呗嘛啦哈嗯哦噢呃诶欸呀哇")
_DEMONSTRATIVE = lazy(  # matched at the start of what follows a trigger (\A: never searched)
    r"\A\s*(?:这个|那个|这样|那样|这种|那种|这些|那些|它|your\b|(?:it|that|this)\b(?! when| if))", re.IGNORECASE
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_BOUNDARY = lazy(
    r"[。！？；…]+[”’」』)）\"']*"  # Chinese terminators always end a sentence
    # ASCII ones only before a space, the end or Chinese (3.5, a.com/?q), tried from a run's start only
    rf"|(?<![.!?;])[.!?;]+[”’\"')]*(?=\s|$|[{_CJK}])"
    r"|\n+"
    r"|(?<=[\s：:])(?=\d{1,2}[.、)）](?!\d)\s*\S)"  # before an inline list item: ：1. 我不吃辣 2. 我对…
)
_LIST_MARKER = lazy(r"^(?:\d{1,2}[.、)）](?!\d)|[-*•·]|[（(]\d{1,2}[)）])\s*")
_ABBREVIATIONS = frozenset(
    re.findall(
        r"\S+",
        "mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie a.m p.m no inc ltd co corp approx dept est fig "
        "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun u.s u.k",
    )
)
_WORD_BEFORE = lazy(r"(?:^|[\s(])([A-Za-z][A-Za-z.]*)$")
_LIST_NUMBER_BEFORE = lazy(r"(?:^|[\s：:])\d{1,2}$")
# Runs are tried from their first character only (the lookbehinds): from each of their characters,
# a search would read the rest of the run again before failing at a character that is not the end.
_TRAILING = lazy(r"(?<![\s。.!！?？;；,，、~～…:：])[\s。.!！?？;；,，、~～…:：]+$")
_QUESTION_TAIL = lazy(r"(?:好吗|可以吗|吗)?(?<![\s?？])[\s?？]*$")
_CJK_CHAR = lazy(f"[{_CJK}]")
_PIECE_END = lazy(r"[，,。.!！?？~～…;；、\n]+")
_LATIN_WORD = lazy(r"[^\W_]+")
_CONTRACTION = lazy(r"['’](?:s|m|re|ve|ll|d|t)\b", re.IGNORECASE)  # don't -> don, a stopword
_SPEAKER_REMEMBERS = lazy(r"我(?:已经|都|会|没|没有|能|也|还|一定会|不会|就)?$")
# Compound sentences: the speaker at the start of a clause, the cuts between clauses (a run of
# blanks is entered from its first one only, the lookbehind), the conjunctions that open a clause.
_SPEAKER_START = lazy(r"(?:我|i\b|i['’]|my\b)", re.IGNORECASE)
_COMPOUND_CUT = lazy(r"(?<!\s)\s*[，,；;](?!\d)\s*(?:and\s+)?|(?<!\s)\s+and\s+", re.IGNORECASE)
_CONJUNCTION = lazy(r"^(?:而且|并且|同时|另外|以及|also\s+|plus\s+)", re.IGNORECASE)
_MAX_COMPOUND = 8
_CORRECTION_RULE = next(rule.pattern for rule in RULES if rule.kind == "correction")


@dataclass(frozen=True)
class Signal:
    """One high-signal sentence of a user message, ready to upsert as a core memory."""

    category: str  # the memory category to store it under: correction, identity, preference, ...
    content: str  # the sentence without instruction words (记住，/ remember that); never empty
    importance: float  # 0-1, from IMPORTANCE; at least FORCED_IMPORTANCE when forced
    pattern: str  # the kind that matched (one of KINDS), or "forced" when only the instruction did
    forced: bool  # the user explicitly asked us to remember it (always stored)
    # The keyed fact it states (user.city, user.employer, ...; see text.corrections): stored under this
    # key, a later statement or correction of the fact updates that memory and keeps its history.
    key: str | None = None


def split_sentences(text: str) -> list[str]:
    """Sentences and clauses, each keeping its terminator (the question check needs it).

    Chinese 。！？；… and line breaks always split; ASCII .!?; only before a space, the end or a
    Chinese character, so decimals (3.5), versions (3.11.2), file names and URLs stay whole, and a
    period after an abbreviation (e.g., Dr.) or a list number (1.) does not end a sentence.
    """
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        # 40 characters are enough to see the word before the period, and keep long texts linear
        if match.group().startswith(".") and _period_continues(text[max(0, match.start() - 40) : match.start()]):
            continue
        _append(sentences, text[start : match.end()])
        start = match.end()
    _append(sentences, text[start:])
    return sentences


def _period_continues(before: str) -> bool:
    if _LIST_NUMBER_BEFORE.search(before):
        return True
    word = _WORD_BEFORE.search(before)
    if word is None:
        return False
    token = word.group(1)
    return (len(token) == 1 and token.isupper()) or token.lower().rstrip(".") in _ABBREVIATIONS


def _append(sentences: list[str], piece: str) -> None:
    piece = _LIST_MARKER.sub("", piece.strip()).strip()
    if piece:
        sentences.append(piece)


def _clean(text: str) -> str:
    return _TRAILING.sub("", text).strip()


def _units(text: str) -> int:
    """How much a text says: a Chinese content character is 1, a content word of other scripts 2
    (about what two Chinese characters carry)."""
    count = sum(1 for ch in text if is_cjk(ch) and ch not in SINGLE_CHAR_STOPWORDS and ch not in _FILLER_CHARS)
    latin = _LATIN_WORD.findall(_CONTRACTION.sub("", _CJK_CHAR.sub(" ", text)).lower())
    return count + 2 * sum(1 for word in latin if word not in STOPWORDS)


def forced_instruction(text: str) -> bool:
    """A forced memory instruction: the user tells us to remember (记住, 帮我记一下, 别忘了,
    remember that, don't forget, note that, keep in mind). A question about memory (你还记得吗, do
    you remember) or the user's own remembering (我记住了, I remember when) is not one; a polite
    request (你能记住…吗, could you remember…?) is."""
    return any(_forced(sentence) for sentence in split_sentences(text))


def _forced(sentence: str) -> bool:
    sentence = strip_tag(sentence)
    if is_question(sentence) and not POLITE_REQUEST.search(sentence):
        return False
    if EN_FORCED.search(sentence) or EMPHASIS.search(sentence):
        return True
    for match in ZH_FORCED.finditer(sentence):
        # 我 and at most three characters (and a newline) before the order: read no further back, as
        # a sentence can hold many orders.
        mine = _SPEAKER_REMEMBERS.search(sentence, max(0, match.start() - 5), match.start())
        if mine or ZH_FORCED_NOT_AN_ORDER.match(sentence, match.start()):
            continue  # 我会记住的, 这个我记下了, 好的记住了: the user's own memory, not an order
        return True
    return False


def _strip_forced(sentence: str) -> str:
    polite = POLITE_REQUEST.search(sentence) is not None
    for prefix in FORCED_PREFIXES:
        stripped = prefix.sub("", sentence, count=1)
        if stripped != sentence:
            sentence = stripped
            break
    if polite:  # 你能记住我不吃辣吗？ -> 我不吃辣
        sentence = _QUESTION_TAIL.sub("", sentence)
    return sentence


def _strip_fillers(text: str) -> str:
    for _ in range(3):  # 对了，另外， / oh, and btw
        stripped = FILLER_PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return text


def detect_signals(user_message: str) -> list[Signal]:
    """High-signal sentences of a user message, in message order, at most one per sentence.

    A sentence that is only an instruction (记住以下几点：, Remember:) makes every later sentence
    of the message forced. Signals with the same content (ignoring case, spacing and punctuation)
    and category are reported once.
    """
    signals: list[Signal] = []
    seen: set[tuple[str, str]] = set()
    forced_rest = False
    for sentence in split_sentences(user_message):
        forced = forced_rest or _forced(sentence)
        if forced:
            text = _clean(_strip_fillers(_strip_forced(_strip_fillers(strip_tag(sentence)))))
            if not text or not _clean(EMPHASIS_PREFIX.sub("", text, count=1)):
                forced_rest = True  # the instruction (记住：, 这个很重要：) introduces what follows
                continue
        else:
            kept = statement(sentence)
            if kept is None:
                continue
            text = _clean(_strip_fillers(kept))
        for signal in _compound_signals(text, forced):
            seen_as = (signal.category, fingerprint(signal.content))
            if seen_as not in seen:
                seen.add(seen_as)
                signals.append(signal)
    return signals


def compound_parts(text: str) -> list[str]:
    """The separate facts of a sentence that states several about the speaker (seed 002: compound
    information is split): 我住在杭州，在阿里工作，喜欢爬山 and "I live in Berlin, work at SAP and love
    hiking" give three sentences each, the speaker written into each clause (我在阿里工作, I work at
    SAP). Only when every clause is a high-signal sentence on its own, so a reason (我用Go，因为快),
    a list (I like tea, coffee and juice), a correction (不是北京，而是柏林) or a clause about
    someone else stay one sentence; otherwise `[text]`."""
    split = _split(text, forced=False)
    return [s.content for s in split] if split else [text]


def _compound_signals(text: str, forced: bool) -> list[Signal]:
    """The signals of a sentence: one per clause when `compound_parts` splits it, each clause
    classified once; else the sentence's own, if any."""
    split = _split(text, forced)
    if split:
        return split
    signal = _classify(text, forced)
    if signal is None:
        return []
    return _keyed_apart(text, signal, forced) if signal.key is not None else [signal]


def _keyed_apart(text: str, signal: Signal, forced: bool) -> list[Signal]:
    """A keyed fact's clause stored apart from the rest of its sentence when the rest says something
    of its own (seed 002: compound information is split): 我住在苏州，我女儿叫小米，她在读三年级 gives
    我住在苏州 under user.city and 我女儿叫小米，她在读三年级, so that 我搬到上海了 replaces the city
    and not the daughter's name. A rest that says nothing alone (我住在苏州，离公司很近: about the
    city) stays with the keyed clause; a correction (不是北京，而是柏林) is one sentence."""
    if signal.pattern == "correction":
        return [signal]
    cuts = list(_COMPOUND_CUT.finditer(text))
    if not cuts or len(cuts) >= _MAX_COMPOUND:
        return [signal]
    bounds = [0, *(c for cut in cuts for c in cut.span()), len(text)]
    pieces = [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]
    keyed = next((i for i, (a, b) in enumerate(pieces) if keyed_slot(text[a:b]) is not None), None)
    if keyed is None:
        return [signal]
    start, end = pieces[keyed]
    # the clause and the cut after it, or the last clause and the cut before it
    rest = text[:start] + text[pieces[keyed + 1][0] :] if keyed + 1 < len(pieces) else text[: pieces[keyed - 1][1]]
    rest = _clean(_CONJUNCTION.sub("", rest.strip(), count=1))
    if rest[:1].islower():
        rest = rest[0].upper() + rest[1:]
    other = _classified(rest, forced, bool(HYPOTHETICAL.search(rest))) if rest else None
    if other is None or other.pattern == "forced" or keyed_slot(rest) is not None:
        return [signal]
    clause = _clean(text[start:end])
    return [Signal(signal.category, clause, signal.importance, signal.pattern, signal.forced, signal.key), other]


def _split(text: str, forced: bool) -> list[Signal] | None:
    """The signals of the clauses of a compound sentence (see `compound_parts`), or None when it is
    not one."""
    if not _SPEAKER_START.match(text) or _CORRECTION_RULE.search(text):
        return None
    pieces = [p for p in _COMPOUND_CUT.split(text) if p]
    if not 2 <= len(pieces) <= _MAX_COMPOUND:
        return None
    parts = [pieces[0]]
    for piece in pieces[1:]:
        piece = _CONJUNCTION.sub("", piece, count=1)
        if not piece:
            return None
        if not _SPEAKER_START.match(piece):
            piece = ("我" if is_cjk(piece[0]) else "I ") + piece
        parts.append(piece)
    found: list[Signal] = []
    # The clauses the speaker was written into first: when one says nothing alone, it is usually one
    # of those (我决定用Go，因为快), and the others need not be classified.
    for part in (*parts[1:], parts[0]):
        signal = _classify(part, forced)
        # A clause must say something itself: an explicit instruction alone ("forced") does not count.
        if signal is None or signal.pattern == "forced":
            return None
        found.append(signal)
    return [found[-1], *found[:-1]]


def _classify(text: str, forced: bool) -> Signal | None:
    if not text:
        return None
    hypothetical = bool(HYPOTHETICAL.search(text))
    signal = _classified(text, forced, hypothetical)
    if hypothetical or (signal is not None and signal.pattern == "todo"):
        return signal  # a plan (我下个月搬到柏林前要…) or a hypothesis states no value of a keyed fact
    return _keyed(text, forced, signal)


def _keyed(text: str, forced: bool, signal: Signal | None) -> Signal | None:
    """`signal` stored under the key of the fact it states (I moved to Berlin: user.city), as
    identity or relationship whatever rule matched first (moved to is also a decision's words),
    a correction keeping its kind; or `signal` unchanged when it states no keyed fact."""
    correction = signal is not None and signal.pattern == "correction"
    slot = keyed_slot(text, correction=correction)
    if slot is None or OTHERS_SPEECH.search(text):
        return signal
    kind = "correction" if correction else ("relationship" if slot.category == "relationship" else "identity")
    keyed = _signal(slot.category, text, IMPORTANCE[kind], kind, forced)
    return Signal(keyed.category, keyed.content, keyed.importance, keyed.pattern, keyed.forced, key=slot.key)


def _classified(text: str, forced: bool, hypothetical: bool) -> Signal | None:
    for rule in RULES:
        if hypothetical and rule.kind != "todo":
            continue
        match = rule.pattern.search(text)
        if match is None:
            continue
        if rule.kind in _ABOUT_SPEAKER and OTHERS_SPEECH.search(text[: match.start()]):
            continue
        if rule.kind == "decision" and NOT_OUR_DECISION.search(_clause(text, match)):
            continue
        if rule.kind == "correction" and NOT_A_CORRECTION.search(text):
            continue  # about what was said in the conversation, not a fact set right
        if rule.kind in _NEEDS_SUBSTANCE and not _has_substance(text, match, rule.kind):
            continue
        return _signal(rule.category, text, IMPORTANCE[rule.kind], rule.kind, forced)
    # Something to remember besides the instruction itself ("don't forget about me" has nothing).
    if forced and not hypothetical and _units(ZH_FORCED.sub(" ", EN_FORCED.sub(" ", text))) >= 2:
        return Signal(category="fact", content=text, importance=FORCED_IMPORTANCE, pattern="forced", forced=True)
    return None


def _clause(text: str, match: re.Match[str]) -> str:
    """The comma-separated clause around a match: 纠结了很久，最终决定用Go is decided."""
    start = max(text.rfind("，", 0, match.start()), text.rfind(",", 0, match.start())) + 1
    ends = [i for i in (text.find("，", match.end()), text.find(",", match.end())) if i >= 0]
    return text[start : min(ends, default=len(text))]


def _has_substance(text: str, match: re.Match[str], kind: str) -> bool:
    after = text[match.end() :]
    if kind == "preference" and _DEMONSTRATIVE.match(after):
        return False  # 我喜欢这个 / I love it: about something only the conversation knows
    return _units(text[: match.start()] + " " + after) >= 1


def _signal(category: str, content: str, importance: float, pattern: str, forced: bool) -> Signal:
    if forced:
        importance = min(1.0, max(importance + 0.1, FORCED_IMPORTANCE))
    return Signal(category=category, content=content, importance=round(importance, 2), pattern=pattern, forced=forced)


def is_small_talk(user_message: str, assistant_message: str) -> bool:
    """The skip rule for the deep channel: the user's message is only greetings, thanks,
    acknowledgements, laughter, goodbyes or weather chit-chat (好的，谢谢！/ thanks! / 今天天气真好)
    and the assistant's reply is shorter than `SMALL_TALK_REPLY_CHARS`."""
    if len(assistant_message.strip()) >= SMALL_TALK_REPLY_CHARS:
        return False
    pieces = _PIECE_END.split(user_message.strip())
    for piece in pieces:
        piece = piece.strip()
        if not piece or (_units(piece) == 0 and not any(ch.isalnum() for ch in piece)):
            continue  # empty, or emoji and punctuation only
        if not _small_talk_piece(piece):
            return False
    return True


# Small-talk phrases, one regex per family. Within a family a phrase comes before its own prefix
# (好吧 before 好, okay before ok): a family answers with its first match.
_ZH_SMALL_TALK = (
    "你们好|你好|您好|大家好|嗨|哈喽|哈啰|哈罗|早上好|早安|上午好|中午好|下午好|晚上好|晚安|午安|早|在吗|在不在|在么",
    "(?:谢谢|多谢|感谢|谢了|谢啦|辛苦了|辛苦|麻烦你了|麻烦了)(?:你们|你|您|啦|了|哈|呀|啊|哦|大佬|老师)*"
    "(?:的?(?:帮助|帮忙|解答|回答|建议))?",
    "好吧|好滴|好嘞|好哒|好的|好|嗯+|哦+|噢+|恩+|额+|呃+|行吧|行|可以|没问题|收到|明白了|明白|懂了|知道了|了解了|了解|对的|"
    "对啊|对|是的|是啊|当然|好主意|原来如此|原来是这样|这样啊|有道理|学到了",
    "哈+|呵+|嘿+|嘻+|h{2,}|23{2,}|笑死我了|笑死了|笑死",
    "再见|拜拜|回见|回头见|明天见|下次见|先这样|886|88+",
    "太棒了|太好了|好厉害|厉害了|厉害|牛逼|牛|nb|真棒|好棒|很棒|棒|点赞|赞|不错|很好|完美|太强了|强|6{3,}|绝了",
    "你好吗|最近怎么样|最近好吗|最近如何|吃了吗|吃饭了吗|干嘛呢|在干嘛",
    "(?:(?:今天|今儿|今日|最近|这几天|外面|明天|早上|今早)(?:的)?(?:天气)?|天气)"
    "(?:真|好|很|挺|太|特别|超|有点|蛮|非常)*(?:好|棒|热|冷|晴朗|晴|不错|舒服|凉快|闷|糟糕|差|晒|暖和|阴|潮)"
    "(?:啊|呀|了|哈|呢)*|下雨了|下雪了|出太阳了|降温了|(?:好|真|太)(?:热|冷|晒)(?:啊|呀|了)*",
)
_EN_SMALL_TALK = (
    "hi there|hello there|hey there|hiya|hi|hello|hey|yo|sup|howdy|greetings|morning|gm|gn",
    "good (?:morning|afternoon|evening|night|day)",
    "thanks a lot|thanks so much|thanks a ton|thanks again|thank you so much|thank you very much|thank you|thanks"
    "|thx|tysm|tyvm|ty|cheers|many thanks|much appreciated|appreciate it",
    "okay|ok|kk|k|alright|all right|sure|yes|yep|yeah|yup|got it|gotcha|understood|makes sense|oh i see|i see|cool"
    "|nice|great|perfect|awesome|sounds good|good|fine|right|np|no problem|no worries|will do|of course|fair enough"
    "|wow|amazing|excellent|brilliant|neat|sweet",
    "lmao|lol|rofl|ha(?:ha)+|he(?:he)+|xd|:\\)|:d",
    "bye bye|goodbye|bye|see you|see ya|cya|talk later|later|ttyl|have a nice day|have a good one|take care",
    "great job|good job|well done|nice work|good work|you rock|love it|nice one",
    "how are you(?: doing)?(?: today)?|how's it going|how are things|what's up|how have you been|how's your day",
    "(?:(?:it's|it is|what|such) (?:a )?)?(?:so |really |very |pretty |such a )?(?:nice|lovely|beautiful|great|gorgeous"
    "|hot|cold|rainy|sunny|cloudy|windy|chilly|warm|freezing|humid) (?:day|weather|morning|afternoon|evening"
    "|out(?:side)?)(?: (?:today|out there|outside))?",
    "(?:nice|lovely|great|beautiful|terrible|awful) weather(?: today)?",
    "it's (?:so |really |very )?(?:hot|cold|raining|snowing|sunny|freezing)(?: today| outside| out)?",
)
_SMALL_TALK_FAMILIES = tuple(re_alternatives(family) for family in _EN_SMALL_TALK + _ZH_SMALL_TALK)
_SMALL_TALK_MAX_CHARS = 40  # longer pieces say something; also bounds the work below


def _small_talk_piece(piece: str) -> bool:
    """Whether a piece of a message (no punctuation) is nothing but small-talk phrases, run
    together or spaced: 好的谢谢, ok thanks, 哈哈哈. Positions reachable by a chain of phrases are
    followed left to right, so no phrase order is tried twice (a single regex with a repeated
    group of 哈+ and ha(ha)+ backtracks exponentially on a long near-miss)."""
    text = piece.strip()
    if not text or len(text) > _SMALL_TALK_MAX_CHARS:
        return False
    reachable = {0}
    for start in range(len(text)):
        if start not in reachable:
            continue
        pos = start
        while text[pos].isspace():
            pos += 1
        for family in _SMALL_TALK_FAMILIES:
            match = family.match(text, pos)
            if match is None or match.end() == pos:
                continue
            if match.end() == len(text):
                return True
            reachable.add(match.end())
    return False
