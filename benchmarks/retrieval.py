"""Retrieval quality: ours against baselines on LoCoMo (English) and our labelled Chinese set.

    python -m benchmarks.retrieval [--dataset locomo|chinese|all] [--retrievers ours,stdio,fts5,trigram,official]
                                   [--corpora N] [--json FILE]

`ours` and `stdio` take suffixes: `-pg` stores the corpus in PostgreSQL (a throwaway cluster of
tests/pg_server.py, one new database per store) instead of an SQLite file, `-remember` writes it
with one `remember` call per memory (near-duplicates merged, as a client's writes would be)
instead of the bulk import; e.g. `--retrievers ours,ours-pg,ours-remember,ours-pg-remember`.
When a retriever and its `-pg` twin both run, the queries whose top 10 differ are counted.

Recall@k is the share of a query's relevant memories found in the top k, averaged over queries;
NDCG@10 uses binary gains; MRR@10 is the reciprocal rank of the first relevant hit. Latency is
per query, around the search call only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from mcp_memory_server.text import Segmenter

from .data import Corpus, Query, chinese, locomo
from .retrievers import OfficialRetriever, OursInProcess, OursStdio, PlainFts5, Retriever, TrigramFts5

if TYPE_CHECKING:
    from tests.pg_server import PgServer

K = 10


@dataclass
class Scores:
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    ndcg: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # query id -> top K (group "all")

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
                scores["all"].rankings[query.id] = tuple(ranked[:K])
        finally:
            await retriever.close()
        if getattr(retriever, "remember", False):
            print(f"({name}, {corpus.name}: remember answered {dict(getattr(retriever, 'actions', {}))})")
    return name, scores


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


def _factories(names: Sequence[str], segmenter: Segmenter, server: PgServer | None) -> list[Callable[[], Retriever]]:
    known: dict[str, Callable[[], Retriever]] = {"fts5": PlainFts5, "trigram": TrigramFts5}
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
    with contextlib.ExitStack() as stack:
        server = None
        if any("-pg" in name for name in names):
            from tests import pg_server  # the tests' throwaway cluster (fsync off)

            server = stack.enter_context(pg_server.running())
            report["postgresql"] = server.url().rsplit("/", 1)[0] + " (tests/pg_server.py, fsync off)"
        for title, corpora, groups in datasets:
            results = []
            for make in _factories(names, segmenter, server):
                results.append(await evaluate(make, corpora))
            queries = sum(len(c.queries) for c in corpora)
            memories = sum(len(c.memories) for c in corpora)
            title = f"{title}: {len(corpora)} stores, {memories:,} memories, {queries:,} queries"
            print(_table(title, results, groups))
            print()
            for line in agreement(results):
                print(line)
            print()
            report[title.split(":")[0]] = {name: {g: s.row() for g, s in scores.items()} for name, scores in results}
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
