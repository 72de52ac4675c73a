"""Offline ranking of the features `benchmarks.retrieval_lab collect` records: each fusion and
abstention variant as a pure function of one query's parts, scored per (source, shape, language)
set, with the weight chosen leave-one-source-out. See benchmarks/retrieval_lab.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .retrieval_lab import Collected, Features, StoreInfo

Ranker = Callable[[Features, StoreInfo], list[int]]  # seqs, best first (at most 10)
SOURCES = ("locomo", "zh", "crosslang")
# The answerable shapes; "filler" is the older protocol (unrelated context before a question).
SHAPES = ("question", "keywords", "conversation", "filler")


def set_name(f: Features) -> str:
    return f"{f.source}/{f.shape}/{f.lang}"


def metrics(ranked: Sequence[int], relevant: frozenset[int]) -> tuple[float, float]:
    r5 = len(set(ranked[:5]) & relevant) / len(relevant)
    mrr = next((1 / (i + 1) for i, s in enumerate(ranked[:10]) if s in relevant), 0.0)
    return r5, mrr


def evaluate(
    data: Collected, ranker: Ranker, queries: Iterable[Features] | None = None
) -> dict[str, tuple[float, float, int]]:
    """(R@5, MRR@10, n) per answerable set."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for f in queries if queries is not None else data.queries:
        if not f.relevant:
            continue
        ranked = [seq for seq in ranker(f, data.stores[f.store]) if seq not in f.exclude]
        r5, mrr = metrics(ranked, f.relevant)
        cell = sums[set_name(f)]
        cell[0] += r5
        cell[1] += mrr
        cell[2] += 1
    return {k: (v[0] / v[2], v[1] / v[2], int(v[2])) for k, v in sorted(sums.items())}


def empty_share(data: Collected, answers: Callable[[Features, StoreInfo], bool]) -> dict[str, tuple[float, int]]:
    """Share of unanswerable queries (off-topic, adversarial) answered with nothing, per set."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for f in data.queries:
        if f.relevant:
            continue
        cell = sums[f"{f.source}/{f.shape}/{f.lang}"]
        cell[0] += 0.0 if answers(f, data.stores[f.store]) else 1.0
        cell[1] += 1
    return {k: (v[0] / v[1], int(v[1])) for k, v in sorted(sums.items())}


# ---- the parts -----------------------------------------------------------------------------


def top_k(values: Any, k: int) -> Any:
    if len(values) <= k:
        return np.argsort(-values, kind="stable")
    part = np.argpartition(-values, k - 1)[:k]
    return part[np.argsort(-values[part], kind="stable")]


def kw_array(f: Features, s: StoreInfo, feedback: bool = False) -> Any:
    """BM25 per store position (0 where the memory is not a keyword candidate)."""
    pos = {int(x): i for i, x in enumerate(s.seqs.tolist())} if not hasattr(s, "_pos") else s._pos  # type: ignore[attr-defined]
    s._pos = pos  # type: ignore[attr-defined]
    out = np.zeros(s.size, dtype=np.float64)
    for seq, raw in (f.kw_fb if feedback else f.kw).items():
        out[pos[seq]] = raw
    return out


def dense(variant: str = "whole") -> Ranker:
    def rank(f: Features, s: StoreInfo) -> list[int]:
        return [int(s.seqs[i]) for i in top_k(f.cos[variant], 10 + len(f.exclude))]

    return rank


def keyword_only(feedback: bool = True, floor: float = 0.1, category: bool = True) -> Ranker:
    def rank(f: Features, s: StoreInfo) -> list[int]:
        kw = np.minimum(1.0, kw_array(f, s, feedback) / f.full) if f.full > 0 else np.zeros(s.size)
        score = 0.4 * kw + (0.2 * s.category if category else 0.0)
        score = np.where(kw > (floor if s.size >= 20 else 0.0), score, -1.0)
        order = [i for i in top_k(score, 10) if score[i] >= 0]
        return [int(s.seqs[i]) for i in order]

    return rank


def hybrid_old(f: Features, s: StoreInfo) -> list[int]:
    """As shipped: 50 + 50 candidates, 0.5 keyword (absolute) + 0.5 cosine on 0.78-0.90, floor 0.275."""
    kw = np.minimum(1.0, kw_array(f, s, True) / f.full) if f.full > 0 else np.zeros(s.size)
    cos = f.cos["question"]
    cand = set(top_k(kw, 50).tolist()) | set(top_k(cos, 50).tolist())
    cand = {i for i in cand if kw[i] > 0 or i in set(top_k(cos, 50).tolist())}
    sem = np.clip((cos - 0.78) / 0.12, 0, 1)
    rel = 0.5 * kw + 0.5 * sem
    score = 0.4 * rel + 0.2 * s.category
    order = sorted((i for i in cand if rel[i] >= 0.275 and np.isfinite(cos[i])), key=lambda i: -score[i])
    return [int(s.seqs[i]) for i in order[: 10 + len(f.exclude)]]


def query_cos(f: Features, how: str) -> Any:
    """The query's cosines under one query-vector variant: a single variant's name, or
    "max:a+b" / "mean:a+b" of several."""
    if ":" not in how:
        return f.cos[how]
    op, names = how.split(":")
    stack = np.stack([f.cos[n] for n in names.split("+")])
    return stack.max(axis=0) if op == "max" else stack.mean(axis=0)


def fused(
    weight: float,
    norm: str = "minmax",
    vec: str = "whole",
    pool: int = 50,
    category: bool = True,
    feedback: bool = False,
    rrf_k: float = 60.0,
) -> Ranker:
    """The candidates of both parts (`pool` each), each part normalised per query over them,
    blended with `weight` on the keyword part."""

    def rank(f: Features, s: StoreInfo) -> list[int]:
        kw = kw_array(f, s, feedback)
        cos = query_cos(f, vec)
        finite = np.isfinite(cos)
        kc = [i for i in top_k(kw, pool).tolist() if kw[i] > 0]
        dc = top_k(np.where(finite, cos, -9.0), pool).tolist()
        cand = np.array(sorted(set(kc) | set(dc)), dtype=np.int64)
        if cand.size == 0:
            return []
        k, c = kw[cand], np.where(finite[cand], cos[cand], np.nan)
        cmin = np.nanmin(c)
        c = np.where(np.isnan(c), cmin, c)
        if norm == "minmax":
            kn = (k - k.min()) / (k.max() - k.min()) if k.max() > k.min() else np.zeros_like(k)
            cn = (c - c.min()) / (c.max() - c.min()) if c.max() > c.min() else np.zeros_like(c)
        elif norm == "max":  # theoretical minimum: 0 for BM25, the store's mean cosine for the query
            mu = float(np.mean(cos[finite]))
            kn = k / k.max() if k.max() > 0 else np.zeros_like(k)
            cn = np.clip((c - mu) / (c.max() - mu), 0, None) if c.max() > mu else np.zeros_like(c)
        elif norm == "z":
            kn = (k - k.mean()) / (k.std() or 1.0)
            cn = (c - c.mean()) / (c.std() or 1.0)
        elif norm == "zstore":  # cosine against the store's distribution, keyword over candidates
            mu, sd = float(np.mean(cos[finite])), float(np.std(cos[finite])) or 1.0
            kn = (k - k.mean()) / (k.std() or 1.0)
            cn = (c - mu) / sd
        elif norm == "rrf":
            kr = np.empty(len(cand))
            kr[np.argsort(-k, kind="stable")] = np.arange(len(cand))
            cr = np.empty(len(cand))
            cr[np.argsort(-c, kind="stable")] = np.arange(len(cand))
            kn = np.where(k > 0, 1 / (rrf_k + kr), 0.0) * rrf_k
            cn = 1 / (rrf_k + cr) * rrf_k
        else:
            raise ValueError(norm)
        rel = weight * kn + (1 - weight) * cn
        if norm in ("z", "zstore"):
            rel = (rel - rel.min()) / (rel.max() - rel.min()) if rel.max() > rel.min() else np.zeros_like(rel)
        score = 0.4 * rel + (0.2 * s.category[cand] if category else 0.0)
        order = np.argsort(-score, kind="stable")[:10]
        return [int(s.seqs[cand[i]]) for i in order]

    return rank


# ---- reports -------------------------------------------------------------------------------


def table(data: Collected, rankers: dict[str, Ranker], metric: int = 0) -> dict[str, dict[str, float]]:
    results = {name: evaluate(data, r) for name, r in rankers.items()}
    sets = sorted({k for res in results.values() for k in res})
    width = max(len(n) for n in rankers)
    print(f"{'set':<34} {'n':>4} " + " ".join(f"{n:>{max(7, len(n))}}" for n in rankers))
    for k in sets:
        n = next(res[k][2] for res in results.values() if k in res)
        cells = " ".join(
            f"{results[name].get(k, (float('nan'),) * 2)[metric]:>{max(7, len(name))}.3f}" for name in rankers
        )
        print(f"{k:<34} {n:>4} {cells}")
    del width
    return {name: {k: v[metric] for k, v in res.items()} for name, res in results.items()}


def loso(data: Collected, make: Callable[[float], Ranker], grid: Sequence[float], anchors: dict[str, Ranker]) -> None:
    """For each source: the weight that does best on the other sources (mean over their sets of
    min(R@5 - best part R@5, MRR - best part MRR)), and what it gives on the held-out source."""
    parts = {name: evaluate(data, r) for name, r in anchors.items()}
    by_w = {w: evaluate(data, make(w)) for w in grid}

    def margin(res: dict[str, tuple[float, float, int]], keys: Iterable[str]) -> float:
        out = []
        for k in keys:
            best5 = max(p[k][0] for p in parts.values() if k in p)
            bestm = max(p[k][1] for p in parts.values() if k in p)
            out.append(min(res[k][0] - best5, res[k][1] - bestm))
        return float(np.mean(out)) if out else 0.0

    keys = sorted(next(iter(by_w.values())))
    for held in SOURCES:
        train = [k for k in keys if not k.startswith(held + "/")]
        test = [k for k in keys if k.startswith(held + "/")]
        w = max(grid, key=lambda w: margin(by_w[w], train))
        print(
            f"  hold out {held:<10} chosen w={w:.2f}: train margin {margin(by_w[w], train):+.3f},"
            f" held-out {margin(by_w[w], test):+.3f}"
            f" (best on held-out w={max(grid, key=lambda x: margin(by_w[x], test)):.2f})"
        )


def study(data: Collected) -> None:
    anchors = {"kw": keyword_only(), "dense": dense("whole")}
    table(
        data, {**anchors, "old": hybrid_old, "mm.5": fused(0.5), "max.5": fused(0.5, "max"), "rrf.5": fused(0.5, "rrf")}
    )
