"""Emotion -> response strategy: a fixed table, no model involved,
so the same emotion always gets the same strategy and every row can be tested.

The assistant reports the user's emotion as `{primary, category, confidence, indicators}`; an
emotion the table does not know, or one reported with confidence below the threshold (0.6 by
default), gets the neutral strategy. The table can be changed row by row through configuration.

An assistant does not always name the emotion as the table does: common words for the same
feeling in English and Chinese ("angry", "upset", "worried", "生气", "难过", "担心" ...) are read as
the table's nearest emotion (`SYNONYMS`); a row configured under such a word takes precedence.

Emoji: every default row has `emoji_allowed` false, the original design's default, which its
own rows (happy among them) never turn on: an assistant that puts emoji in answers unasked reads
as unserious in many settings. A deployment that wants them turns them on per row by configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config.config import Config
from ..config.limits import MAX_EMOTION_CHARS
from ..errors import InvalidInput
from ..models import Model

__all__ = ["CATEGORY_OF", "DEFAULT_TABLE", "SYNONYMS", "Choice", "Emotion", "Strategy", "choose", "strategy_table"]

EmotionCategory = Literal["neutral", "positive", "negative", "seeking"]

CATEGORY_OF: Mapping[str, EmotionCategory] = MappingProxyType(
    {
        "neutral": "neutral",
        "happy": "positive",
        "excited": "positive",
        "grateful": "positive",
        "curious": "positive",
        "sad": "negative",
        "anxious": "negative",
        "frustrated": "negative",
        "confused": "negative",
        "help_seeking": "seeking",
        "info_seeking": "seeking",
        "validation_seeking": "seeking",
    }
)


def _words(emotion: str, *words: str) -> dict[str, str]:
    return dict.fromkeys(words, emotion)


# Other words for the table's emotions, each to the nearest row: anger is closest to frustrated
# (calm, patient, direct), fear and stress to anxious, disappointment and low mood to sad.
SYNONYMS: Mapping[str, str] = MappingProxyType(
    _words("neutral", "calm", "ok", "fine", "平静", "中性", "一般", "淡定")
    | _words(
        "happy", "glad", "joyful", "cheerful", "pleased", "content", "delighted", "开心", "高兴", "快乐", "愉快", "满意"
    )
    | _words("excited", "thrilled", "enthusiastic", "eager", "兴奋", "激动", "期待")
    | _words("grateful", "thankful", "appreciative", "感激", "感谢", "感恩")
    | _words("curious", "interested", "intrigued", "好奇", "感兴趣")
    | _words(
        "sad",
        "upset",
        "unhappy",
        "down",
        "depressed",
        "disappointed",
        "lonely",
        "hurt",
        "grieving",
        "难过",
        "伤心",
        "悲伤",
        "失落",
        "沮丧",
        "低落",
        "失望",
        "孤独",
        "委屈",
    )
    | _words(
        "anxious",
        "worried",
        "nervous",
        "stressed",
        "scared",
        "afraid",
        "fearful",
        "overwhelmed",
        "焦虑",
        "担心",
        "紧张",
        "害怕",
        "不安",
        "忧虑",
        "压力大",
        "恐惧",
    )
    | _words(
        "frustrated",
        "angry",
        "mad",
        "furious",
        "annoyed",
        "irritated",
        "impatient",
        "fed_up",
        "生气",
        "愤怒",
        "恼火",
        "烦躁",
        "郁闷",
        "气愤",
        "火大",
        "不爽",
        "烦",
    )
    | _words("confused", "puzzled", "lost", "uncertain", "unsure", "困惑", "迷惑", "疑惑", "不解", "糊涂", "懵")
    | _words("help_seeking", "求助", "需要帮助")
    | _words("info_seeking", "inquisitive", "询问")
    | _words("validation_seeking", "insecure", "求认可", "需要肯定")
)


class Emotion(BaseModel):
    """The user's emotion, as the assistant read it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    primary: str = Field(
        min_length=1,
        max_length=MAX_EMOTION_CHARS,
        description=(
            "neutral, happy, excited, grateful, curious, sad, anxious, frustrated, confused, help_seeking, "
            "info_seeking or validation_seeking."
        ),
    )
    category: str | None = Field(default=None, max_length=20, description="positive, negative, neutral or seeking.")
    confidence: float = Field(ge=0, le=1, description="How clear the emotion is.")
    indicators: list[str] = Field(default_factory=list, max_length=10, description="What showed it.")


class Strategy(Model):
    """How to answer: the response strategy for an emotion."""

    tone: str = Field(description="Tone to take, e.g. empathetic or clear_explanatory.")
    max_length: int = Field(description="Target answer length in characters.")
    use_memory: bool = Field(description="Whether to draw on the user's memories in the answer.")
    proactive_question: bool = Field(description="Whether to ask a follow-up question.")
    formality: Literal["casual", "formal"]
    emoji_allowed: bool


def _row(tone: str, max_length: int, question: bool, *, formality: str = "casual", emoji: bool = False) -> Strategy:
    return Strategy.model_validate(
        {
            "tone": tone,
            "max_length": max_length,
            "use_memory": True,
            "proactive_question": question,
            "formality": formality,
            "emoji_allowed": emoji,
        }
    )


# The original design's rows (neutral, happy, sad, anxious, confused, help_seeking) and the rest filled in
# their spirit: short and warm for good moods, calm and unhurried for bad ones, longer and
# structured when the user is after help or information.
DEFAULT_TABLE: Mapping[str, Strategy] = MappingProxyType(
    {
        "neutral": _row("professional", 300, False),
        "happy": _row("warm", 250, True),
        "excited": _row("enthusiastic", 250, True),
        "grateful": _row("warm", 200, False),
        "curious": _row("engaging", 450, True),
        "sad": _row("empathetic", 400, False),
        "anxious": _row("calm_reassuring", 350, False),
        "frustrated": _row("patient_direct", 300, False),
        "confused": _row("clear_explanatory", 500, True),
        "help_seeking": _row("helpful", 600, True),
        "info_seeking": _row("informative", 500, False, formality="formal"),
        "validation_seeking": _row("supportive_honest", 300, True),
    }
)


def strategy_table(overrides: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Strategy]:
    """The default table with configured rows changed (only the fields given) or added."""
    table = dict(DEFAULT_TABLE)
    for emotion, fields in overrides.items():
        base = table.get(emotion, DEFAULT_TABLE["neutral"])
        try:
            table[emotion] = Strategy.model_validate(base.model_dump() | dict(fields))
        except ValidationError as exc:
            raise InvalidInput(f"the strategy for {emotion!r} is not valid: {exc.errors()[0]['msg']}") from None
    return MappingProxyType(table)


class Choice(Model):
    emotion: str = Field(description="The emotion whose strategy applies: the one reported, or neutral.")
    category: EmotionCategory
    strategy: Strategy
    reason: str = Field(description="Why this strategy: the emotion, or why neutral was used instead.")


def choose(emotion: Emotion | None, config: Config, table: Mapping[str, Strategy] | None = None) -> Choice:
    """The strategy for a reported emotion; neutral when none, unknown, or not confident enough."""
    rows = table if table is not None else strategy_table(config.conversation.strategy_overrides)
    if emotion is None:
        return Choice(emotion="neutral", category="neutral", strategy=rows["neutral"], reason="no emotion reported")
    said = emotion.primary.strip().lower().replace("-", "_").replace(" ", "_")
    name = said if said in rows else SYNONYMS.get(said, said)
    read_as = f" ({emotion.primary!r} read as {name})" if name != said else ""
    if name not in rows:
        reason = f"{emotion.primary!r} is not a known emotion; neutral strategy"
    elif emotion.confidence < config.conversation.emotion_min_confidence:
        reason = (
            f"{name}{read_as} reported with confidence {emotion.confidence:.2f}, below "
            f"{config.conversation.emotion_min_confidence:.2f}; neutral strategy"
        )
    else:
        category = CATEGORY_OF.get(name, "neutral")
        reason = f"{name} ({category}){read_as} reported with confidence {emotion.confidence:.2f}: its strategy applies"
        return Choice(emotion=name, category=category, strategy=rows[name], reason=reason)
    return Choice(emotion="neutral", category="neutral", strategy=rows["neutral"], reason=reason)
