"""Retrieval quality: ours against baselines on LoCoMo (English) and our labelled Chinese set.

    python -m benchmarks.retrieval [--dataset locomo|chinese|all] [--retrievers ours,stdio,fts5,trigram,official]
                                   [--corpora N] [--json FILE]

Recall@k is the share of a query's relevant memories found in the top k, averaged over queries;
NDCG@10 uses binary gains; MRR@10 is the reciprocal rank of the first relevant hit. Latency is
per query, around the search call only.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio

from mcp_memory_server.segmenter import Segmenter

from .data import Corpus, Query, chinese, locomo
from .retrievers import OfficialRetriever, OursInProcess, OursStdio, PlainFts5, Retriever, TrigramFts5

K = 10


@dataclass
class Scores:
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    ndcg: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], relevant: frozenset[str], seconds: float) -> None:
        self.r5.append(len(set(ranked[:5]) & relevant) / len(relevant))
        self.r10.append(len(set(ranked[:10]) & relevant) / len(relevant))
        dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:K]) if doc in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
        self.ndcg.append(dcg / ideal)
        self.mrr.append(next((1 / (i + 1) for i, doc in enumerate(ranked[:K]) if doc in relevant), 0.0))
        self.latency.append(seconds)

    def row(self) -> dict[str, float]:
        lat = sorted(self.latency)

        def mean(xs: list[float]) -> float:
            return sum(xs) / len(xs) if xs else 0.0

        return {
            "n": len(self.r5),
            "R@5": mean(self.r5),
            "R@10": mean(self.r10),
            "NDCG@10": mean(self.ndcg),
            "MRR@10": mean(self.mrr),
            "p50_ms": lat[len(lat) // 2] * 1000 if lat else 0.0,
            "p95_ms": lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000 if lat else 0.0,
        }


async def evaluate(make: Callable[[], Retriever], corpora: Sequence[Corpus]) -> tuple[str, dict[str, Scores]]:
    """Scores overall ("all") and per query group."""
    scores: dict[str, Scores] = defaultdict(Scores)
    name = ""
    for corpus in corpora:
        retriever = make()
        name = retriever.name
        await retriever.open(corpus.memories)
        try:
            for query in corpus.queries:
                started = time.perf_counter()
                ranked = await retriever.search(query.text, K)
                elapsed = time.perf_counter() - started
                for group in ("all", query.group):
                    scores[group].add(ranked, query.relevant, elapsed)
        finally:
            await retriever.close()
    return name, scores


def _table(title: str, results: list[tuple[str, dict[str, Scores]]], groups: Sequence[str]) -> str:
    lines = [
        f"### {title}",
        "",
        "| retriever | group | n | R@5 | R@10 | NDCG@10 | MRR@10 | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, scores in results:
        for group in groups:
            if group not in scores:
                continue
            r = scores[group].row()
            lines.append(
                f"| {name} | {group} | {r['n']:.0f} | {r['R@5']:.3f} | {r['R@10']:.3f} | {r['NDCG@10']:.3f} | "
                f"{r['MRR@10']:.3f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} |"
            )
    return "\n".join(lines)


def _factories(names: Sequence[str], segmenter: Segmenter) -> list[Callable[[], Retriever]]:
    known: dict[str, Callable[[], Retriever]] = {
        "ours": lambda: OursInProcess(segmenter),
        "stdio": lambda: OursStdio(segmenter),
        "fts5": PlainFts5,
        "trigram": TrigramFts5,
    }
    factories = []
    for name in names:
        if name == "official":
            try:
                from .official import OfficialServer
            except ImportError:
                print("(skipping the official server: benchmarks/official.py is missing)")
                continue
            if OfficialServer.available():
                factories.append(OfficialRetriever)
            else:
                print("(skipping the official server: npx is not available)")
            continue
        factories.append(known[name])
    return factories


async def run(args: argparse.Namespace) -> dict[str, object]:
    segmenter = Segmenter(OursInProcess(Segmenter(None)).segmenter_cache())
    await segmenter.wait()
    names = [n.strip() for n in args.retrievers.split(",") if n.strip()]
    report: dict[str, object] = {"machine": f"{platform.machine()}, Python {platform.python_version()}"}
    datasets: list[tuple[str, list[Corpus], list[str]]] = []
    if args.dataset in ("locomo", "all"):
        datasets.append(
            ("LoCoMo", locomo()[: args.corpora], ["all", "single-hop", "multi-hop", "temporal", "open-domain"])
        )
    if args.dataset in ("chinese", "all"):
        corpora = chinese()[: args.corpora]
        kinds = sorted({q.group for c in corpora for q in c.queries})
        datasets.append(("Chinese", corpora, ["all", *kinds]))
    for title, corpora, groups in datasets:
        results = []
        for make in _factories(names, segmenter):
            results.append(await evaluate(make, corpora))
        queries = sum(len(c.queries) for c in corpora)
        memories = sum(len(c.memories) for c in corpora)
        print(_table(f"{title}: {len(corpora)} stores, {memories:,} memories, {queries:,} queries", results, groups))
        print()
        report[title] = {name: {g: s.row() for g, s in scores.items()} for name, scores in results}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=["locomo", "chinese", "all"], default="all")
    parser.add_argument("--retrievers", default="ours,stdio,fts5,trigram,official")
    parser.add_argument("--corpora", type=int, default=None, help="only the first N stores of each dataset")
    parser.add_argument("--json", help="also write the results as JSON")
    args = parser.parse_args()
    report = anyio.run(run, args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()


__all__ = ["Query", "Scores", "evaluate", "main"]
