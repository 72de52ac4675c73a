"""The cost of corrections: the fast channel's signals (keyed facts, emphasis and compound
sentences added) on a set of everyday messages, and recall's supersession pass on 100 scored
candidates of which k are corrections.

python -m benchmarks.corrections [--runs 7]

Each figure is the median of `--runs` runs, in CPU time of the thread (a busy machine does not
inflate it). Run with PYTHONPATH pointing at an older checkout's
sources to time its fast channel (the supersession pass is then reported as absent).
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mcp_memory_server.config import Config
from mcp_memory_server.retrieval import fusion, supersession
from mcp_memory_server.sieve.signals import detect_signals
from mcp_memory_server.store.rows import Candidate, MemoryRow

MESSAGES = [
    "我住在杭州，在阿里工作，喜欢爬山。帮我看看周末去哪里玩？",
    "I live in Berlin, work at SAP and love hiking. Any tips for the Alps?",
    "更正一下，截止日期不是3月1日，而是3月15日。",
    "这个很重要：生产数据库每天凌晨3点备份，以后会用到。",
    "Actually I moved to Munich last month, and my wife is Anna.",
    "我决定用Go重写服务，因为它编译快。提醒我周五交周报。",
    "Can you explain how closures work in JavaScript? I'm a data engineer.",
    "今天天气真好，谢谢你的帮助！",
] * 25  # 200 messages


def median_ms(work: Callable[[], object], runs: int, repeat: int) -> float:
    times = []
    for _ in range(runs):
        start = time.thread_time()
        for _ in range(repeat):
            work()
        times.append((time.thread_time() - start) / repeat * 1000)
    return statistics.median(times)


def _row(i: int, category: str, content: str) -> MemoryRow:
    moment = f"2026-01-{1 + i % 28:02d}T00:00:{i % 60:02d}+00:00"
    return MemoryRow(
        i, i, content, None, category, "core", 0.5, 0.8, "user", "[]", None, None, moment, moment, moment, 1
    )


def candidates(k: int, rng: random.Random) -> list[Candidate]:
    """100 memories about one deadline; the first k corrections (half naming the old value)."""
    found = []
    for i in range(100):
        text = f"项目Alpha的截止日期是3月{i % 28 + 1}日，负责人是李雷，需要准备评审材料和预算表"
        if i < k and i % 2:
            text = f"截止日期不是3月{i}日，而是3月{i + 1}日"
        found.append(Candidate(_row(i, "correction" if i < k else "fact", text), rng.random()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    detect_signals(MESSAGES[0])  # the patterns compile on first use
    per = median_ms(lambda: [detect_signals(m) for m in MESSAGES], args.runs, 3)
    print(f"fast channel: {per:.1f} ms for {len(MESSAGES)} messages ({per / len(MESSAGES) * 1000:.0f} µs each)")
    passing = supersession.below_their_successors
    config = Config.from_env({}, db_path=":memory:")
    now = datetime.now(UTC)
    rng = random.Random(7)
    for k in (0, 1, 10, 100):
        scored = fusion.score_candidates(candidates(k, rng), config, now)
        for limit in (5, 50):
            ms = median_ms(lambda s=scored, n=limit: passing(s, n, lambda _: True), args.runs, 20)  # type: ignore[misc]
            print(f"supersession pass, {k:3d} corrections of 100 candidates, limit {limit:2d}: {ms:.2f} ms")


if __name__ == "__main__":
    main()
