"""What a correction replaces (text/corrections.py): the old and new values it names, a value found
only as a whole, and when a newer memory supersedes an older one. Chinese, English and mixed."""

from __future__ import annotations

import pytest

from mcp_memory_server.text.corrections import (
    Compared,
    Successor,
    corrected_pair,
    corrected_value,
    find_whole,
    keyed_slot,
    replace_value,
    restates,
)


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("不是北京，是柏林", ("北京", "柏林")),
        ("我不是住在北京，而是住在柏林", ("北京", "柏林")),
        ("住在柏林，不是北京", ("北京", "柏林")),
        ("截止日期不是3月1日，而是3月15日", ("3月1日", "3月15日")),
        ("I meant Berlin, not Beijing", ("Beijing", "Berlin")),
        ("not Beijing but Berlin", ("Beijing", "Berlin")),
        ("The deadline is March 15, not March 1", ("March 1", "March 15")),
        ("Sorry, not 阿里 but 腾讯", ("阿里", "腾讯")),
        ("更正：我住在柏林", None),
        ("Actually I live in Munich", None),
    ],
)
def test_the_values_a_correction_names(text: str, pair: tuple[str, str] | None) -> None:
    assert corrected_pair(text) == pair
    assert corrected_value(text) == (pair[0] if pair else None)


def test_a_value_is_found_only_whole() -> None:
    assert find_whole("The deadline is March 15", "March 1") == -1
    assert find_whole("The deadline is March 1.", "march 1") == 16
    assert find_whole("截止日期是3月1日", "3月1日") == 5
    assert find_whole("截止日期是3月12日", "3月1日") == -1
    assert replace_value("我住在北京", "北京", "柏林") == "我住在柏林"
    assert replace_value("I live in Beijing", "beijing", "Berlin") == "I live in Berlin"
    assert replace_value("I live in Beijing", "Berlin", "Munich") is None


def test_a_correction_supersedes_what_it_names_or_restates() -> None:
    assert restates("截止日期不是3月1日，而是3月15日", "项目Alpha的截止日期是3月1日")
    assert not restates("截止日期不是3月1日，而是3月15日", "项目Beta的截止日期是3月12日")
    assert restates("更正：项目Alpha的截止日期是3月15日", "项目Alpha的截止日期是3月1日")
    assert restates("Correction: the deadline is March 15", "The Alpha project deadline is March 1")
    assert not restates("更正：项目Alpha的负责人是李雷", "项目Alpha的截止日期是3月1日")
    assert not restates("Correction: the meeting is on Friday", "The meeting room is on floor 3")


def test_a_keyed_fact_supersedes_the_same_fact_unkeyed() -> None:
    city = Successor.of("I moved to Berlin", "user.city", "identity")
    assert city is not None
    assert city.supersedes(Compared("我住在北京", None)) and city.supersedes(
        Compared("The user lives in Beijing", None)
    )
    assert not city.supersedes(Compared("我住在北京", "user.home"))  # a keyed memory is its own slot's
    assert not city.supersedes(Compared("I work at SAP", None))
    assert Successor.of("I live in Berlin", None, "identity") is None  # neither keyed nor a correction
    assert Successor.of("I live in Berlin", "project.city", "identity") is None


def test_a_negated_statement_states_no_value_unless_it_corrects() -> None:
    assert keyed_slot("我不住在北京了") is None
    assert keyed_slot("我不是住在北京，而是住在柏林", correction=True) is not None
    assert keyed_slot("I don't live in Berlin anymore") is None
