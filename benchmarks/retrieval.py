"""Retrieval quality on held-out data: ours beside simple anchors, on the same stores, through the
same harness, with 95 % bootstrap intervals.

    python -m benchmarks.retrieval [--dataset locomo,chinese,crosslang,long,noanswer,realtalk|heldout|all]
                                   [--split dev|test|all] [--retrievers fts5,trigram,jieba,dense,kw,hybrid,official]
                                   [--corpora N] [--queries N] [--realtalk PATH] [--json FILE] [--markdown]

Data sets (benchmarks/data/README.md, ../shared/bench/README.md), each cut into development and
test halves by benchmarks/splits.py (fixed seed, by conversation or user; tune only on dev):

- `locomo`: LoCoMo categories 1-4, one store per conversation, every turn a memory.
- `chinese`: the own Chinese set (benchmarks/data/zh_memories.json), each user's store padded
  with the 566 MemoryBank-CN turns as distractors.
- `crosslang`: benchmarks/data/crosslang.json, English questions about Chinese memories and the
  reverse, in one store with the MemoryBank-CN turns.
- `long`: LoCoMo and the Chinese set again, each question preceded by 3-5 sentences of context
  ("long") and alone ("last"), fresh stores with the same content for each form.
- `noanswer`: stores that hold no answer (LoCoMo without its adversarial questions' evidence
  turns; the Chinese stores), asked LoCoMo's adversarial questions and the off-topic queries of
  benchmarks/data/offtopic.json; the metric is the share of queries with no hits, beside the
  answerable queries' recall on the same stores.
- `realtalk`: REALTALK (real messaging chats, LoCoMo's format), never used for tuning; read from
  `--realtalk PATH` (a checkout, its data/ folder, or the git directory `fetch` leaves).

- `shapes`: every query shape on one source's stores at once, reported per shape with hybrid −
  max(keyword-only, dense alone) and keyword-only − untuned jieba + FTS5 (negative ones marked):
  `shapes-locomo` and `shapes-realtalk` (questions, keyword forms, conversation-shaped queries:
  the 4-8 turns before an evidence turn; the turns around it left out of the ranking),
  `shapes-zh` (questions, hand-written dialogues and keywords, benchmarks/data/zh_dialogues.json),
  and `madial` (MADial-Bench, Chinese and English dialogues, never tuned on, from `--madial PATH`).

`heldout` is every set above but the shapes (realtalk when --realtalk is given); `all` is the same.

Retrievers: `fts5` FTS5 unicode61 BM25, `trigram` FTS5 trigram BM25, `jieba` untuned jieba + FTS5
BM25, `dense` multilingual-e5-small alone (brute-force cosine), `kw` ours keyword-only and
`hybrid` ours with default settings (both the installed server over stdio, every memory written
with `remember`, queried with `recall`; hybrid waits for memory://stats to report the embedding
done, `--semantic-wait optional` lets it go on when the server reports no semantic stage),
`official` the reference server. The older `ours` / `stdio` (bulk import, with `-pg` and
`-remember`) still work.

Metrics per query: R@k = share of its relevant memories in the top k; hit@5 = 1 if any is in the
top 5; MRR@10; NDCG@10 (binary gains); for a query with no answer, "empty" = 1 if no hit came
back. Intervals: 1,000 bootstrap resamples (seed 19) of queries, or of stores for LoCoMo and
REALTALK (conversations); "ours - best anchor" resamples both together (paired).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import random
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcp_memory_server.text import Segmenter

from .data import (
    Corpus,
    Query,
    chinese,
    chinese_split,
    crosslang,
    locomo,
    locomo_split,
    long_queries,
    madial,
    noanswer,
    realtalk,
    shapes,
)
from .retrievers import (
    DenseE5,
    JiebaFts5,
    OfficialRetriever,
    OursInProcess,
    OursStdio,
    OursTools,
    PlainFts5,
    Retriever,
    TrigramFts5,
)
from .splits import SEED

if TYPE_CHECKING:
    from tests.pg_server import PgServer

K = 10
MAX_DEPTH = 50  # the most hits a recall returns (config/limits.py MAX_RECALL_HITS)
RESAMPLES = 1000
METRICS = ("R@5", "R@10", "hit@5", "MRR@10", "NDCG@10", "empty")
ANCHORS = ("FTS5 unicode61 BM25", "FTS5 trigram BM25", "jieba + FTS5 BM25", "dense e5-small alone")


@dataclass
class Record:
    """One query's outcome."""

    store: str
    query: str
    group: str
    values: dict[str, float]


@dataclass
class Scores:
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    ndcg: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    hit5: list[float] = field(default_factory=list)
    empty: list[float] = field(default_factory=list)  # queries with no answer: 1 when nothing came back
    latency: list[float] = field(default_factory=list)
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # query id -> top K (group "all")

    def add(self, ranked: Sequence[str], relevant: frozenset[str], seconds: float) -> dict[str, float]:
        self.latency.append(seconds)
        if not relevant:
            values = {"empty": 0.0 if ranked else 1.0}
            self.empty.append(values["empty"])
            return values
        dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:K]) if doc in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
        values = {
            "R@5": len(set(ranked[:5]) & relevant) / len(relevant),
            "R@10": len(set(ranked[:10]) & relevant) / len(relevant),
            "hit@5": 1.0 if set(ranked[:5]) & relevant else 0.0,
            "MRR@10": next((1 / (i + 1) for i, doc in enumerate(ranked[:K]) if doc in relevant), 0.0),
            "NDCG@10": dcg / ideal,
        }
        self.r5.append(values["R@5"])
        self.r10.append(values["R@10"])
        self.hit5.append(values["hit@5"])
        self.mrr.append(values["MRR@10"])
        self.ndcg.append(values["NDCG@10"])
        return values

    def row(self) -> dict[str, float]:
        lat = sorted(self.latency)

        def mean(xs: list[float]) -> float:
            return sum(xs) / len(xs) if xs else 0.0

        return {
            "n": len(self.r5),
            "n_empty": len(self.empty),
            "R@5": mean(self.r5),
            "R@10": mean(self.r10),
            "hit@5": mean(self.hit5),
            "NDCG@10": mean(self.ndcg),
            "MRR@10": mean(self.mrr),
            "empty": mean(self.empty),
            "p50_ms": lat[len(lat) // 2] * 1000 if lat else 0.0,
            "p95_ms": lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000 if lat else 0.0,
        }


@dataclass
class Run:
    """One retriever on one data set: scores by group, and every query's record in order."""

    name: str
    scores: dict[str, Scores]
    records: list[Record]
    notes: list[str] = field(default_factory=list)


async def evaluate_run(make: Callable[[], Retriever], corpora: Sequence[Corpus]) -> Run:
    """Scores overall ("all") and per query group, one fresh store per corpus."""
    scores: dict[str, Scores] = defaultdict(Scores)
    records: list[Record] = []
    notes: list[str] = []
    name = ""
    for corpus in corpora:
        retriever = make()
        name = retriever.name
        started = time.perf_counter()
        await retriever.open(corpus.memories)
        loaded = time.perf_counter() - started
        prepare = getattr(retriever, "prepare", None)
        if prepare is not None:  # the dense anchor embeds its queries in batches; not timed per query
            await prepare([q.text for q in corpus.queries])
        try:
            for query in corpus.queries:
                started = time.perf_counter()
                # The conversation under way stays in the store and is left out of the ranking.
                ranked = await retriever.search(query.text, min(MAX_DEPTH, K + len(query.exclude)))
                elapsed = time.perf_counter() - started
                ranked = [doc for doc in ranked if doc not in query.exclude]
                values = scores["all"].add(ranked, query.relevant, elapsed)
                scores[query.group].add(ranked, query.relevant, elapsed)
                scores["all"].rankings[query.id] = tuple(ranked[:K])
                records.append(Record(corpus.name, query.id, query.group, values))
        finally:
            await retriever.close()
        if isinstance(retriever, OursTools):
            rate = len(corpus.memories) / retriever.remember_seconds if retriever.remember_seconds else 0.0
            notes.append(
                f"{corpus.name}: {len(corpus.memories)} written at {rate:.0f}/s"
                f" ({dict(retriever.actions)}); load + embedding wait {loaded:.1f} s"
                + (f"; stats: {retriever.embed_wait}" if retriever.embed_wait else "")
            )
        elif getattr(retriever, "remember", False):
            notes.append(f"{corpus.name}: remember answered {dict(getattr(retriever, 'actions', {}))}")
    return Run(name, scores, records, notes)


async def evaluate(make: Callable[[], Retriever], corpora: Sequence[Corpus]) -> tuple[str, dict[str, Scores]]:
    """Scores overall ("all") and per query group (the older interface)."""
    run = await evaluate_run(make, corpora)
    return run.name, run.scores


def agreement(results: Sequence[tuple[str, dict[str, Scores]]]) -> list[str]:
    """For each retriever run on PostgreSQL next to its SQLite twin: how many queries got the same
    top K, the same top-K set, and the first few that did not."""
    by_name = dict(results)
    lines = []
    for name, scores in results:
        twin = name.replace(", PostgreSQL", "")
        if twin == name or twin not in by_name:
            continue
        ours, theirs = scores["all"].rankings, by_name[twin]["all"].rankings
        same = [q for q in ours if ours[q] == theirs.get(q)]
        same_set = [q for q in ours if set(ours[q]) == set(theirs.get(q, ()))]
        differ = [q for q in ours if ours[q] != theirs.get(q)]
        lines.append(
            f"{name} against {twin}: the same top {K} for {len(same)} of {len(ours)} queries, the same top-{K}"
            f" set for {len(same_set)}; differing: {', '.join(differ[:8]) or 'none'}"
        )
    return lines


# ---------------------------------------------------------------------------------------------
# Bootstrap intervals


def _units(records: Sequence[Record], metric: str, groups: set[str] | None, by_store: bool) -> list[list[float]]:
    """The records' values of `metric` (restricted to `groups`), bundled by resampling unit."""
    units: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if metric in r.values and (groups is None or r.group in groups):
            units[r.store if by_store else f"{r.store}/{r.query}"].append(r.values[metric])
    return list(units.values())


def bootstrap(
    runs: Sequence[Sequence[Record]],
    metric: str,
    groups: set[str] | None = None,
    by_store: bool = False,
    weights: Sequence[float] = (1.0,),
) -> tuple[float, float, float]:
    """(estimate, low, high) of the weighted sum of the runs' means (weights (1,) for one run's
    mean, (1, -1) for a paired difference), 95 % percentile interval over RESAMPLES resamples of
    the units (queries, or stores with `by_store`), the same units drawn for every run."""
    per_run = [_units(records, metric, groups, by_store) for records in runs]
    n = len(per_run[0])
    if n == 0 or any(len(u) != n for u in per_run):
        return (math.nan, math.nan, math.nan)

    def stat(indices: Sequence[int]) -> float:
        total = 0.0
        for w, units in zip(weights, per_run, strict=True):
            values = [v for i in indices for v in units[i]]
            total += w * (sum(values) / len(values))
        return total

    rng = random.Random(SEED)
    draws = sorted(stat([rng.randrange(n) for _ in range(n)]) for _ in range(RESAMPLES))
    return (stat(range(n)), draws[int(0.025 * RESAMPLES)], draws[int(0.975 * RESAMPLES) - 1])


# ---------------------------------------------------------------------------------------------
# Data sets


@dataclass(frozen=True)
class Dataset:
    key: str
    title: str
    corpora: list[Corpus]
    metrics: tuple[str, ...]  # headline metrics, over the answerable queries
    by_store: bool  # resample stores (conversations) rather than queries
    empty_groups: tuple[str, ...] = ()  # groups of no-answer queries, reported as "empty"
    pair: str = ""  # the key of the data set this one is compared with query by query (long vs last)
    shaped: bool = False  # its groups are query shapes: report each, with the parts' margins


def _limit(corpora: list[Corpus], args: argparse.Namespace) -> list[Corpus]:
    corpora = corpora[: args.corpora] if args.corpora else corpora
    if args.queries:
        corpora = [Corpus(c.name, c.memories, c.queries[: args.queries]) for c in corpora]
    return corpora


def datasets(args: argparse.Namespace) -> list[Dataset]:
    wanted = {n.strip() for n in args.dataset.split(",") if n.strip()}
    if wanted & {"all", "heldout"}:
        wanted |= {"locomo", "chinese", "crosslang", "long", "noanswer"} | ({"realtalk"} if args.realtalk else set())
    if "shapes" in wanted:
        wanted |= {"shapes-locomo", "shapes-zh"} | ({"shapes-realtalk"} if args.realtalk else set())
        wanted |= {"madial"} if args.madial else set()
    known = {"all", "heldout", "locomo", "chinese", "crosslang", "long", "noanswer", "realtalk", "shapes", "madial"}
    unknown = wanted - known - {"shapes-locomo", "shapes-zh", "shapes-realtalk"}
    if unknown:
        raise SystemExit(f"unknown data set(s): {', '.join(sorted(unknown))}")
    s = args.split
    out: list[Dataset] = []
    recall = ("R@5", "R@10", "MRR@10", "hit@5")
    if "locomo" in wanted:
        out.append(Dataset("locomo", "LoCoMo", _limit(locomo_split(s), args), recall, True))
    if "chinese" in wanted:
        out.append(Dataset("chinese", "Chinese set + 566 distractors", _limit(chinese_split(s), args), recall, False))
    if "crosslang" in wanted:
        out.append(Dataset("crosslang", "Cross-language", _limit(crosslang(s), args), ("hit@5", "MRR@10"), False))
    if "long" in wanted:
        for form in ("long", "last"):
            both = long_queries(s, form)
            en = [c for c in both if not c.name.startswith("zh-")]
            zh = [c for c in both if c.name.startswith("zh-")]
            other = "last" if form == "long" else ""
            out.append(
                Dataset(
                    f"long-en-{form}",
                    f"LoCoMo, {'context + question' if form == 'long' else 'question alone'}",
                    _limit(en, args),
                    recall,
                    True,
                    pair=f"long-en-{other}" if other else "",
                )
            )
            out.append(
                Dataset(
                    f"long-zh-{form}",
                    f"Chinese set, {'context + question' if form == 'long' else 'question alone'}",
                    _limit(zh, args),
                    recall,
                    False,
                    pair=f"long-zh-{other}" if other else "",
                )
            )
    if "noanswer" in wanted:
        both = noanswer(s)
        groups = ("adversarial", "off-topic en", "off-topic zh")
        en = [c for c in both if not c.name.startswith("zh-")]
        zh = [c for c in both if c.name.startswith("zh-")]
        out.append(Dataset("noanswer-en", "No answer stored, LoCoMo stores", _limit(en, args), ("R@5",), True, groups))
        out.append(
            Dataset("noanswer-zh", "No answer stored, Chinese stores", _limit(zh, args), ("R@5",), False, groups)
        )
    for key, title, source in (
        ("shapes-locomo", "LoCoMo, every query shape", "locomo"),
        ("shapes-zh", "Chinese set + 566 distractors, every query shape", "zh"),
        ("shapes-realtalk", "REALTALK (never tuned on), every query shape", "realtalk"),
    ):
        if key in wanted:
            path = Path(args.realtalk) if source == "realtalk" and args.realtalk else None
            if source == "realtalk" and path is None:
                raise SystemExit("--dataset shapes-realtalk needs --realtalk PATH")
            corpora = _limit(shapes(source, s, path), args)
            out.append(Dataset(key, title, corpora, ("R@5", "MRR@10"), source != "zh", shaped=True))
    if "madial" in wanted:
        if not args.madial:
            raise SystemExit("--dataset madial needs --madial PATH (see BENCHMARKS.md for how to fetch it)")
        for lang in ("zh", "en"):
            corpora = _limit(madial(Path(args.madial), lang), args)
            title = f"MADial-Bench {lang} (never tuned on; every query, whatever the split)"
            out.append(Dataset(f"madial-{lang}", title, corpora, ("R@5", "MRR@10"), False, shaped=True))
    if "realtalk" in wanted:
        if not args.realtalk:
            raise SystemExit("--dataset realtalk needs --realtalk PATH (see BENCHMARKS.md for how to fetch it)")
        out.append(
            Dataset(
                "realtalk", "REALTALK (never tuned on)", _limit(realtalk(Path(args.realtalk), s), args), recall, True
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# Retrievers


def _factories(
    names: Sequence[str],
    segmenter: Segmenter,
    server: PgServer | None,
    semantic_wait: str = "require",
    load: str = "remember",
) -> list[Callable[[], Retriever]]:
    known: dict[str, Callable[[], Retriever]] = {
        "fts5": PlainFts5,
        "trigram": TrigramFts5,
        "jieba": JiebaFts5,
        "dense": DenseE5,
        "kw": lambda: OursTools("ours keyword-only (stdio)", {"MCP_MEMORY_SEMANTIC": "off"}, load=load),
        "hybrid": lambda: OursTools("ours hybrid (stdio)", {}, semantic_wait=semantic_wait, load=load),
    }
    factories: list[Callable[[], Retriever]] = []
    for name in names:
        base, *options = name.split("-")
        if base in ("ours", "stdio"):
            if set(options) - {"pg", "remember"}:
                raise SystemExit(f"unknown retriever {name!r}: ours and stdio take -pg and -remember")
            kind = OursInProcess if base == "ours" else OursStdio
            pg, remember = server if "pg" in options else None, "remember" in options

            def make(
                kind: type[OursInProcess | OursStdio] = kind, pg: PgServer | None = pg, r: bool = remember
            ) -> Retriever:
                return kind(segmenter, server=pg, remember=r)

            factories.append(make)
            continue
        if name == "official":
            from .official import OfficialServer

            if OfficialServer.available():
                factories.append(OfficialRetriever)
            else:
                print("(skipping the official server: npx is not available)")
            continue
        if name not in known:
            raise SystemExit(f"unknown retriever {name!r}")
        factories.append(known[name])
    return factories


# ---------------------------------------------------------------------------------------------
# Reports


def _fmt(estimate: tuple[float, float, float], signed: bool = False) -> str:
    value, low, high = estimate
    if math.isnan(value):
        return "—"
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(value)} ({f.format(low)}…{f.format(high)})"


def summarise(dataset: Dataset, runs: Sequence[Run]) -> dict[str, Any]:
    """Every retriever's point estimates and intervals, and ours minus the best anchor."""
    out: dict[str, Any] = {
        "title": dataset.title,
        "stores": len(dataset.corpora),
        "memories": sum(len(c.memories) for c in dataset.corpora),
        "queries": sum(len(c.queries) for c in dataset.corpora),
        "resampled": "stores" if dataset.by_store else "queries",
        "retrievers": {},
        "ours_minus_best_anchor": {},
    }
    answerable = {q.group for c in dataset.corpora for q in c.queries if q.relevant}
    for run in runs:
        row: dict[str, Any] = {"groups": {g: s.row() for g, s in run.scores.items()}, "notes": run.notes}
        for metric in dataset.metrics:
            row[metric] = bootstrap([run.records], metric, answerable, dataset.by_store)
        for group in dataset.empty_groups:
            row[f"empty {group}"] = bootstrap([run.records], "empty", {group}, dataset.by_store)
        out["retrievers"][run.name] = row
    anchors = [r for r in runs if r.name in ANCHORS or r.name.startswith("official")]
    ours = [r for r in runs if r.name.startswith("ours")]
    for metric in dataset.metrics:
        if not anchors:
            break
        best = max(anchors, key=lambda r: out["retrievers"][r.name][metric][0])
        for run in ours:
            diff = bootstrap([run.records, best.records], metric, answerable, dataset.by_store, (1.0, -1.0))
            out["ours_minus_best_anchor"].setdefault(run.name, {})[metric] = {"anchor": best.name, "diff": diff}
    return out


def _named(runs: Sequence[Run], prefix: str) -> Run | None:
    return next((r for r in runs if r.name.startswith(prefix)), None)


def margins(dataset: Dataset, runs: Sequence[Run]) -> dict[str, Any]:
    """Per query group: each retriever's R@5 and MRR@10, hybrid − the better of its parts
    (keyword-only and dense alone, the better by point estimate, paired over the same units) and
    keyword-only − untuned jieba + FTS5, with 95 % intervals."""
    groups = sorted({q.group for c in dataset.corpora for q in c.queries if q.relevant})
    hybrid, kw = _named(runs, "ours hybrid"), _named(runs, "ours keyword-only")
    dense, jieba = _named(runs, "dense e5"), _named(runs, "jieba")
    out: dict[str, Any] = {}
    for group in groups:
        row: dict[str, Any] = {
            "n": sum(1 for c in dataset.corpora for q in c.queries if q.group == group and q.relevant)
        }
        for run in runs:
            row[run.name] = {m: bootstrap([run.records], m, {group}, dataset.by_store) for m in dataset.metrics}
        for metric in dataset.metrics:
            parts = [p for p in (kw, dense) if p is not None]
            if hybrid is not None and parts:
                best = max(parts, key=lambda p: row[p.name][metric][0])
                diff = bootstrap([hybrid.records, best.records], metric, {group}, dataset.by_store, (1.0, -1.0))
                row.setdefault("hybrid − max(parts)", {})[metric] = {"diff": diff, "part": best.name}
            if kw is not None and jieba is not None:
                diff = bootstrap([kw.records, jieba.records], metric, {group}, dataset.by_store, (1.0, -1.0))
                row.setdefault("keyword-only − jieba", {})[metric] = {"diff": diff}
        out[group] = row
    return out


def _margin_cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "—"
    text = _fmt(tuple(cell["diff"]), signed=True)
    return f"**{text} NEGATIVE**" if cell["diff"][0] < 0 else text


def margins_markdown(dataset: Dataset, table: dict[str, Any], runs: Sequence[Run]) -> str:
    names = [r.name for r in runs]
    metrics = list(dataset.metrics)
    head = " | ".join(f"{n} {m}" for n in names for m in metrics)
    lines = [
        f"##### {dataset.title}: by query shape",
        "",
        f"| shape | n | {head} | hybrid − max(parts) {' | hybrid − max(parts) '.join(metrics)}"
        f" | keyword-only − jieba {metrics[0]} |",
        "|---|---|" + "---|" * (len(names) * len(metrics) + len(metrics) + 1),
    ]
    for group, row in table.items():
        cells = [f"{row[n][m][0]:.3f}" for n in names for m in metrics]
        margin = row.get("hybrid − max(parts)", {})
        kw_minus = row.get("keyword-only − jieba", {})
        lines.append(
            f"| {group} | {row['n']} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(_margin_cell(margin.get(m)) for m in metrics)
            + f" | {_margin_cell(kw_minus.get(metrics[0]))} |"
        )
    return "\n".join(lines)


def markdown(dataset: Dataset, summary: dict[str, Any], paired: dict[str, Any] | None = None) -> str:
    metrics = list(dataset.metrics) + [f"empty {g}" for g in dataset.empty_groups]
    lines = [
        f"#### {summary['title']}: {summary['stores']} stores, {summary['memories']:,} memories,"
        f" {summary['queries']:,} queries (95 % intervals over {summary['resampled']})",
        "",
        "| retriever | " + " | ".join(metrics) + " | p50 ms |",
        "|---|" + "---|" * (len(metrics) + 1),
    ]
    for name, row in summary["retrievers"].items():
        cells = [_fmt(tuple(row[m])) for m in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {row['groups']['all']['p50_ms']:.2f} |")
    for name, diffs in summary["ours_minus_best_anchor"].items():
        cells = [
            f"{_fmt(tuple(diffs[m]['diff']), signed=True)} vs {diffs[m]['anchor']}" if m in diffs else ""
            for m in metrics
        ]
        lines.append(f"| {name} − best anchor | " + " | ".join(cells) + " | |")
    if paired:
        for name, diffs in paired.items():
            cells = [_fmt(tuple(diffs[m]), signed=True) if m in diffs else "" for m in metrics]
            lines.append(f"| {name}: context + question − question alone | " + " | ".join(cells) + " | |")
    return "\n".join(lines)


def plain(summary: dict[str, Any], metrics: Sequence[str]) -> str:
    lines = [
        f"{summary['title']}: {summary['stores']} stores, {summary['memories']:,} memories,"
        f" {summary['queries']:,} queries"
    ]
    for name, row in summary["retrievers"].items():
        shown = "  ".join(f"{m} {_fmt(tuple(row[m]))}" for m in metrics if m in row)
        lines.append(f"  {name:32} {shown}  p50 {row['groups']['all']['p50_ms']:.2f} ms")
    return "\n".join(lines)


def machine() -> str:
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout.splitlines()
            if line.startswith("Model name")
        )
    except (OSError, StopIteration):
        model = platform.processor()
    return f"{model}, {platform.machine()}, Python {platform.python_version()}"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    segmenter = Segmenter(OursInProcess(Segmenter(None)).segmenter_cache())
    await segmenter.wait()
    names = [n.strip() for n in args.retrievers.split(",") if n.strip()]
    report: dict[str, Any] = {"machine": machine(), "split": args.split, "resamples": RESAMPLES, "seed": SEED}
    with contextlib.ExitStack() as stack:
        server = None
        if any("-pg" in name for name in names):
            from tests import pg_server  # the tests' throwaway cluster (fsync off)

            server = stack.enter_context(pg_server.running())
            report["postgresql"] = server.url().rsplit("/", 1)[0] + " (tests/pg_server.py, fsync off)"
        all_runs: dict[str, list[Run]] = {}
        for dataset in datasets(args):
            started = time.perf_counter()
            runs = [
                await evaluate_run(make, dataset.corpora)
                for make in _factories(names, segmenter, server, args.semantic_wait, args.load)
            ]
            all_runs[dataset.key] = runs
            summary = summarise(dataset, runs)
            summary["seconds"] = time.perf_counter() - started
            paired: dict[str, Any] = {}
            if dataset.key.endswith("-last"):  # compare with the long form, query by query
                longer = all_runs.get(dataset.key.replace("-last", "-long"), [])
                for mine, other in zip(runs, longer, strict=False):
                    paired[mine.name] = {
                        m: bootstrap([other.records, mine.records], m, None, dataset.by_store, (1.0, -1.0))
                        for m in dataset.metrics
                    }
                summary["long_minus_last"] = paired
            report[dataset.key] = summary
            print(
                markdown(dataset, summary, paired)
                if args.markdown
                else plain(summary, [*dataset.metrics, *(f"empty {g}" for g in dataset.empty_groups)])
            )
            if dataset.shaped:
                summary["by_shape"] = margins(dataset, runs)
                print(margins_markdown(dataset, summary["by_shape"], runs))
            for run_ in runs:
                for note in run_.notes[:3]:
                    print(f"    ({run_.name}) {note}")
            for line in agreement([(r.name, r.scores) for r in runs]):
                print(line)
            print(f"({summary['seconds']:.0f} s)\n", flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--dataset",
        default="heldout",
        help="comma-separated: locomo, chinese, crosslang, long, noanswer, realtalk; heldout/all = every one",
    )
    parser.add_argument(
        "--split", choices=["dev", "test", "all"], default="test", help="half of every set (benchmarks/splits.py)"
    )
    parser.add_argument("--retrievers", default="fts5,trigram,jieba,dense,kw,hybrid,official")
    parser.add_argument("--corpora", type=int, default=None, help="only the first N stores of each set")
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries of each store")
    parser.add_argument("--realtalk", help="REALTALK: a checkout, its data/ folder, or the git directory fetched")
    parser.add_argument("--madial", help="MADial-Bench: a checkout or the git directory fetched")
    parser.add_argument(
        "--semantic-wait",
        choices=["require", "optional"],
        default="require",
        help="hybrid: fail (require) or go on (optional) when the server reports no embedding progress",
    )
    parser.add_argument(
        "--load",
        choices=["remember", "import"],
        default="remember",
        help="kw/hybrid: one remember call per memory, or the bulk import before the server starts",
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables with intervals")
    parser.add_argument("--json", help="also write the results as JSON")
    args = parser.parse_args()
    report = anyio.run(run, args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()


__all__ = ["Query", "Record", "Run", "Scores", "bootstrap", "chinese", "evaluate", "evaluate_run", "locomo", "main"]
