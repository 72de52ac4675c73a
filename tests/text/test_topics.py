"""The topics a hand-written mark names, and the texts it covers (text/topics.py)."""

from __future__ import annotations

import pytest

from mcp_memory_server.text.topics import MarkedTopics


@pytest.mark.parametrize(
    ("mark", "covered", "not_covered"),
    [
        (
            "家庭私事（孩子、配偶）不需要记忆",
            ["我决定让女儿转学", "我老公下周出差", "my wife is a nurse"],
            ["我决定用Go重写后端"],
        ),
        ("Family matters (kids, spouse) - don't remember", ["My son starts school", "我儿子开始上学了"], ["I use Go"]),
        ("work gossip, don't keep", ["I heard some work gossip today"], ["I work at SAP", "gossip about a game"]),
        ("游戏相关的不用记", ["我最近在玩一个新游戏"], ["我在学日语"]),
        ("天气", ["今天下雨了", "the weather is nice"], ["我喜欢喝茶"]),
    ],
)
def test_a_mark_covers_its_topic(mark: str, covered: list[str], not_covered: list[str]) -> None:
    topics = MarkedTopics([mark])
    assert [t for t in covered if topics.covering(t) != mark] == []
    assert [t for t in not_covered if topics.covering(t) is not None] == []


@pytest.mark.parametrize("mark", ["不需要记忆", "don't remember", "、、、", ""])
def test_a_mark_without_a_topic_covers_nothing(mark: str) -> None:
    topics = MarkedTopics([mark])
    assert not topics and topics.covering("我女儿叫小米") is None
