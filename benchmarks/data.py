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
    # Memories left out of this query's ranking before it is scored: the turns a conversation-shaped
    # query is made of (the conversation under way, which a store would not hold yet).
    exclude: frozenset[str] = frozenset()


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
            files.append((Path(name).stem, _git_or_file(path, name)))
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


# ---------------------------------------------------------------------------------------------
# Query shapes: the same stores asked in three ways (benchmarks/retrieval.py --dataset shapes).
#
# - question: the data set's own questions;
# - keywords: what one types into a search box, built from each question by dropping the words of
#   a generic English stopword list (below, not the product's) and keeping at most 4 words; the
#   Chinese set's keyword queries are written by hand (zh_dialogues.json, and its `keyword` kind);
# - conversation: the situation of an assistant about to answer in the middle of a conversation.
#   For an evidence turn with at least 4 turns before it in its session, the 4-8 turns before it
#   (the number drawn per turn with the fixed seed; the evidence turn itself excluded) are the
#   query, the evidence turn the one relevant memory, and the turns of its session within 20 of it
#   are left out of its ranking (the conversation under way, which the store would not hold yet;
#   they stay in the store). Each evidence turn gives one query. The Chinese set's
#   conversations are written by hand (zh_dialogues.json).

# A generic English stopword list (articles, pronouns, auxiliaries, question words, prepositions):
# the benchmark's own, so that the keyword shape does not follow the product's tokenizer.
_EN_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me might more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    kind sort likely think thing things get got go went ever many much""".split()  # noqa: SIM905
)
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def keyword_form(question: str, limit: int = 4) -> str:
    """A question as search-box keywords: its words less the generic stopwords, at most `limit`."""
    words = [w.strip("'-") for w in _WORDS.findall(question)]
    kept = [w for w in words if w and w.lower() not in _EN_STOP and not w.lower().endswith("'s")]
    kept += [w[:-2] for w in words if w.lower().endswith("'s") and w[:-2].lower() not in _EN_STOP]
    return " ".join(list(dict.fromkeys(kept))[:limit])


def keyword_queries(corpora: Sequence[Corpus]) -> list[Corpus]:
    """The same stores, each question replaced by its keyword form (queries left without a
    keyword are dropped)."""
    out = []
    for corpus in corpora:
        queries = [Query(q.id, form, q.relevant, q.group) for q in corpus.queries if (form := keyword_form(q.text))]
        out.append(Corpus(corpus.name, corpus.memories, queries))
    return out


def _turn_order(memory_id: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"D(\d+):(\d+)", memory_id)
    return (int(match.group(1)), int(match.group(2))) if match else None


_UNDER_WAY = 20


def conversation_queries(corpora: Sequence[Corpus], low: int = 4, high: int = 8) -> list[Corpus]:
    """The same stores asked conversation-shaped queries: for each evidence turn of the stores'
    questions with at least `low` turns before it in its session, the `low`-`high` turns before
    it as 'Speaker: text' lines (the date left out: a conversation under way has none in its
    turns), that turn the one relevant memory, the other turns of its session within 20 of it
    excluded from its ranking (the conversation under way)."""
    out = []
    for corpus in corpora:
        by_session: dict[int, list[tuple[int, str, str]]] = {}
        for mid, text, _ in corpus.memories:
            order = _turn_order(mid)
            if order is not None:
                body = text.split("] ", 1)[-1] if text.startswith("[") else text
                by_session.setdefault(order[0], []).append((order[1], mid, body))
        for turns in by_session.values():
            turns.sort()
        position = {mid: (session, at) for session, turns in by_session.items() for at, (_, mid, _) in enumerate(turns)}
        evidence = sorted(
            {e for q in corpus.queries for e in q.relevant if e in position}, key=lambda e: _turn_order(e) or (0, 0)
        )
        queries = []
        for e in evidence:
            session, at = position[e]
            if at < low:
                continue
            n = random.Random(f"{SEED}:conversation:{corpus.name}:{e}").randint(low, min(high, at))
            before = by_session[session][at - n : at]
            text = "\n".join(body for _, _, body in before)
            # The conversation under way is not in the store yet: the turns of its session around
            # the evidence turn (20 either side) are left out of the ranking, the evidence turn
            # standing for the memory they cue. (A window, not the whole session: REALTALK's run
            # to 125 turns, and a ranking is read at most 50 deep.)
            window = by_session[session][max(0, at - _UNDER_WAY) : at + _UNDER_WAY + 1]
            under_way = frozenset(m for _, m, _ in window if m != e)
            queries.append(Query(f"{corpus.name}-c{e}", text, frozenset({e}), "conversation", under_way))
        out.append(Corpus(corpus.name, corpus.memories, queries))
    return out


def zh_dialogues(which: str) -> list[Corpus]:
    """The Chinese set's stores (each user's memories and the MemoryBank-CN turns) asked the
    hand-written conversation-shaped queries of benchmarks/data/zh_dialogues.json (group
    "conversation" for Chinese dialogues, "conversation en->zh" for English ones about the Chinese
    memories) and its keyword queries with the set's own `keyword` kind (group "keywords")."""
    data = _load_json("zh_dialogues.json")
    out = []
    for corpus in chinese_split(which):
        queries = []
        for d in data["dialogues"]:
            if d["user"] != corpus.name:
                continue
            text = "\n".join(t["text"] for t in d["turns"])
            group = "conversation" if d["lang"] == "zh" else "conversation en->zh"
            queries.append(Query(d["id"], text, frozenset(d["relevant"]), group))
        for k in data["keywords"]:
            if k["user"] == corpus.name:
                queries.append(Query(k["id"], k["query"], frozenset(k["relevant"]), "keywords"))
        queries += [Query(q.id, q.text, q.relevant, "keywords") for q in corpus.queries if q.group == "keyword"]
        out.append(Corpus(corpus.name, corpus.memories, queries))
    return out


def _git_or_file(path: Path, name: str) -> str:
    """A file of a data set's repository: from a checkout, or with `git show` from the git
    directory `fetch` leaves."""
    if (path / "objects").is_dir() and (path / "HEAD").is_file():
        return subprocess.run(
            ["git", "--git-dir", str(path), "show", f"HEAD:{name}"], check=True, capture_output=True, text=True
        ).stdout
    return (path / name).read_text(encoding="utf-8")


_MADIAL_LINE = re.compile(r'^<([^>]{1,40})>:\s*"?(.*?)"?\s*$', re.DOTALL)


def madial(path: Path, lang: str) -> list[Corpus]:
    """MADial-Bench (He et al., NAACL 2025; github.com/hejunqing/MADial-Bench, MIT): two children's
    memories (short event summaries) and 160 dialogues per language in which the assistant should
    bring one of them up. As the authors' own scoring does: the query is the dialogue before the
    assistant's test turn, the pool that child's memories, the relevant ones the dialogue's
    `relevant-id` (the first is the memory the reference answer uses). One store per child;
    memories with the same text count as one (the Chinese file repeats three). Conversation-shaped
    and never used for tuning: every query is reported, whatever the split. `lang` is "zh" or
    "en"; the English file's memories belong to the child the Chinese file names."""
    folder = {"zh": "data/ch/MADial-Bench-zh", "en": "data/en/MADial-Bench-en"}[lang]
    zh_memories = [
        json.loads(line)
        for line in _git_or_file(path, "data/ch/MADial-Bench-zh-memory.json").splitlines()
        if line.strip()
    ]
    owner = {mid: str(m["user-id"]) for item in zh_memories for mid, m in item.items()}
    lines = _git_or_file(path, f"{folder}-memory.json").splitlines()
    memories: dict[str, list[tuple[str, str, str]]] = {}
    canonical: dict[str, str] = {}
    seen: dict[tuple[str, str], str] = {}
    for line in lines:
        if not line.strip():
            continue
        for mid, m in json.loads(line).items():
            user = owner.get(mid)
            text = str(m["event"]).strip()
            if user is None or not text:
                continue
            first = seen.setdefault((user, text), mid)
            canonical[mid] = first
            if first == mid:
                memories.setdefault(user, []).append((mid, text, "event"))
    queries: dict[str, list[Query]] = {}
    dialogues = [line for line in _git_or_file(path, f"{folder}-dialogue.json").splitlines() if line.strip()]
    for number, line in enumerate(dialogues):
        d = json.loads(line)
        user = str(d.get("user-id") or owner.get(str(d["relevant-id"][0]), ""))
        turns = []
        for raw in d["dialogue"][: d["test-turn"][0]]:
            match = _MADIAL_LINE.match(raw.strip())
            if match:
                turns.append(f"{match.group(1)}: {match.group(2).strip()}")
        relevant = frozenset(canonical[str(r)] for r in d["relevant-id"] if str(r) in canonical)
        if turns and relevant:
            queries.setdefault(user, []).append(
                Query(f"madial-{lang}-{d.get('id', number)}", "\n".join(turns), relevant, "conversation")
            )
    names = {"1": "Bart", "2": "Lisa"}
    return [Corpus(f"madial-{lang}-{names.get(u, u)}", memories[u], queries.get(u, [])) for u in sorted(memories)]


def shapes(source: str, which: str, path: Path | None = None) -> list[Corpus]:
    """One source's stores asked every query shape at once (`Query.group` names the shape, and
    the direction for questions across languages): "question", "keywords", "conversation",
    "conversation en->zh", "question en->zh". `source` is locomo, realtalk (from `path`) or zh."""
    if source in ("locomo", "realtalk"):
        if source == "locomo":
            base = locomo_split(which)
        elif path is not None:
            base = realtalk(path, which)
        else:
            raise ValueError("the realtalk shapes need the path of the REALTALK data")
        asked = [keyword_queries(base), conversation_queries(base)]
        out = []
        for at, corpus in enumerate(base):
            queries = [Query(q.id, q.text, q.relevant, "question") for q in corpus.queries]
            queries += [Query(q.id + "-kw", q.text, q.relevant, "keywords") for q in asked[0][at].queries]
            queries += asked[1][at].queries
            out.append(Corpus(corpus.name, corpus.memories, queries))
        return out
    if source == "zh":
        out = []
        for corpus, extra in zip(chinese_split(which), zh_dialogues(which), strict=True):
            groups = {"keyword": None, "english": "question en->zh"}
            queries = [
                Query(q.id, q.text, q.relevant, groups.get(q.group) or "question")
                for q in corpus.queries
                if q.group != "keyword"  # zh_dialogues adds the set's keyword queries with its own
            ]
            out.append(Corpus(corpus.name, corpus.memories, queries + extra.queries))
        return out
    raise ValueError(f"unknown source {source!r}: locomo, realtalk or zh")
