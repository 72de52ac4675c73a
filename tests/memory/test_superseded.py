"""Recall's ranking of superseded memories (retrieval/supersession.py: below_their_successors): each
superseded memory below its successors, a correction of a correction included, only what can be
shown compared."""

from __future__ import annotations

from mcp_memory_server.retrieval.fusion import Scored
from mcp_memory_server.retrieval.supersession import below_their_successors
from mcp_memory_server.store.rows import Candidate, MemoryRow


def scored(seq: int, content: str, score: float, *, category: str = "todo", key: str | None = None) -> Scored:
    moment = f"2026-03-0{seq}T00:00:00+00:00"  # a higher seq is written later
    row = MemoryRow(
        seq, seq, content, key, category, "core", 0.5, 0.8, "user", "[]", None, None, moment, moment, moment, 0
    )
    return Scored(Candidate(row, 1.0), score, 1.0, (1.0, None, 1.0, 1.0, 0.0, 0.8, 1.0))


def order(ranked: list[Scored]) -> list[int]:
    return [s.candidate.row.seq for s in ranked]


def everything(_: Scored) -> bool:
    return True


def test_a_correction_of_a_correction_ranks_first() -> None:
    stale = scored(1, "项目Alpha的截止日期是3月1日", 1.2)
    first = scored(2, "截止日期不是3月1日，而是3月15日", 1.0, category="correction")
    second = scored(3, "不是3月15日，而是3月20日", 0.9, category="correction")
    unrelated = scored(4, "项目Beta的负责人是李雷", 0.5)
    for limit in (1, 2, 4):
        ranked = below_their_successors([stale, first, second, unrelated], limit, everything)
        assert order(ranked)[:3] == [3, 2, 1]
        scores = [s.score for s in ranked]
        assert scores == sorted(scores, reverse=True) and scores[0] == 0.9


def test_a_keyed_fact_ranks_above_the_same_fact_unkeyed() -> None:
    old = scored(1, "I live in Beijing", 1.3, category="identity")
    new = scored(2, "I moved to Berlin", 0.8, category="identity", key="user.city")
    work = scored(3, "I work at SAP", 1.0, category="identity")
    assert order(below_their_successors([old, work, new], 5, everything)) == [3, 2, 1]


def test_without_a_successor_nothing_changes() -> None:
    items = [
        scored(1, "我喜欢喝咖啡", 1.0, category="preference"),
        scored(2, "I prefer tea", 0.7, category="preference"),
    ]
    assert below_their_successors(items, 5, everything) == items


def test_only_what_can_be_shown_is_compared() -> None:
    """A superseded memory the floor leaves out is not looked at: its score stays as scored."""
    shown_only_new = below_their_successors(
        [scored(1, "截止日期是3月1日", 1.2), scored(2, "截止日期不是3月1日，而是3月15日", 1.0, category="correction")],
        1,
        lambda s: s.candidate.row.seq == 2,
    )
    assert [(s.candidate.row.seq, s.score) for s in shown_only_new] == [(1, 1.2), (2, 1.0)]
