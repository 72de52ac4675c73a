"""Sessions and the emotion -> strategy table: deterministic, configurable, and the
session topic reaching recall."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput, NotFound
from mcp_memory_server.memory import MemoryService, Sessions
from mcp_memory_server.memory.strategy import CATEGORY_OF, DEFAULT_TABLE, Emotion, choose
from mcp_memory_server.profile import profile as profiles
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

# The original table's rows: (tone, max_length, proactive_question).
SEED_ROWS = {
    "neutral": ("professional", 300, False),
    "happy": ("warm", 250, True),
    "sad": ("empathetic", 400, False),
    "anxious": ("calm_reassuring", 350, False),
    "confused": ("clear_explanatory", 500, True),
    "help_seeking": ("helpful", 600, True),
}


def test_the_table_covers_every_emotion_and_keeps_the_original_rows(config: Config) -> None:
    assert set(DEFAULT_TABLE) == set(CATEGORY_OF)
    for name, (tone, length, question) in SEED_ROWS.items():
        row = DEFAULT_TABLE[name]
        assert (row.tone, row.max_length, row.proactive_question, row.use_memory) == (tone, length, question, True)
    for name, row in DEFAULT_TABLE.items():
        choice = choose(Emotion(primary=name, confidence=0.9), config)
        assert choice.strategy == row and choice.emotion == name and choice.category == CATEGORY_OF[name]
        assert choose(Emotion(primary=name, confidence=0.9), config) == choice  # deterministic


@pytest.mark.parametrize(
    ("emotion", "expected", "reason"),
    [
        (None, "neutral", "no emotion reported"),
        (Emotion(primary="sad", confidence=0.59), "neutral", "below 0.60"),
        (Emotion(primary="sad", confidence=0.6), "sad", "its strategy applies"),
        (Emotion(primary="Help-Seeking", confidence=1.0), "help_seeking", "seeking"),
        (Emotion(primary="bored", confidence=0.99), "neutral", "not a known emotion"),
        (Emotion(primary="无聊", confidence=0.99), "neutral", "not a known emotion"),
        (
            Emotion(primary="angry", confidence=0.5),
            "neutral",
            "'angry' read as frustrated) reported with confidence 0.50",
        ),
    ],
)
def test_unknown_or_unsure_emotions_get_the_neutral_strategy(
    config: Config, emotion: Emotion | None, expected: str, reason: str
) -> None:
    choice = choose(emotion, config)
    assert choice.emotion == expected and reason in choice.reason
    assert choice.strategy == DEFAULT_TABLE[expected]


@pytest.mark.parametrize(
    ("words", "emotion"),
    [
        (("angry", "Mad", "furious", "annoyed", "fed up", "生气", "愤怒", "恼火", "烦躁", "郁闷"), "frustrated"),
        (("upset", "unhappy", "Depressed", "难过", "伤心", "悲伤", "失落", "沮丧"), "sad"),
        (("glad", "joyful", "开心", "高兴", "快乐"), "happy"),
        (("worried", "nervous", "stressed", "scared", "焦虑", "担心", "紧张", "害怕"), "anxious"),
        (("puzzled", "困惑", "疑惑"), "confused"),
        (("thankful", "感激", "感谢"), "grateful"),
        (("thrilled", "兴奋", "激动"), "excited"),
    ],
)
def test_common_words_for_an_emotion_get_its_strategy(config: Config, words: tuple[str, ...], emotion: str) -> None:
    for word in words:
        choice = choose(Emotion(primary=word, confidence=0.9), config)
        assert (choice.emotion, choice.strategy) == (emotion, DEFAULT_TABLE[emotion]), word
        assert f"{word!r} read as {emotion}" in choice.reason


def test_a_row_configured_under_a_synonym_takes_precedence(config: Config) -> None:
    changed = config.with_changes(strategy_overrides={"angry": {"tone": "de_escalating"}})
    choice = choose(Emotion(primary="angry", confidence=0.9), changed)
    assert (choice.emotion, choice.strategy.tone) == ("angry", "de_escalating")


def test_no_default_row_allows_emoji(config: Config) -> None:
    """The original design's default (emoji_allowed false) holds in every row; configuration turns it on."""
    assert not any(row.emoji_allowed for row in DEFAULT_TABLE.values())


def test_the_table_and_threshold_are_configurable(config: Config) -> None:
    changed = Config.from_env(
        {
            "MCP_MEMORY_STRATEGIES": '{"sad": {"max_length": 200, "emoji_allowed": true}, "bored": {"tone": "lively"}}',
            "MCP_MEMORY_EMOTION_MIN_CONFIDENCE": "0.9",
        },
        db_path=config.db_path,
        cache_dir=config.cache_dir,
    )
    sad = choose(Emotion(primary="sad", confidence=0.95), changed).strategy
    assert (sad.tone, sad.max_length, sad.emoji_allowed) == ("empathetic", 200, True)
    assert choose(Emotion(primary="bored", confidence=0.95), changed).strategy.tone == "lively"
    assert choose(Emotion(primary="sad", confidence=0.8), changed).emotion == "neutral"
    with pytest.raises(InvalidInput, match="MCP_MEMORY_STRATEGIES"):
        Config.from_env({"MCP_MEMORY_STRATEGIES": "[1, 2]"})


def test_a_bad_configured_row_is_an_error_at_start(config: Config, segmenter: Segmenter) -> None:
    bad = config.with_changes(strategy_overrides={"sad": {"max_length": "long"}})
    with pytest.raises(InvalidInput, match="the strategy for 'sad' is not valid"):
        Sessions(MemoryService(Store(bad, segmenter)))  # before anything is opened


async def test_turns_topic_variables_and_emotion(service: MemoryService) -> None:
    sessions = Sessions(service)
    first = await sessions.update(
        "chat-1",
        topic="周末去杭州",
        emotion={"primary": "anxious", "confidence": 0.8},
        variables={"city": "杭州", "n": 2},
    )
    assert first.session.turn_count == 1 and first.session.current_topic == "周末去杭州"
    assert first.session.context_variables == {"city": "杭州", "n": 2} and first.session.last_emotion == "anxious"
    assert first.strategy.tone == "calm_reassuring"
    second = await sessions.update("chat-1", variables={"n": None, "budget": "500元"})
    assert second.session.turn_count == 2 and second.session.current_topic == "周末去杭州"
    assert second.session.context_variables == {"city": "杭州", "budget": "500元"}
    assert second.session.last_emotion == "anxious" and second.emotion == "neutral"  # none reported this turn
    third = await sessions.update("chat-1", topic="", emotion=Emotion(primary="happy", confidence=0.2))
    assert third.session.current_topic is None and third.session.last_emotion == "neutral"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"topic": "长" * 201}, "topic is 201 characters"),
        ({"variables": {f"v{i}": i for i in range(51)}}, "at most 50 context variables"),
        ({"variables": {"note": "x" * 9000}}, "limit is 8,000"),
        ({"variables": {"": 1}}, "variable name"),
        ({"emotion": {"primary": "sad", "confidence": 2}}, "confidence"),
    ],
)
async def test_bad_session_input_is_refused_and_changes_nothing(
    service: MemoryService, kwargs: dict[str, Any], message: str
) -> None:
    sessions = Sessions(service)
    await sessions.update("s", variables={"keep": True})
    with pytest.raises((InvalidInput, ValueError), match=message):
        await sessions.update("s", **kwargs)
    view = await sessions.view("s")
    assert view.session.turn_count == 1 and view.session.context_variables == {"keep": True}


async def test_the_session_view_lists_its_memories(service: MemoryService) -> None:
    sessions = Sessions(service)
    with pytest.raises(NotFound, match="no session"):
        await sessions.view("nope")
    await service.remember(content="I'm planning a trip to Kyoto in April", session_id="trip", tier="working")
    await service.remember(content="用户喜欢住日式旅馆", category="preference", session_id="trip")
    await service.remember(content="unrelated", session_id="other")
    await sessions.update("trip", emotion={"primary": "excited", "confidence": 0.9})
    view = await sessions.view("trip")
    assert [m.content for m in view.memories] == ["用户喜欢住日式旅馆", "I'm planning a trip to Kyoto in April"]
    assert view.strategy == DEFAULT_TABLE["excited"]


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def test_the_session_topic_reaches_recall_through_the_tools(client: Client) -> None:
    for content in ("周末去西湖边跑步", "周末在家看电影", "Weekend hike plans in the hills"):
        await client.call_tool("remember", {"content": content})
    turn = await client.call_tool(
        "update_session",
        {
            "session_id": "c1",
            "topic": "西湖",
            "emotion": {"primary": "curious", "confidence": 0.7, "indicators": ["?"]},
        },
    )
    assert turn.structured_content is not None and turn.structured_content["strategy"]["tone"] == "engaging"
    plain = await client.call_tool("recall", {"query": "周末"})
    topical = await client.call_tool("recall", {"query": "周末", "session_id": "c1"})
    assert plain.structured_content is not None and topical.structured_content is not None
    top = topical.structured_content["hits"][0]
    assert top["content"] == "周末去西湖边跑步" and "西湖" in topical.structured_content["keywords"]
    # The topic boosts the one score a hit carries (its parts are the dashboard's to show).
    unboosted = next(h for h in plain.structured_content["hits"] if h["id"] == top["id"])
    assert top["score"] > unboosted["score"]

    resource = await client.read_resource("memory://sessions/c1")
    text = resource.contents[0]
    assert hasattr(text, "text") and '"turn_count": 1' in text.text and '"last_emotion": "curious"' in text.text
    with pytest.raises(MCPError, match="no session"):
        await client.read_resource("memory://sessions/unknown")
    refused = await client.call_tool("update_session", {"session_id": "c1", "emotion": {"primary": "sad"}})
    assert refused.is_error and refused.content[0].text == "update_session: `emotion.confidence` is required"  # type: ignore[union-attr]


async def test_control_characters_never_reach_the_database(service: MemoryService) -> None:
    """A NUL (which PostgreSQL's text cannot hold) or another control character in a topic, a
    session id or a profile edit is taken out, the same on both backends."""
    sessions = Sessions(service)
    result = await sessions.update("会话\x00-1", topic="咖啡\x00豆 beans\x07")
    assert result.session.session_id == "会话-1" and result.session.current_topic == "咖啡豆 beans"
    edited = await profiles.edit_profile(service.store, "domains", "add", "后端\x00开发 back\x1bend")
    assert "后端开发 backend" in [d.text for d in edited.domains]


async def test_anger_in_either_language_gets_the_frustrated_strategy_through_the_tools(client: Client) -> None:
    for word, session in (("angry", "en"), ("生气", "zh")):
        turn = await client.call_tool(
            "update_session", {"session_id": session, "emotion": {"primary": word, "confidence": 0.9}}
        )
        assert turn.structured_content is not None, turn.content
        assert turn.structured_content["strategy"] == DEFAULT_TABLE["frustrated"].model_dump()
        assert turn.structured_content["emotion"] == "frustrated"
        view = await client.read_resource(f"memory://sessions/{session}")
        assert '"last_emotion": "frustrated"' in view.contents[0].text  # type: ignore[union-attr]
