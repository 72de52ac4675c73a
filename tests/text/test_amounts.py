"""Amounts of one's own money are personal data (text/numbers.py); prices, budgets and a company's
figures are not."""

from __future__ import annotations

import pytest

from mcp_memory_server.text.numbers import AMOUNT, personal_numbers


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("我月薪三万五", "三万五"),
        ("我的存款有50万", "50万"),
        ("我的月收入大概2万元", "2万元"),
        ("税后到手18000", "18000"),
        ("my salary is $120k", "$120k"),
        ("my savings are about 40,000 euros", "40,000 euros"),
        ("My mortgage is $2,300 a month", "$2,300"),
    ],
)
def test_an_amount_of_one_s_own_money_is_found(text: str, amount: str) -> None:
    assert [text[s:e] for kind, s, e in personal_numbers(text) if kind == AMOUNT] == [amount]


@pytest.mark.parametrize(
    "text",
    ["项目收入预计100万", "这台电脑3999元", "The company revenue is $5M", "工资什么时候发", "年终奖3个月", "pay talks"],
)
def test_other_figures_are_not(text: str) -> None:
    assert [k for k, _, _ in personal_numbers(text) if k == AMOUNT] == []
