"""Development-half experiments on fusion, query vectors and abstention, offline.

    python -m benchmarks.retrieval_lab collect [--half dev]     # features of every query, once
    python -m benchmarks.retrieval_lab study   [--half dev]     # the variants, leave-one-source-out

`collect` loads the development stores of every tuning source (LoCoMo, the own Chinese set with
its dialogues and keywords, the cross-language set) with the real bulk import and the real
background embedding (benchmarks/tune_recall.py's cached databases), and records for each query
of each shape what the product's two parts say about every memory of its store: the keyword
part's BM25 scores of its candidates (with and without feedback terms) and the absolute scale
`full`, and the cosine of each query vector variant with every memory (script offsets applied,
as the vector index does). `study` then ranks offline under each fusion and abstention variant,
so a variant costs milliseconds, not a run of the server. The figures of record come from
`benchmarks.retrieval` through the real server; this program only chooses among variants.
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from mcp_memory_server.config import Config
from mcp_memory_server.embed.loader import backend_installed, load_embedder
from mcp_memory_server.memory.embedding import SemanticStage
from mcp_memory_server.retrieval.recall import _keyword_stages
from mcp_memory_server.store.rows import utcnow
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.scripts import script_of

from .data import (
    Corpus,
    Query,
    chinese_split,
    conversation_queries,
    crosslang,
    keyword_queries,
    locomo_split,
    long_queries,
    offtopic,
    zh_dialogues,
)
from .tune_recall import CachedQueries, SharedPassages, _adversarial, _load

CACHE = Path(tempfile.gettempdir()) / "mms-tune-cache"
POOL = 200  # keyword candidates kept per query


@dataclass
class Features:
    """One query on one store."""

    source: str  # locomo, zh, crosslang
    shape: str  # question, keywords, conversation, filler, offtopic, adversarial
    lang: str  # en, zh, en->zh, zh->en
    qid: str
    relevant: frozenset[int]  # seqs; empty for a query the store cannot answer
    kw: dict[int, float]  # seq -> BM25 (no feedback)
    kw_fb: dict[int, float]  # seq -> BM25 with feedback (as shipped before)
    full: float
    kw_flat: dict[int, float]  # seq -> BM25, no feedback, context sentences weighing as the question
    full_flat: float
    searched: bool
    cos: dict[str, Any]  # variant -> float32 cosines over the store's `seqs`
    store: str = ""
    # Memories left out of the ranking after it is made (the conversation under way): they stay
    # in the store and compete for candidates, as they do in the real server.
    exclude: frozenset[int] = frozenset()


@dataclass
class StoreInfo:
    seqs: Any  # int64 array of the store's seqs, the order of every `cos` array
    category: Any  # the SPEC 3 category weight per seq
    size: int
    script: Any = None  # each memory's script group, by position (retrieval_study fills it in)

    def position(self, seq: int) -> int:
        """Where a seq stands in `seqs` (a bulk import numbers a store's memories 1, 2, 3 ...)."""
        return seq - int(self.seqs[0])


@dataclass
class Collected:
    stores: dict[str, StoreInfo] = field(default_factory=dict)
    queries: list[Features] = field(default_factory=list)


def _variants(text: str) -> dict[str, str]:
    """The texts one might embed for a query: the whole (bounded), the last line or sentence, the
    last 500 characters."""
    from mcp_memory_server.retrieval.plan import question_text

    lines = [line for line in text.split("\n") if line.strip()]
    last = lines[-1] if lines else text
    return {
        "question": question_text(text)[-200:],
        "last_turn": last[-500:],
        "tail500": text[-500:],
        "whole": text[-1500:],
    }


async def collect(half: str, out: Path) -> None:
    cache_dir = Path(tempfile.gettempdir()) / "mms-bench-cache"
    segmenter = Segmenter(cache_dir)
    await segmenter.wait()
    where = Path(tempfile.mkdtemp(prefix="mms-lab-"))
    base = Config.from_env({}, db_path=where / "x.db", cache_dir=cache_dir, semantic="on")
    base = base.with_changes(candidate_limit=POOL, floor=0.0)
    CACHE.mkdir(exist_ok=True)
    stage = SemanticStage.from_config(base, lambda c: SharedPassages(load_embedder(c)), backend_installed)
    encoder = CachedQueries(stage, CACHE / "queries.pickle")
    off = offtopic(half)
    result = Collected()
    plan: list[tuple[str, list[Corpus], list[tuple[str, list[Corpus]]]]] = []
    lo = locomo_split(half)
    long_lo = [c for c in long_queries(half, "long") if not c.name.startswith("zh-")]
    plan.append(
        (
            "locomo",
            lo,
            [
                ("question", lo),
                ("keywords", keyword_queries(lo)),
                ("conversation", conversation_queries(lo)),
                ("filler", long_lo),
            ],
        )
    )
    zh = chinese_split(half)
    dialogues = zh_dialogues(half) if (Path(__file__).parent / "data" / "zh_dialogues.json").exists() else []
    long_zh = [c for c in long_queries(half, "long") if c.name.startswith("zh-")]
    long_zh = [Corpus(c.name.removeprefix("zh-"), c.memories, c.queries) for c in long_zh]
    plan.append(("zh", zh, [("question", zh), ("dialogues", dialogues), ("filler", long_zh)]))
    cl = crosslang(half)
    plan.append(("crosslang", cl, [("question", cl)]))
    adversarial = _adversarial({c.name for c in lo})
    started = time.perf_counter()
    for source, corpora, shapes in plan:
        for corpus in corpora:
            loaded = await _load(corpus, base, segmenter, where, stage, encoder, CACHE)
            store = loaded.store
            store.config = base
            seq_of = {cid: int(our[4:]) for our, cid in loaded.ids.items()}
            seqs = np.array(sorted(seq_of.values()), dtype=np.int64)
            assert int(seqs[-1] - seqs[0]) + 1 == len(seqs), "a bulk import numbers memories one after another"
            position = {int(s): i for i, s in enumerate(seqs.tolist())}
            cats = {
                int(our[4:]): base.recall.category_weight(cat)
                for our, (_, _, cat) in zip(loaded.ids, corpus.memories, strict=True)
            }
            key = f"{source}/{corpus.name}"
            result.stores[key] = StoreInfo(seqs, np.array([cats[int(s)] for s in seqs]), len(seqs))
            asked: list[tuple[str, str, Query]] = []
            for shape, sets in shapes:
                for c in sets:
                    if c.name == corpus.name:
                        for q in c.queries:
                            group = q.group
                            lang = {"en->zh": "en->zh", "zh->en": "zh->en"}.get(group, "zh" if source == "zh" else "en")
                            if group == "conversation en->zh":
                                lang = "en->zh"
                            s = shape
                            if shape == "dialogues":
                                s = "keywords" if group == "keywords" else "conversation"
                            asked.append((s, lang, q))
            if source != "crosslang":
                for i, text, lang in off:
                    asked.append(("offtopic", lang, Query(i, text, frozenset(), "off")))
            for text, removed in adversarial.get(corpus.name, []):
                asked.append(("adversarial", "en", Query("adv", text, frozenset(), "adv", frozenset(removed))))
            for shape, lang, q in asked:
                excluded = {seq_of[e] for e in q.exclude if e in seq_of}
                found = await _keyword_stages(store, base, q.text[:2000], None, None, None, utcnow(), False)
                assert all(c.row.seq == c.row.number for c in found.candidates)
                kw = {c.row.seq: c.raw for c in found.candidates}
                store.config = base.with_changes(feedback_docs=0)
                kw_plain = (
                    {c.row.seq: c.raw for c in await store.search_index(found.plan.queries, POOL)}
                    if found.plan.queries
                    else {}
                )
                flat = base.with_changes(feedback_docs=0, context_weight=1.0)
                store.config = flat
                found_flat = await _keyword_stages(store, flat, q.text[:2000], None, None, None, utcnow(), False)
                kw_flat = {c.row.seq: c.raw for c in found_flat.candidates}
                store.config = base
                cos: dict[str, Any] = {}
                for variant, text in _variants(q.text[:2000]).items():
                    enc = await encoder.encode_query(text)
                    assert enc is not None
                    near = await store.vector_search(
                        enc[1], len(seqs) + 10, script_of(text), base.recall.cross_language
                    )
                    arr = np.full(len(seqs), -np.inf, dtype=np.float32)
                    for seq, c in near:
                        if seq in position:
                            arr[position[seq]] = c
                    cos[variant] = arr
                relevant = frozenset(seq_of[r] for r in q.relevant if r in seq_of) - excluded
                if shape != "adversarial" and q.relevant and not relevant:
                    continue
                result.queries.append(
                    Features(
                        source,
                        shape,
                        lang,
                        q.id,
                        relevant if shape != "adversarial" else frozenset(),
                        kw_plain,
                        kw,
                        found.plan.full,
                        kw_flat,
                        found_flat.plan.full,
                        found.searched,
                        cos,
                        key,
                        frozenset(excluded),
                    )
                )
            encoder.save()
            await store.close()
            print(f"  {key}: {len(asked)} queries ({time.perf_counter() - started:.0f} s)", flush=True)
    await anyio.Path(out).write_bytes(pickle.dumps(result))
    print(f"{len(result.queries)} queries -> {out}")


__all__ = ["Collected", "Features", "StoreInfo", "load_features"]


class _Unpickler(pickle.Unpickler):
    """Features written by `python -m benchmarks.retrieval_lab` name their classes in __main__."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            module = __name__
        return super().find_class(module, name)


def load_features(path: Path) -> Collected:
    with path.open("rb") as handle:
        loaded: Collected = _Unpickler(handle).load()
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["collect", "study"])
    parser.add_argument("--half", choices=["dev", "test"], default="dev")
    parser.add_argument("--features", default=str(CACHE / "lab-features-{half}.pickle"))
    args = parser.parse_args()
    path = Path(args.features.format(half=args.half))
    if args.command == "collect":
        anyio.run(collect, args.half, path)
    else:
        from .retrieval_study import study

        study(load_features(path), args.half)


if __name__ == "__main__":
    main()
