"""Benchmark corpora read in place from ../shared/bench (never copied into the repository)."""

from __future__ import annotations

import json
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


def locomo_turns() -> list[str]:
    """Every LoCoMo dialog turn as '[date] Speaker: text'."""
    turns: list[str] = []
    for sample in json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8")):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            date = conv.get(f"session_{n}_date_time", "")
            for turn in conv[f"session_{n}"]:
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" (image: {turn['blip_caption']})"
                turns.append(text)
            n += 1
    return turns


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
