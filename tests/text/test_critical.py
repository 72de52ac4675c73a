"""The facts cleanup never archives on its own (text/critical.py), in Chinese and English."""

from __future__ import annotations

import pytest

from mcp_memory_server.text.critical import critical


@pytest.mark.parametrize(
    "text",
    [
        "我女儿对花生严重过敏",
        "用户有高血压，每天早上吃药",
        "我妈妈的生日是十月三日",
        "我叫李明",
        "My son is allergic to penicillin",
        "The user's blood type is O negative",
        "My wife is diabetic and carries insulin",
        "I was born in Chengdu",
    ],
)
def test_health_family_and_identity_facts_are_critical(text: str) -> None:
    assert critical(text)


@pytest.mark.parametrize(
    "text",
    [
        "用户喜欢喝咖啡",
        "用户的旧密码提示问题是宠物名字",
        "周末去了一趟西湖",
        "The reason is simple",  # "son" inside a word
        "I like the person who runs the café",
        "Deploy on Thursdays",
    ],
)
def test_everyday_notes_are_not(text: str) -> None:
    assert not critical(text)
