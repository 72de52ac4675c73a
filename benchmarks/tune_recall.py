"""Development-half measurements for tuning recall's scoring (never the test halves unless asked).

    python -m benchmarks.tune_recall [--half dev|test] [--only plain,long,floor,order] [--set NAME=VALUE ...]

Splits, fixed: LoCoMo by conversation (sample ids sorted, `random.Random(19).shuffle`, the first 5
are development); the own Chinese set by memory group (user ids sorted, the same rule).

What it measures, in process through `memory.recall` (access tracking off unless measuring it):
- plain: R@5, R@10, MRR@10 of the questions (LoCoMo categories 1-4; the Chinese queries).
- long: the same questions after three context sentences from the same conversation (LoCoMo:
  turns that are neither evidence nor next to it; Chinese: MemoryBank user messages), against the
  question alone (`plain`): a long query must do at least as well as its last sentence.
- floor: share of queries answered with no hits. Answerable questions (should stay low, with R@5
  lost), and queries whose answer is not stored: questions of another conversation (another
  memory group), LoCoMo's adversarial category 5, and off-topic queries written here.
- order: the distractor protocol for access counts: two copies of each store, the questions run
  with access tracking in two orders (as listed, reversed), then the share of questions whose top
  5 differ between the copies.

`--set` changes a setting by name (`--set floor=0.2 --set weights=keyword=0.5,semantic=0.3`).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.recall import recall, relevance
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .data import BENCH_DIR, Corpus, Query, chinese, locomo, memorybank_turns

SEED = 19

OFF_TOPIC_EN = [
    "How do I compile the Linux kernel with clang?",
    "What is the capital of Burkina Faso?",
    "Explain the Higgs mechanism in quantum field theory",
    "Which torque setting do I need for the cylinder head bolts?",
    "How many moons does Neptune have?",
    "Write a haiku about photosynthesis in kelp forests",
    "What is the derivative of arctangent?",
    "Convert 30 nautical miles to kilometres",
    "Who won the 1954 FIFA World Cup final?",
    "How does Kubernetes schedule pods onto nodes?",
]
OFF_TOPIC_ZH = [
    "量子色动力学的格点计算怎么做",
    "布基纳法索的首都是哪里",
    "发动机缸盖螺栓的扭矩是多少",
    "海王星有几颗卫星",
    "反正切函数的导数是什么",
    "三十海里等于多少公里",
    "一九五四年世界杯决赛谁赢了",
    "怎样用编译器构建操作系统内核",
    "光合作用在海藻森林里如何进行",
    "集装箱港口的吊车怎么调度",
]


def split(ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(development, test): ids sorted, shuffled with the fixed seed, the first 5 development."""
    ordered = sorted(ids)
    random.Random(SEED).shuffle(ordered)
    return ordered[:5], ordered[5:]


def _half(corpora: list[Corpus], half: str) -> list[Corpus]:
    dev, test = split([c.name for c in corpora])
    wanted = set(dev if half == "dev" else test)
    return [c for c in corpora if c.name in wanted]


def _adversarial() -> dict[str, list[str]]:
    """LoCoMo's category-5 questions per conversation: their answer is not in the conversation."""
    data = json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8"))
    return {s["sample_id"]: [str(q["question"]) for q in s["qa"] if q.get("category") == 5] for s in data}


def _long_locomo(corpus: Corpus, rng: random.Random) -> list[Query]:
    """Three turns of the same conversation (not evidence, not next to it) before each question."""
    position = {mid: i for i, (mid, _, _) in enumerate(corpus.memories)}
    out = []
    for q in corpus.queries:
        near = {position[e] + d for e in q.relevant for d in (-1, 0, 1)}
        pool = [i for i in range(len(corpus.memories)) if i not in near]
        picked = sorted(rng.sample(pool, 3))
        # The turn's text without its date: "Speaker: words", one message a line.
        context = "\n".join(corpus.memories[i][1].split("] ", 1)[-1] for i in picked)
        out.append(Query(q.id, f"{context}\n{q.text}"[-2000:], q.relevant, q.group))
    return out


def _cued_locomo(corpus: Corpus) -> list[Query]:
    """The three turns before a question's first evidence turn (the conversation leading to it,
    not the answer) before the question: context that cues the memory."""
    position = {mid: i for i, (mid, _, _) in enumerate(corpus.memories)}
    out = []
    for q in corpus.queries:
        first = min(position[e] for e in q.relevant)
        picked = [i for i in range(first - 3, first) if i >= 0 and corpus.memories[i][0] not in q.relevant]
        context = "\n".join(corpus.memories[i][1].split("] ", 1)[-1] for i in picked)
        out.append(Query(q.id, f"{context}\n{q.text}"[-2000:], q.relevant, q.group))
    return out


def _long_chinese(corpus: Corpus, rng: random.Random, chat: list[str]) -> list[Query]:
    out = []
    for q in corpus.queries:
        context = "\n".join(rng.sample(chat, 3))
        out.append(Query(q.id, f"{context}\n{q.text}"[-2000:], q.relevant, q.group))
    return out


@dataclass
class Loaded:
    corpus: Corpus
    path: Path
    store: Store
    ids: dict[str, str]  # our id -> corpus id


async def _load(corpus: Corpus, base: Config, config: Config, segmenter: Segmenter, where: Path) -> Loaded:
    """The corpus bulk-imported under the default settings, then opened with the ones measured."""
    path = where / f"{corpus.name}.db"
    async with Store(base.with_changes(db_path=path), segmenter) as store:
        ours = await MemoryService(store).import_memories(
            [{"content": text[:2000], "category": category} for _, text, category in corpus.memories]
        )
    store = Store(config.with_changes(db_path=path), segmenter)
    await store.open()
    return Loaded(corpus, path, store, {o: m[0] for o, m in zip(ours, corpus.memories, strict=True)})


async def _ranked(loaded: Loaded, config: Config, text: str, *, track: bool = False) -> list[str]:
    result = await recall(loaded.store, config, text, limit=10, track_access=track)
    return [loaded.ids[h.id] for h in result.hits]


def _metrics(runs: list[tuple[list[str], frozenset[str]]]) -> dict[str, float]:
    r5 = [len(set(r[:5]) & rel) / len(rel) for r, rel in runs]
    r10 = [len(set(r[:10]) & rel) / len(rel) for r, rel in runs]
    mrr = [next((1 / (i + 1) for i, d in enumerate(r[:10]) if d in rel), 0.0) for r, rel in runs]
    hit5 = [1.0 if set(r[:5]) & rel else 0.0 for r, rel in runs]
    empty = [1.0 if not r else 0.0 for r, _ in runs]
    n = len(runs)
    return {
        "n": n,
        "R@5": sum(r5) / n,
        "R@10": sum(r10) / n,
        "MRR": sum(mrr) / n,
        "hit@5": sum(hit5) / n,
        "empty": sum(empty) / n,
    }


def _fmt(name: str, m: dict[str, float]) -> str:
    return (
        f"  {name:<28} n={m['n']:<5.0f} R@5 {m['R@5']:.3f}  R@10 {m['R@10']:.3f}  MRR {m['MRR']:.3f}  "
        f"hit@5 {m['hit@5']:.3f}  empty {m['empty']:.3f}"
    )


async def _plain(sets: dict[str, list[Loaded]], config: Config, long: dict[str, dict[str, list[Query]]]) -> None:
    for name, stores in sets.items():
        runs = []
        long_runs = []
        for loaded in stores:
            for q in loaded.corpus.queries:
                runs.append((await _ranked(loaded, config, q.text), q.relevant))
            for q in long[name].get(loaded.corpus.name, []):
                long_runs.append((await _ranked(loaded, config, q.text), q.relevant))
        print(_fmt(f"{name} question", _metrics(runs)))
        if long_runs:
            print(_fmt(f"{name} context+question", _metrics(long_runs)))
        cued_runs = []
        for loaded in stores:
            for q in long.get(f"{name}-cued", {}).get(loaded.corpus.name, []):
                cued_runs.append((await _ranked(loaded, config, q.text), q.relevant))
        if cued_runs:
            print(_fmt(f"{name} cue+question", _metrics(cued_runs)))


async def _parts(loaded: Loaded, config: Config, text: str) -> list[tuple[str, float]]:
    """Ranked (corpus id, relevance) with the floor off: each floor is then a filter on these."""
    result = await recall(loaded.store, config.with_changes(floor=0.0), text, limit=10, track_access=False)
    return [(loaded.ids[h.id], relevance(h.breakdown.keyword, h.breakdown.semantic, config)) for h in result.hits]


async def _floor(
    sets: dict[str, list[Loaded]], config: Config, adversarial: dict[str, list[str]], floors: Sequence[float]
) -> None:
    for name, stores in sets.items():
        off = OFF_TOPIC_EN if name == "locomo" else OFF_TOPIC_ZH
        runs: dict[str, list[tuple[list[tuple[str, float]], frozenset[str]]]] = {
            "answerable": [],
            "other store": [],
            "adversarial": [],
            "off-topic": [],
        }
        for i, loaded in enumerate(stores):
            other = stores[(i + 1) % len(stores)].corpus
            runs["answerable"] += [(await _parts(loaded, config, q.text), q.relevant) for q in loaded.corpus.queries]
            runs["other store"] += [(await _parts(loaded, config, q.text), frozenset()) for q in other.queries]
            if name == "locomo":
                texts = adversarial.get(loaded.corpus.name, [])
                runs["adversarial"] += [(await _parts(loaded, config, t), frozenset()) for t in texts]
            runs["off-topic"] += [(await _parts(loaded, config, t), frozenset()) for t in off]
        for floor in floors:
            cells = []
            for group, items in runs.items():
                if not items:
                    continue
                kept = [([d for d, rel in ranked if rel >= floor], relevant) for ranked, relevant in items]
                empty = sum(1 for r, _ in kept if not r) / len(kept)
                cell = f"{group} empty {empty:.3f}"
                if group == "answerable":
                    cell += f" R@5 {_metrics(kept)['R@5']:.3f}"
                cells.append(cell)
            print(f"  {name} floor {floor:.2f}: " + "  ".join(cells))


async def _order(sets: dict[str, list[Loaded]], config: Config, segmenter: Segmenter, where: Path) -> None:
    for name, stores in sets.items():
        differ = total = 0
        for loaded in stores:
            copies = []
            for tag in ("a", "b"):
                path = where / f"{loaded.corpus.name}-{tag}.db"
                await loaded.store.flush()
                shutil.copyfile(loaded.path, path)
                store = Store(config.with_changes(db_path=path), segmenter)
                await store.open()
                copies.append(Loaded(loaded.corpus, path, store, loaded.ids))
            texts = [q.text for q in loaded.corpus.queries]
            for copy, order in zip(copies, (texts, texts[::-1]), strict=True):
                for text in order:
                    await _ranked(copy, config, text, track=True)
                await copy.store.flush()
            for text in texts:
                a = await _ranked(copies[0], config, text)
                b = await _ranked(copies[1], config, text)
                differ += a[:5] != b[:5]
                total += 1
            for copy in copies:
                await copy.store.close()
        print(f"  {name} order: top 5 differs for {differ}/{total} = {differ / max(total, 1):.3f} of queries")


def _parse_sets(items: Sequence[str]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for item in items:
        name, _, value = item.partition("=")
        if "=" in value:
            changes[name] = {k: float(v) for k, v in (p.split("=") for p in value.split(","))}
        else:
            try:
                changes[name] = json.loads(value)
            except json.JSONDecodeError:
                changes[name] = value
    return changes


async def run(args: argparse.Namespace) -> None:
    if args.half == "test":
        print("TEST HALVES: report only, never tune on these numbers")
    cache = Path(tempfile.gettempdir()) / "mms-bench-cache"
    segmenter = Segmenter(cache)
    await segmenter.wait()
    where = Path(tempfile.mkdtemp(prefix="mms-tune-"))
    base = Config.from_env({}, db_path=where / "x.db", cache_dir=cache)
    config = base.with_changes(**_parse_sets(args.set)) if args.set else base
    only = set(args.only.split(","))
    rng = random.Random(SEED)
    chat = [q for q, _ in memorybank_turns()]
    sets: dict[str, list[Loaded]] = {}
    long: dict[str, dict[str, list[Query]]] = {"locomo": {}, "zh": {}, "locomo-cued": {}}
    corpora: dict[str, list[Corpus]] = {}
    if args.dataset in ("locomo", "all"):
        corpora["locomo"] = _half(locomo(), args.half)
    if args.dataset in ("zh", "all"):
        corpora["zh"] = _half(chinese(), args.half)
    started = time.perf_counter()
    for name, cs in corpora.items():
        sets[name] = [await _load(c, base, config, segmenter, where) for c in cs]
        for c in cs:
            long[name][c.name] = _long_locomo(c, rng) if name == "locomo" else _long_chinese(c, rng, chat)
            if name == "locomo":
                long["locomo-cued"][c.name] = _cued_locomo(c)
    print(f"loaded {sum(len(v) for v in sets.values())} stores in {time.perf_counter() - started:.1f} s; {args.set}")
    try:
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("plain", lambda: _plain(sets, config, long if "long" in only else {k: {} for k in long})),
            ("floor", lambda: _floor(sets, config, _adversarial(), [float(f) for f in args.floors.split(",")])),
            ("order", lambda: _order(sets, config, segmenter, where)),
        ]
        for step, fn in steps:
            if step in only:
                await fn()
    finally:
        for stores in sets.values():
            for loaded in stores:
                await loaded.store.close()
        shutil.rmtree(where, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=["dev", "test"], default="dev")
    parser.add_argument("--dataset", choices=["locomo", "zh", "all"], default="all")
    parser.add_argument("--only", default="plain,long,floor,order")
    parser.add_argument("--floors", default="0,0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4")
    parser.add_argument("--set", action="append", default=[], help="a setting NAME=VALUE (repeatable)")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
