"""Development and test halves of every retrieval data set, fixed once so that tuning never sees
the test half.

The rule is the same for every set: sort the set's natural groups (a LoCoMo conversation, a user
of the Chinese set, a memory of the cross-language set, an off-topic question, a REALTALK chat),
shuffle them with `random.Random(SEED)`,
and take the first half as development, the rest as test. Splitting by group rather than by query
keeps a conversation's or a user's queries, which share words and people, on one side only.

    from benchmarks.splits import locomo_split, split
    dev_ids = locomo_split("dev")            # 5 LoCoMo sample ids
    test_users = split(users, "test")        # any other set's groups

    python -m benchmarks.splits              # prints every set's halves
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .data import BENCH_DIR

SEED = 19
Split = Literal["dev", "test", "all"]
SPLITS: tuple[Split, ...] = ("dev", "test", "all")

DATA_DIR = Path(__file__).parent / "data"


def halves(groups: Iterable[str], seed: int = SEED) -> tuple[list[str], list[str]]:
    """(development, test): the sorted groups shuffled with `seed`; the first half (rounded down)
    is development. Raises ValueError for a repeated group, which would land on both sides."""
    ordered = sorted(groups)
    if len(set(ordered)) != len(ordered):
        raise ValueError("split groups must be distinct")
    random.Random(seed).shuffle(ordered)
    middle = len(ordered) // 2
    return ordered[:middle], ordered[middle:]


def split(groups: Iterable[str], which: Split, seed: int = SEED) -> list[str]:
    """The groups of one half ("dev" or "test"), or all of them ("all"), in shuffled order."""
    if which not in SPLITS:
        raise ValueError(f"unknown split {which!r}: expected one of {', '.join(SPLITS)}")
    dev, test = halves(groups, seed)
    return {"dev": dev, "test": test, "all": dev + test}[which]


def locomo_ids(path: Path | None = None) -> list[str]:
    """The LoCoMo sample ids (conversations) of locomo10.json."""
    source = path or BENCH_DIR / "locomo10.json"
    return [str(sample["sample_id"]) for sample in json.loads(source.read_text(encoding="utf-8"))]


def locomo_split(which: Split, path: Path | None = None) -> list[str]:
    """LoCoMo conversations of one half: of the 10, the first 5 after the shuffle are development."""
    return split(locomo_ids(path), which)


def chinese_users() -> list[str]:
    """The users of benchmarks/data/zh_memories.json (each user's memories and queries one group)."""
    data = json.loads((DATA_DIR / "zh_memories.json").read_text(encoding="utf-8"))
    return [str(user["user"]) for user in data["users"]]


def chinese_split(which: Split) -> list[str]:
    """Users of the own Chinese set in one half (5 of 10)."""
    return split(chinese_users(), which)


def crosslang_memories() -> list[str]:
    """The memory ids of benchmarks/data/crosslang.json (a query goes with its memory)."""
    data = json.loads((DATA_DIR / "crosslang.json").read_text(encoding="utf-8"))
    return [str(memory["id"]) for memory in data["memories"]]


def offtopic_numbers() -> list[str]:
    """The question numbers of benchmarks/data/offtopic.json ("01".."24"; a number's English and
    Chinese versions stay together)."""
    data = json.loads((DATA_DIR / "offtopic.json").read_text(encoding="utf-8"))
    return sorted({str(query["id"])[-2:] for query in data["queries"]})


def main() -> None:
    for name, groups in (
        ("LoCoMo conversations", locomo_ids()),
        ("Chinese set users", chinese_users()),
        ("cross-language memories", crosslang_memories()),
        ("off-topic question numbers", offtopic_numbers()),
    ):
        dev, test = halves(groups)
        print(f"{name}: dev {', '.join(sorted(dev))}; test {', '.join(sorted(test))}")
    print("REALTALK chats: the Chat_* file names, by the same rule (benchmarks.data.realtalk)")


if __name__ == "__main__":
    main()
