"""Development-half measurements for tuning recall's scoring (never the test halves unless asked).

    python -m benchmarks.tune_recall [--half dev|test] [--mode keyword|hybrid] [--dataset locomo,zh,crosslang]
                                     [--only plain,long,floor,order,cosines,latency] [--set NAME=VALUE ...]
                                     [--try "NAME=VALUE NAME=VALUE" ...]

The halves are those of benchmarks/splits.py (fixed seed, by conversation, user or memory); the
data are benchmarks/data.py's held-out sets restricted to the half asked for.

`--mode hybrid` gives every store's memories a vector with the real background worker
(`EmbeddingWorker(...).catch_up()`, the bundled model) before measuring. The embedded databases
are kept in the system's temporary folder (mms-tune-cache, keyed by the content and the model),
never in the repository, so a second run starts at once; query vectors are kept for the run.

What it measures, in process through `memory.recall` (access tracking off unless measuring it),
once per configuration (`--set` changes the base, each `--try` is one configuration on top of it;
without `--try` the base alone):
- plain: R@5, R@10, MRR@10, hit@5 of the questions (LoCoMo categories 1-4; the Chinese set with
  the MemoryBank distractors; the cross-language set by direction).
- long: the questions after 3-5 context sentences against the question alone
  (benchmarks.data.long_queries): a long query must do at least as well as its last sentence.
- floor: share of queries answered with no hits at each `--floors` value (the floor on hybrid
  relevance in hybrid mode, the keyword floor in keyword mode). Answerable questions
  (R@5 at that floor beside them), LoCoMo's adversarial questions (their evidence turns left out
  of the ranking), and the off-topic queries of benchmarks/data/offtopic.json asked of every
  store. The configured floor's row is marked.
- order: the distractor protocol for access counts: two copies of each store, the questions run
  with access tracking in two orders (as listed, reversed), then the share of questions whose top
  5 differ between the copies.
- latency: recall's p50/p90 wall time with the query embedded afresh, beside the embedding alone.
- cosines: percentiles of the raw cosine of each answerable question's best relevant memory, its
  best other memory, and each off-topic query's nearest memory (hybrid only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import shlex
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy

from mcp_memory_server.config import Config
from mcp_memory_server.embed.embedder import Embedder
from mcp_memory_server.embed.loader import backend_installed, load_embedder
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.retrieval.recall import recall
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .data import BENCH_DIR, Corpus, Query, chinese_split, crosslang, locomo_split, long_queries, offtopic

EVAL_LIMIT = 50  # hits read per query with the floor off; each floor is then a filter on them


@dataclass
class Loaded:
    corpus: Corpus
    path: Path
    store: Store
    ids: dict[str, str]  # our id -> corpus id


@dataclass
class Sets:
    """The stores and the query lists asked of them, by data set name."""

    stores: dict[str, list[Loaded]] = field(default_factory=dict)
    long: dict[str, dict[str, list[Query]]] = field(default_factory=dict)  # "long"/"last" -> store -> queries
    adversarial: dict[str, list[tuple[str, frozenset[str]]]] = field(default_factory=dict)
    off: list[tuple[str, str, str]] = field(default_factory=list)


class SharedPassages:
    """The configured model with each passage embedded once per run: the Chinese stores share
    the MemoryBank distractors (the worker still writes every store's vectors itself)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.cache: dict[str, Any] = {}

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed_passages(missing), strict=True))
        return numpy.stack([self.cache[t] for t in texts])


class CachedQueries:
    """The semantic stage's query encoder with the run's query vectors kept (each configuration
    asks the same queries; the model's answer does not depend on the settings)."""

    def __init__(self, stage: SemanticStage, path: Path) -> None:
        self.stage = stage
        self.path = path
        self.vectors: dict[str, tuple[str, object]] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self.added = 0

    async def encode_query(self, text: str) -> tuple[str, object] | None:
        if text not in self.vectors:
            encoded = await self.stage.encode_query(text)
            if encoded is None:
                return None
            self.vectors[text] = encoded
            self.added += 1
        return self.vectors[text]

    def save(self) -> None:
        if self.added:
            self.path.write_bytes(pickle.dumps(self.vectors))
            self.added = 0


def _key(corpus: Corpus, model: str) -> str:
    digest = hashlib.sha256(model.encode())
    for mid, text, category in corpus.memories:
        digest.update(f"{mid}\0{text[:2000]}\0{category}\n".encode())
    return f"{corpus.name}-{digest.hexdigest()[:16]}"


def _restore(cached: Path, path: Path) -> list[str] | None:
    """Our ids of a cached store, copied to `path`; None when it is not cached."""
    if not cached.with_suffix(".db").exists():
        return None
    shutil.copyfile(cached.with_suffix(".db"), path)
    ours: list[str] = json.loads(cached.with_suffix(".json").read_text())
    return ours


def _keep(path: Path, cached: Path, ours: list[str]) -> None:
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, cached.with_suffix(".db"))
    cached.with_suffix(".json").write_text(json.dumps(ours))


async def _load(
    corpus: Corpus,
    base: Config,
    segmenter: Segmenter,
    where: Path,
    stage: SemanticStage | None,
    encoder: CachedQueries | None,
    cache: Path,
) -> Loaded:
    """The corpus bulk-imported under the default settings (and embedded in hybrid mode), then
    opened for measuring."""
    path = where / f"{corpus.name}.db"
    cached = cache / _key(corpus, "" if stage is None else base.embedding.embedding_model)
    ours = _restore(cached, path)
    if ours is None:
        async with Store(base.with_changes(db_path=path), segmenter) as store:
            ours = await MemoryService(store).import_memories(
                [{"content": text[:2000], "category": category} for _, text, category in corpus.memories]
            )
            if stage is not None:
                started = time.perf_counter()
                if not await EmbeddingWorker(store, stage).catch_up():
                    raise SystemExit(f"the semantic stage is off: {stage.reason}")
                took = time.perf_counter() - started
                print(f"  embedded {corpus.name}: {len(ours)} memories in {took:.0f} s", flush=True)
        _keep(path, cached, ours)
    store = Store(base.with_changes(db_path=path), segmenter)
    await store.open()
    if stage is not None and encoder is not None:
        await EmbeddingWorker(store, stage).catch_up()  # nothing left to embed: attaches the model
        store.encoder = encoder
    return Loaded(corpus, path, store, {o: m[0] for o, m in zip(ours, corpus.memories, strict=True)})


Ranked = list[tuple[str, float, float]]  # (corpus id, relevance, the floor that applies to it), best first


async def _ranked(loaded: Loaded, config: Config, text: str) -> Ranked:
    """The ranking with the keyword floor off (`EVAL_LIMIT` hits), each hit's keyword part and
    the floor (the relevance decision of retrieval/relevance.py still applies)."""
    off = config.with_changes(floor=0.0)
    result = await recall(loaded.store, off, text, limit=EVAL_LIMIT, track_access=False)
    return [(loaded.ids[h.id], h.breakdown.keyword, config.recall.floor) for h in result.hits]


def _cut(ranked: Ranked, floor: float | None = None, drop: frozenset[str] = frozenset()) -> list[str]:
    """The top 10 above the configured floors, or above `floor` whatever the hit's kind."""
    return [d for d, rel, own in ranked if rel >= (own if floor is None else floor) and d not in drop][:10]


def _metrics(runs: Sequence[tuple[list[str], frozenset[str]]]) -> dict[str, float]:
    n = max(len(runs), 1)
    return {
        "n": len(runs),
        "R@5": sum(len(set(r[:5]) & rel) / len(rel) for r, rel in runs) / n,
        "R@10": sum(len(set(r[:10]) & rel) / len(rel) for r, rel in runs) / n,
        "MRR": sum(next((1 / (i + 1) for i, d in enumerate(r[:10]) if d in rel), 0.0) for r, rel in runs) / n,
        "hit@5": sum(1.0 for r, rel in runs if set(r[:5]) & rel) / n,
    }


def _line(name: str, m: dict[str, float]) -> str:
    return (
        f"  {name:<24} n={m['n']:<4.0f} R@5 {m['R@5']:.3f}  R@10 {m['R@10']:.3f}  MRR {m['MRR']:.3f}  "
        f"hit@5 {m['hit@5']:.3f}"
    )


async def _answerable(sets: Sets, config: Config) -> dict[str, list[tuple[Ranked, frozenset[str]]]]:
    out: dict[str, list[tuple[Ranked, frozenset[str]]]] = {}
    for name, stores in sets.stores.items():
        for loaded in stores:
            for q in loaded.corpus.queries:
                group = q.group if name == "crosslang" else name
                out.setdefault(group, []).append((await _ranked(loaded, config, q.text), q.relevant))
    return out


async def _plain(answerable: dict[str, list[tuple[Ranked, frozenset[str]]]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for group, items in answerable.items():
        m = _metrics([(_cut(r), rel) for r, rel in items])
        summary[group] = m
        print(_line(group, m))
    return summary


async def _long(sets: Sets, config: Config) -> None:
    for name, prefix in (("locomo", ""), ("zh", "zh-")):
        by_name = {lo.corpus.name: lo for lo in sets.stores.get(name, [])}
        if not by_name:
            continue
        for form in ("long", "last"):
            runs = []
            for store_name, queries in sets.long[form].items():
                loaded = by_name.get(store_name.removeprefix(prefix)) if store_name.startswith(prefix) else None
                if loaded is None:
                    continue
                for q in queries:
                    runs.append((_cut(await _ranked(loaded, config, q.text)), q.relevant))
            print(_line(f"{name} {form}", _metrics(runs)))


async def _floor(
    sets: Sets,
    config: Config,
    answerable: dict[str, list[tuple[Ranked, frozenset[str]]]],
    floors: Sequence[float],
) -> None:
    """Each floor's share of emptied answers per group, answerable recall beside it."""
    none: dict[str, list[tuple[Ranked, frozenset[str]]]] = {}
    for name in ("locomo", "zh"):
        for loaded in sets.stores.get(name, []):
            for text, removed in sets.adversarial.get(loaded.corpus.name, []):
                none.setdefault("adversarial", []).append((await _ranked(loaded, config, text), removed))
            for _, text, lang in sets.off:
                group = f"off {lang} / {'en' if name == 'locomo' else 'zh'} store"
                none.setdefault(group, []).append((await _ranked(loaded, config, text), frozenset()))
    own = config.recall.floor
    for floor in sorted({*floors, own}):
        cells = []
        for group in ("locomo", "zh"):
            if group in answerable:
                kept = [(_cut(r, floor), rel) for r, rel in answerable[group]]
                empty = sum(1 for r, _ in kept if not r) / len(kept)
                cells.append(f"{group} R@5 {_metrics(kept)['R@5']:.3f} empty {empty:.3f}")
        for group, items in sorted(none.items()):
            emptied = sum(1 for r, drop in items if not _cut(r, floor, drop)) / len(items)
            cells.append(f"{group} {emptied:.2f}")
        mark = "*" if floor == own else " "
        print(f" {mark}floor {floor:.2f}: " + " | ".join(cells))


async def _cosines(sets: Sets, config: Config) -> None:
    """Raw cosines: an answerable query's best relevant memory and best other one; the nearest
    memory of an off-topic query."""
    for name, stores in sets.stores.items():
        rel_best: list[float] = []
        other_best: list[float] = []
        off_best: list[float] = []
        for loaded in stores:
            for q in loaded.corpus.queries:
                vector = await loaded.store.embed_query(q.text)
                if vector is None:
                    return
                nearest = await loaded.store.vector_search(vector, EVAL_LIMIT)
                by_id = await _by_corpus_id(loaded, nearest)
                rel_best.append(max((c for d, c in by_id if d in q.relevant), default=0.0))
                other_best.append(max((c for d, c in by_id if d not in q.relevant), default=0.0))
            if name != "crosslang":
                for _, text, _ in sets.off:
                    vector = await loaded.store.embed_query(text)
                    nearest = await loaded.store.vector_search(vector, 1)
                    off_best.append(nearest[0][1] if nearest else 0.0)
        for label, values in (("relevant", rel_best), ("best other", other_best), ("off-topic top", off_best)):
            if values:
                qs = statistics.quantiles(values, n=20)
                print(
                    f"  {name} {label:<14} p5 {qs[0]:.3f} p25 {qs[4]:.3f} p50 {qs[9]:.3f} p75 {qs[14]:.3f} "
                    f"p95 {qs[18]:.3f}"
                )


async def _by_corpus_id(loaded: Loaded, nearest: Sequence[tuple[int, float]]) -> list[tuple[str, float]]:
    from mcp_memory_server.store.rows import memory_id

    return [(loaded.ids[memory_id(seq)], cos) for seq, cos in nearest if memory_id(seq) in loaded.ids]


async def _order(sets: Sets, config: Config, segmenter: Segmenter, where: Path) -> None:
    for name, stores in sets.stores.items():
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
                    await recall(copy.store, config, text, limit=10, track_access=True)
                await copy.store.flush()
            for text in texts:
                a = [h.id for h in (await recall(copies[0].store, config, text, limit=10, track_access=False)).hits]
                b = [h.id for h in (await recall(copies[1].store, config, text, limit=10, track_access=False)).hits]
                differ += a[:5] != b[:5]
                total += 1
            for copy in copies:
                await copy.store.close()
        print(f"  {name} order: top 5 differs for {differ}/{total} = {differ / max(total, 1):.3f} of queries")


async def _latency(sets: Sets, config: Config, stage: SemanticStage | None, n: int = 100) -> None:
    """Recall's wall time per query (p50, p90) on the first store of each set with the query
    embedded afresh (the model, not the run's cache), beside the embedding alone: with the
    keyword stages running while the model works, hybrid recall costs about the larger of the two."""
    for name, stores in sets.stores.items():
        loaded = stores[0]
        texts = [q.text for q in loaded.corpus.queries][:n]
        cached = loaded.store.encoder
        if stage is not None:
            loaded.store.encoder = stage
        times: list[float] = []
        embed: list[float] = []
        for text in texts:
            t0 = time.perf_counter()
            await recall(loaded.store, config, text, limit=10, track_access=False)
            times.append(time.perf_counter() - t0)
            if stage is not None:
                t0 = time.perf_counter()
                await stage.encode_query(text)
                embed.append(time.perf_counter() - t0)
        loaded.store.encoder = cached
        size = len(loaded.corpus.memories)
        cell = f"  {name} latency ({size} memories): recall p50 {_ms(times, 50)} p90 {_ms(times, 90)}"
        if embed:
            cell += f"; query embedding alone p50 {_ms(embed, 50)} p90 {_ms(embed, 90)}"
        print(cell)


def _ms(values: list[float], pct: int) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, len(ordered) * pct // 100)] * 1000:.1f} ms"


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


def _adversarial(names: set[str]) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """LoCoMo's category-5 questions per conversation with the turns they name as evidence (left
    out of their ranking: the store then holds no answer, as in benchmarks.data.noanswer)."""
    from .data import _evidence

    data = json.loads((BENCH_DIR / "locomo10.json").read_text(encoding="utf-8"))
    return {
        s["sample_id"]: [
            (str(q["question"]), frozenset(_evidence(q.get("evidence", [])))) for q in s["qa"] if q.get("category") == 5
        ]
        for s in data
        if s["sample_id"] in names
    }


async def run(args: argparse.Namespace) -> None:
    if args.half == "test":
        print("TEST HALVES: report only, never tune on these numbers")
    cache_dir = Path(tempfile.gettempdir()) / "mms-bench-cache"
    segmenter = Segmenter(cache_dir)
    await segmenter.wait()
    where = Path(tempfile.mkdtemp(prefix="mms-tune-"))
    hybrid = args.mode == "hybrid"
    base = Config.from_env({}, db_path=where / "x.db", cache_dir=cache_dir, semantic="on" if hybrid else "off")
    base = base.with_changes(**_parse_sets(args.set)) if args.set else base
    cache = Path(tempfile.gettempdir()) / "mms-tune-cache"
    cache.mkdir(exist_ok=True)
    stage = SemanticStage.from_config(base, lambda c: SharedPassages(load_embedder(c)), backend_installed)
    stage = stage if hybrid else None
    encoder = CachedQueries(stage, cache / "queries.pickle") if stage is not None else None
    wanted = set(args.dataset.split(","))
    only = set(args.only.split(","))
    sets = Sets()
    corpora: dict[str, list[Corpus]] = {}
    if "locomo" in wanted:
        corpora["locomo"] = locomo_split(args.half)
        sets.adversarial = _adversarial({c.name for c in corpora["locomo"]})
    if "zh" in wanted:
        corpora["zh"] = chinese_split(args.half)
    if "crosslang" in wanted:
        corpora["crosslang"] = crosslang(args.half)
    sets.long = {form: {c.name: c.queries for c in long_queries(args.half, form)} for form in ("long", "last")}
    sets.off = offtopic(args.half)
    started = time.perf_counter()
    for name, cs in corpora.items():
        sets.stores[name] = [await _load(c, base, segmenter, where, stage, encoder, cache) for c in cs]
    loaded_n = sum(len(v) for v in sets.stores.values())
    print(f"loaded {loaded_n} stores ({args.mode}) in {time.perf_counter() - started:.1f} s; base {args.set}")
    tries = args.try_ or [""]
    try:
        for tried in tries:
            config = base.with_changes(**_parse_sets(shlex.split(tried))) if tried else base
            for stores in sets.stores.values():
                for loaded in stores:
                    loaded.store.config = config  # the keyword index reads its settings per search
            t0 = time.perf_counter()
            print(f"== {tried or 'base'}", flush=True)
            answerable = await _answerable(sets, config) if only & {"plain", "floor"} else {}
            if "plain" in only:
                await _plain(answerable)
            if "long" in only:
                await _long(sets, config)
            if "floor" in only:
                await _floor(sets, config, answerable, [float(f) for f in args.floors.split(",")])
            if "cosines" in only and hybrid:
                await _cosines(sets, config)
            if "order" in only:
                await _order(sets, config, segmenter, where)
            if "latency" in only:
                await _latency(sets, config, stage)
            if encoder is not None:
                encoder.save()
            print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        for stores in sets.stores.values():
            for loaded in stores:
                await loaded.store.close()
        shutil.rmtree(where, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=["dev", "test"], default="dev")
    parser.add_argument("--mode", choices=["keyword", "hybrid"], default="keyword")
    parser.add_argument("--dataset", default="locomo,zh,crosslang")
    parser.add_argument("--only", default="plain,long,floor")
    parser.add_argument("--floors", default="0,0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4")
    parser.add_argument("--set", action="append", default=[], help="a setting NAME=VALUE for every run (repeatable)")
    parser.add_argument(
        "--try", dest="try_", action="append", default=[], help='one configuration: "NAME=VALUE NAME=VALUE"'
    )
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
