"""Benchmark corpora read in place from ../shared/bench (never copied into the repository)."""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
SEED = 19  # the seed of benchmarks/splits.py, also for the long queries' context draw


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


# ---------------------------------------------------------------------------------------------
# Held-out evaluation sets (benchmarks/retrieval.py --dataset ...). Each builder takes the half
# ("dev", "test" or "all") of benchmarks/splits.py; a corpus's `name` is its split group where
# the group is a store (LoCoMo conversation, Chinese-set user, REALTALK chat).

DATA_DIR = Path(__file__).parent / "data"


def _load_json(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
    return loaded


def _mb_distractors() -> list[tuple[str, str, str]]:
    return [(f"mb{i}", f"{q} {r}", "context") for i, (q, r) in enumerate(memorybank_turns())]


def locomo_split(which: str) -> list[Corpus]:
    """LoCoMo (categories 1-4) restricted to the conversations of one half."""
    from .splits import locomo_split as ids

    keep = set(ids(which))  # type: ignore[arg-type]
    return [c for c in locomo() if c.name in keep]


def chinese_split(which: str) -> list[Corpus]:
    """The own Chinese set, each user's store padded with the 566 MemoryBank-CN turns, one half's users."""
    from .splits import chinese_split as users

    keep = set(users(which))  # type: ignore[arg-type]
    return [c for c in chinese() if c.name in keep]


def crosslang(which: str) -> list[Corpus]:
    """benchmarks/data/crosslang.json: one store of all 124 memories and the MemoryBank-CN turns;
    the queries of one half's memories (grouped "en->zh" for English questions about Chinese
    memories, "zh->en" for the reverse)."""
    from .splits import split

    data = _load_json("crosslang.json")
    memories = [(m["id"], m["content"], "fact") for m in data["memories"]]
    keep = set(split([m[0] for m in memories], which))  # type: ignore[arg-type]
    queries = [
        Query(q["id"], q["query"], frozenset(q["relevant"]), "en->zh" if q["lang"] == "en" else "zh->en")
        for q in data["queries"]
        if set(q["relevant"]) <= keep
    ]
    return [Corpus("crosslang", memories + _mb_distractors(), queries)]


def offtopic(which: str) -> list[tuple[str, str, str]]:
    """(id, query, language) of the off-topic queries of one half (both languages of a question
    on the same side)."""
    from .splits import split

    items = _load_json("offtopic.json")["queries"]
    numbers = sorted({q["id"][-2:] for q in items})
    keep = set(split(numbers, which))  # type: ignore[arg-type]
    return [(q["id"], q["query"], q["lang"]) for q in items if q["id"][-2:] in keep]


def noanswer(which: str) -> list[Corpus]:
    """Stores that hold no answer for some of their queries.

    LoCoMo: each conversation of the half without the turns its adversarial (category 5)
    questions name as evidence; asked those questions (group "adversarial"), every off-topic
    query of the half ("off-topic en", "off-topic zh"), and its answerable questions whose evidence
    is still stored (group "answerable", scored by recall). The Chinese set: each user's store
    with the MemoryBank distractors, asked every off-topic query and its own labelled queries."""
    off = offtopic(which)
    off_queries = [Query(f"{i}", text, frozenset(), f"off-topic {lang}") for i, text, lang in off]
    corpora: list[Corpus] = []
    from .splits import locomo_split as ids

    keep = set(ids(which))  # type: ignore[arg-type]
    for sample in json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8")):
        if sample["sample_id"] not in keep:
            continue
        full = next(c for c in locomo() if c.name == sample["sample_id"])
        adversarial = [
            (f"{sample['sample_id']}-q{i}", str(qa["question"]), set(_evidence(qa.get("evidence", []))))
            for i, qa in enumerate(sample["qa"])
            if qa.get("category") == 5
        ]
        removed = set().union(*(e for _, _, e in adversarial)) if adversarial else set()
        memories = [m for m in full.memories if m[0] not in removed]
        answerable = [
            Query(q.id, q.text, q.relevant - removed, "answerable") for q in full.queries if q.relevant - removed
        ]
        queries = [Query(i, text, frozenset(), "adversarial") for i, text, _ in adversarial]
        corpora.append(Corpus(full.name, memories, queries + off_queries + answerable))
    for corpus in chinese_split(which):
        answerable = [Query(q.id, q.text, q.relevant, "answerable") for q in corpus.queries]
        corpora.append(Corpus(f"zh-{corpus.name}", corpus.memories, off_queries + answerable))
    return corpora


_SENTENCE_EN = re.compile(r"(?<=[.!?])\s+")
_SENTENCE_ZH = re.compile(r"(?<=[。！？!?])")


def _sentences(text: str, pattern: re.Pattern[str]) -> list[str]:
    return [s.strip() for s in pattern.split(text) if len(s.strip()) >= 8]


def _with_context(query: Query, pool: Sequence[str], rng: random.Random, joiner: str) -> Query:
    """The query preceded by 3-5 sentences drawn from `pool` (seeded per query)."""
    context = rng.sample(list(pool), rng.randint(3, 5))
    return Query(query.id, joiner.join([*context, query.text]), query.relevant, query.group)


def long_queries(which: str, form: str) -> list[Corpus]:
    """Long multi-sentence queries: each question preceded by 3-5 sentences of context ("long"),
    or the question alone ("last"), on the same stores. LoCoMo: the sentences come from the same
    conversation's other turns (never an evidence turn of the question). The Chinese set: from
    the MemoryBank-CN user turns. The draw is seeded by the query id, so both forms and every run
    see the same context."""
    if form not in ("long", "last"):
        raise ValueError(f"form must be 'long' or 'last', not {form!r}")
    corpora: list[Corpus] = []
    for corpus in locomo_split(which):
        turns = {mid: text.split(": ", 1)[-1] for mid, text, _ in corpus.memories}
        queries = []
        for q in corpus.queries:
            if form == "last":
                queries.append(q)
                continue
            pool = [s for mid, text in turns.items() if mid not in q.relevant for s in _sentences(text, _SENTENCE_EN)]
            queries.append(_with_context(q, pool, random.Random(f"{SEED}:{q.id}"), " "))
        corpora.append(Corpus(corpus.name, corpus.memories, queries))
    zh_pool = [s for question, _ in memorybank_turns() for s in _sentences(question, _SENTENCE_ZH)]
    for corpus in chinese_split(which):
        queries = [
            q if form == "last" else _with_context(q, zh_pool, random.Random(f"{SEED}:{q.id}"), "")
            for q in corpus.queries
        ]
        corpora.append(Corpus(f"zh-{corpus.name}", corpus.memories, queries))
    return corpora


REALTALK_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


def _realtalk_files(path: Path) -> list[tuple[str, str]]:
    """(chat name, JSON text) of every REALTALK chat under `path`: a checkout's data/ folder (or
    the checkout itself), or the git directory `fetch` leaves (read with `git show`)."""
    files: list[tuple[str, str]] = []
    if (path / "objects").is_dir() and (path / "HEAD").is_file():  # a bare git directory
        listing = subprocess.run(
            ["git", "--git-dir", str(path), "ls-tree", "--name-only", "HEAD", "data/"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for name in sorted(n for n in listing if re.fullmatch(r"data/Chat_\d+_\w+\.json", n)):
            text = subprocess.run(
                ["git", "--git-dir", str(path), "show", f"HEAD:{name}"], check=True, capture_output=True, text=True
            ).stdout
            files.append((Path(name).stem, text))
    else:
        folder = path / "data" if (path / "data").is_dir() else path
        files = [(f.stem, f.read_text(encoding="utf-8")) for f in sorted(folder.glob("Chat_*.json"))]
    if not files:
        raise FileNotFoundError(f"no REALTALK chats (Chat_*.json) under {path}")
    return files


def realtalk(path: Path, which: str) -> list[Corpus]:
    """REALTALK (real 21-day messaging chats, LoCoMo's format): one store per chat, every message
    a memory ('[date] Speaker: text'), the memory-probing questions whose evidence names stored
    messages as queries. Never used for tuning; split by chat like LoCoMo."""
    from .splits import split

    chats = dict(_realtalk_files(path))
    keep = set(split(chats, which))  # type: ignore[arg-type]
    corpora: list[Corpus] = []
    for name, text in chats.items():
        if name not in keep:
            continue
        chat = json.loads(text)
        memories: list[tuple[str, str, str]] = []
        n = 1
        while f"session_{n}" in chat:
            for turn in chat[f"session_{n}"]:
                body = str(turn.get("clean_text") or turn.get("text") or "").strip()
                if body:
                    memories.append(
                        (turn["dia_id"], f"[{turn.get('date_time', '')}] {turn['speaker']}: {body}", "fact")
                    )
            n += 1
        ids = {m[0] for m in memories}
        queries = []
        for i, qa in enumerate(chat.get("qa", [])):
            relevant = frozenset(e for e in _evidence(qa.get("evidence", [])) if e in ids)
            if relevant and qa.get("category") in REALTALK_CATEGORIES:
                queries.append(
                    Query(f"{name}-q{i}", str(qa["question"]), relevant, REALTALK_CATEGORIES[qa["category"]])
                )
        corpora.append(Corpus(name, memories, queries))
    return corpora
