"""The retrieval benchmark's held-out machinery: fixed halves, the hand-written sets' labels, the
bootstrap. Real files from benchmarks/data and ../shared/bench; no retriever is run here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from benchmarks import data, splits
from benchmarks.retrieval import Record, bootstrap

BENCH = data.BENCH_DIR / "locomo10.json"


def test_halves_are_fixed_disjoint_and_cover_every_group() -> None:
    groups = [f"g{i:02d}" for i in range(11)]
    dev, test = splits.halves(groups)
    assert set(dev).isdisjoint(test) and sorted(dev + test) == groups
    assert len(dev) == 5 and len(test) == 6
    assert splits.halves(reversed(groups)) == (dev, test)  # the input order does not matter
    assert splits.split(groups, "all") == dev + test
    with pytest.raises(ValueError, match="distinct"):
        splits.halves(["a", "a", "b"])
    with pytest.raises(ValueError, match="unknown split"):
        splits.split(groups, "train")  # type: ignore[arg-type]


@pytest.mark.skipif(not BENCH.exists(), reason="../shared/bench is not next to the project")
def test_locomo_halves_follow_the_shared_rule() -> None:
    import random

    ids = sorted(splits.locomo_ids())
    random.Random(19).shuffle(ids)
    assert splits.locomo_split("dev") == ids[:5] and splits.locomo_split("test") == ids[5:]
    dev = {c.name for c in data.locomo_split("dev")}
    test = {c.name for c in data.locomo_split("test")}
    assert dev == set(ids[:5]) and test == set(ids[5:])


def test_crosslang_set_is_labelled_both_ways() -> None:
    loaded = json.loads((Path(data.__file__).parent / "data" / "crosslang.json").read_text(encoding="utf-8"))
    memories = {m["id"]: m for m in loaded["memories"]}
    assert len(memories) == len(loaded["memories"])
    by_direction = {"en": 0, "zh": 0}
    for query in loaded["queries"]:
        (target,) = query["relevant"]
        assert memories[target]["lang"] != query["lang"]  # always the other language
        assert query["query"] not in memories[target]["content"]
        by_direction[query["lang"]] += 1
    assert by_direction["en"] >= 60 and by_direction["zh"] >= 60


@pytest.mark.skipif(not BENCH.exists(), reason="../shared/bench is not next to the project")
def test_heldout_sets_split_queries_without_overlap() -> None:
    dev = [q.id for c in data.crosslang("dev") for q in c.queries]
    test = [q.id for c in data.crosslang("test") for q in c.queries]
    assert set(dev).isdisjoint(test) and len(dev) + len(test) == 124
    off_dev = {i for i, _, _ in data.offtopic("dev")}
    off_test = {i for i, _, _ in data.offtopic("test")}
    assert off_dev.isdisjoint(off_test) and len(off_dev) + len(off_test) >= 40
    for corpus in data.noanswer("test"):  # the adversarial questions' evidence is not stored
        stored = {m[0] for m in corpus.memories}
        for query in corpus.queries:
            assert query.relevant <= stored
            assert bool(query.relevant) == (query.group == "answerable")
    long, last = data.long_queries("dev", "long"), data.long_queries("dev", "last")
    for a, b in zip(long, last, strict=True):
        assert a.memories == b.memories
        for q_long, q_last in zip(a.queries, b.queries, strict=True):
            assert q_long.text.endswith(q_last.text) and len(q_long.text) > len(q_last.text)
            assert q_long.relevant == q_last.relevant


def test_bootstrap_interval_and_paired_difference() -> None:
    ours = [Record("s", f"q{i}", "g", {"R@5": 1.0 if i % 4 else 0.0}) for i in range(200)]
    theirs = [Record("s", f"q{i}", "g", {"R@5": 1.0 if i % 2 else 0.0}) for i in range(200)]
    value, low, high = bootstrap([ours], "R@5")
    assert value == pytest.approx(0.75) and low < 0.75 < high and high - low < 0.15
    diff, low, high = bootstrap([ours, theirs], "R@5", weights=(1.0, -1.0))
    assert diff == pytest.approx(0.25) and 0 < low < diff < high
    assert bootstrap([ours], "R@5") == (value, *bootstrap([ours], "R@5")[1:])  # fixed seed
    by_store = [Record(f"s{i % 2}", f"q{i}", "g", {"R@5": float(i % 2)}) for i in range(20)]
    assert bootstrap([by_store], "R@5", by_store=True)[0] == pytest.approx(0.5)


def test_the_keyword_form_keeps_at_most_four_content_words() -> None:
    assert data.keyword_form("When did Caroline go to the LGBTQ support group?") == "Caroline LGBTQ support group"
    assert data.keyword_form("What is Melanie's favourite book?") == "favourite book Melanie"
    assert data.keyword_form("What did they do?") == ""  # dropped by keyword_queries


@pytest.mark.skipif(not BENCH.exists(), reason="../shared/bench is not next to the project")
def test_conversation_queries_end_before_their_evidence_turn() -> None:
    (corpus,) = data.locomo_split("dev")[:1]
    texts = {mid: text.split("] ", 1)[-1] for mid, text, _ in corpus.memories}
    (asked,) = data.conversation_queries([corpus])
    assert len(asked.queries) > 50 and len({q.id for q in asked.queries}) == len(asked.queries)
    order = [mid for mid, _, _ in corpus.memories]
    for q in asked.queries:
        (evidence,) = q.relevant
        at = order.index(evidence)
        session = evidence.split(":")[0]
        # The 4-8 turns right before the evidence, in order, the evidence itself not among them.
        before = [n for n in range(4, 9) if q.text == "\n".join(texts[m] for m in order[at - n : at])]
        assert len(before) == 1 and all(m.startswith(session + ":") for m in order[at - before[0] : at])
        assert evidence not in q.exclude and set(order[at - before[0] : at]) <= q.exclude
        assert all(m.startswith(session + ":") for m in q.exclude) and len(q.exclude) <= 40


def test_the_dialogue_set_labels_name_their_users_memories() -> None:
    memories = {
        u["user"]: {m["id"]: m["content"] for m in u["memories"]}
        for u in json.loads((data.DATA_DIR / "zh_memories.json").read_text(encoding="utf-8"))["users"]
    }
    dialogues = json.loads((data.DATA_DIR / "zh_dialogues.json").read_text(encoding="utf-8"))
    items = [*dialogues["dialogues"], *dialogues["keywords"]]
    assert len({i["id"] for i in items}) == len(items) == 310
    for item in items:
        assert item["relevant"] and set(item["relevant"]) <= set(memories[item["user"]]), item["id"]
    for d in dialogues["dialogues"]:
        roles = [t["role"] for t in d["turns"]]
        assert roles[0] == roles[-1] == "user" and all(a != b for a, b in itertools.pairwise(roles))
        text = "".join(t["text"] for t in d["turns"])
        assert not any(m in text for m in memories[d["user"]].values()), d["id"]  # no memory copied
    shaped = data.zh_dialogues("test")
    assert {c.name for c in shaped} == set(splits.chinese_split("test"))
    assert {q.group for c in shaped for q in c.queries} == {"conversation", "conversation en->zh", "keywords"}
