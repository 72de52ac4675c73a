"""Benchmark corpora read in place from ../shared/bench (never copied into the repository)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


def locomo_turns() -> list[str]:
    """Every LoCoMo dialog turn as '[date] Speaker: text' (the memories of `locomo()`)."""
    return [text for corpus in locomo() for _, text, _ in corpus.memories]


_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


def _evidence(raw: list[str]) -> list[str]:
    """Normalise LoCoMo's evidence ids: 'D:11:26' -> 'D11:26', 'D30:05' -> 'D30:5', split on ';'
    and spaces, drop what is not an id."""
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;\s]+", str(item)):
            match = _EVIDENCE.fullmatch(part.strip())
            if match:
                out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return out


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: frozenset[str]
    group: str


@dataclass(frozen=True)
class Corpus:
    """One store's memories (id, text, category) and the queries asked of it."""

    name: str
    memories: list[tuple[str, str, str]]
    queries: list[Query]


LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def locomo() -> list[Corpus]:
    """One corpus per LoCoMo conversation: every turn a memory; questions of categories 1-4 whose
    evidence names turns of that conversation."""
    corpora: list[Corpus] = []
    for sample in json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8")):
        conv = sample["conversation"]
        memories: list[tuple[str, str, str]] = []
        n = 1
        while f"session_{n}" in conv:
            date = conv.get(f"session_{n}_date_time", "")
            for turn in conv[f"session_{n}"]:
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" (image: {turn['blip_caption']})"
                memories.append((turn["dia_id"], text, "fact"))
            n += 1
        ids = {m[0] for m in memories}
        queries = []
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") not in LOCOMO_CATEGORIES:
                continue
            relevant = frozenset(e for e in _evidence(qa.get("evidence", [])) if e in ids)
            if relevant:
                queries.append(
                    Query(
                        f"{sample['sample_id']}-q{i}", str(qa["question"]), relevant, LOCOMO_CATEGORIES[qa["category"]]
                    )
                )
        corpora.append(Corpus(sample["sample_id"], memories, queries))
    return corpora


def chinese() -> list[Corpus]:
    """One corpus per user of benchmarks/data/zh_memories.json, each with the MemoryBank turns
    added as distractors."""
    data = json.loads((Path(__file__).parent / "data" / "zh_memories.json").read_text(encoding="utf-8"))
    distractors = [(f"mb{i}", f"{q} {r}", "context") for i, (q, r) in enumerate(memorybank_turns())]
    corpora = []
    for user in data["users"]:
        memories = [(m["id"], m["content"], m.get("category", "fact")) for m in user["memories"]]
        queries = [Query(q["id"], q["query"], frozenset(q["relevant"]), q.get("kind", "")) for q in user["queries"]]
        corpora.append(Corpus(user["user"], memories + distractors, queries))
    return corpora


def locomo_questions() -> list[str]:
    return [
        str(qa["question"])
        for sample in json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8"))
        for qa in sample["qa"]
        if qa.get("category") != 5
    ]


def memorybank_turns() -> list[tuple[str, str]]:
    """Every MemoryBank-SiliconFriend (Chinese) turn as (user query, assistant response)."""
    data = json.loads((BENCH_DIR / "memorybank_cn.json").read_text(encoding="utf-8"))
    return [
        (turn["query"], turn["response"]) for user in data.values() for day in user["history"].values() for turn in day
    ]
