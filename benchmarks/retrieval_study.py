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
    out = np.zeros(s.size, dtype=np.float64)
    for seq, raw in (f.kw_fb if feedback else f.kw).items():
        out[s.position(seq)] = raw
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

    def one(name: str) -> Any:  # "tail500@0.03": that vector's cosines lowered by 0.03
        variant, _, less = name.partition("@")
        return f.cos[variant] - float(less or 0.0)

    stack = np.stack([one(n) for n in names.split("+")])
    return stack.max(axis=0) if op == "max" else stack.mean(axis=0)


def candidates(f: Features, s: StoreInfo, vec: str, pool: int, feedback: bool) -> tuple[Any, Any, Any, Any]:
    """(BM25 per position, cosines, which have a vector, the candidate positions): the `pool`
    best of each part, united, as recall gathers them."""
    kw = kw_array(f, s, feedback)
    cos = query_cos(f, vec)
    finite = np.isfinite(cos)
    kc = [i for i in top_k(kw, pool).tolist() if kw[i] > 0]
    dc = top_k(np.where(finite, cos, -9.0), pool).tolist()
    return kw, cos, finite, np.array(sorted(set(kc) | set(dc)), dtype=np.int64)


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
        kw, cos, finite, cand = candidates(f, s, vec, pool, feedback)
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

    keys = sorted(k for k in next(iter(by_w.values())) if "/filler/" not in k)
    for held in SOURCES:
        train = [k for k in keys if not k.startswith(held + "/")]
        test = [k for k in keys if k.startswith(held + "/")]
        w = max(grid, key=lambda w: margin(by_w[w], train))
        print(
            f"  hold out {held:<10} chosen w={w:.2f}: train margin {margin(by_w[w], train):+.3f},"
            f" held-out {margin(by_w[w], test):+.3f}"
            f" (best on held-out w={max(grid, key=lambda x: margin(by_w[x], test)):.2f})"
        )


# ---- the shipped rules, replayed on the records ------------------------------------------------


def _scripts(data: Collected, half: str) -> None:
    """Each store's memories' script groups (the records hold seqs; the corpora hold the texts:
    a bulk import numbers them in order)."""
    from mcp_memory_server.text.scripts import script_of

    from .data import chinese_split, crosslang, locomo_split

    corpora = {f"locomo/{c.name}": c for c in locomo_split(half)}
    corpora |= {f"zh/{c.name}": c for c in chinese_split(half)}
    corpora |= {f"crosslang/{c.name}": c for c in crosslang(half)}
    for key, info in data.stores.items():
        corpus = corpora[key]
        assert info.size == len(corpus.memories) and int(info.seqs[0]) == 1 and int(info.seqs[-1]) == info.size
        info.script = np.array([script_of(text) for _, text, _ in corpus.memories])


def _query_script(f: Features) -> int:
    return 0 if f.lang.startswith("en") else 1


def shipped(share: float = 0.6, vec: str = "max:question+tail500", pool: int = 50, whole: float = 0.0) -> Ranker:
    """retrieval/fusion.py on the records: the keyword part on its absolute scale, the semantic
    part from the store's mean to the best candidate, a part that cannot judge a memory leaving
    it to the other, the SPEC 3 category weight. `whole` (tried, not shipped): that share of the
    keyword part from the whole query searched with every sentence alike, on its own scale, its
    `pool` best joining the candidates."""

    def rank(f: Features, s: StoreInfo) -> list[int]:
        raw, cos, finite, cand = candidates(f, s, vec, pool, feedback=True)
        if whole:
            flat = np.zeros(s.size)
            for seq, value in f.kw_flat.items():
                flat[s.position(seq)] = value
            extra = [i for i in top_k(flat, pool).tolist() if flat[i] > 0]
            cand = np.array(sorted(set(cand.tolist()) | set(extra)), dtype=np.int64)
            raw = raw + flat  # only whether a memory holds a query term is read from it below
        if cand.size == 0:
            return []
        k = np.minimum(1.0, kw_array(f, s, True)[cand] / f.full) if f.full > 0 else np.zeros(len(cand))
        if whole:
            whole_k = np.minimum(1.0, flat[cand] / f.full_flat) if f.full_flat > 0 else np.zeros(len(cand))
            k = (1 - whole) * k + whole * whole_k
        mu = float(np.mean(cos[finite]))
        c = np.where(finite[cand], cos[cand], mu)
        gap = c - mu
        best = gap.max()
        d = np.where(gap >= best, 1.0, np.clip(gap / best, 0, 1) if best > 0 else 0.0)
        rel = share * k + (1 - share) * d
        qs, ms = _query_script(f), s.script[cand]
        blind = (raw[cand] == 0) & (((qs == 0) & (ms == 1)) | ((qs == 1) & (ms == 0)))
        rel = np.where(blind, d, rel)
        score = 0.4 * rel + 0.2 * s.category[cand]
        order = np.argsort(-score, kind="stable")[: 10 + len(f.exclude)]
        return [int(s.seqs[cand[i]]) for i in order]

    return rank


def _features(f: Features, s: StoreInfo) -> list[float]:
    """What the relevance decision reads: best keyword part, best gap, best cosine, a Chinese query."""
    raw = kw_array(f, s, feedback=True)
    k = float(np.minimum(1.0, raw / f.full).max()) if f.full > 0 and raw.size else 0.0
    cos = f.cos["question"]
    finite = cos[np.isfinite(cos)]
    return [k, float(finite.max() - finite.mean()), float(finite.max()), float(_query_script(f))]


def fit_decision(rows: Sequence[tuple[list[float], int]]) -> tuple[Any, float]:
    """A class-balanced logistic regression (gradient descent on standardised features)."""
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    w, b = np.zeros(x.shape[1]), 0.0
    weight = np.where(y == 1, 0.5 / max((y == 1).sum(), 1), 0.5 / max((y == 0).sum(), 1))
    for _ in range(4000):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * weight
        w -= z.T @ g + 1e-3 * w
        b -= g.sum()
    return w / sd, b - (w / sd) @ mu


def abstention(data: Collected, ranker: Ranker) -> None:
    """The decision fitted leaving each source out, and the shipped rule: per set, the share of
    off-topic queries answered with nothing, and the R@5 answerable queries lose."""
    rows: list[tuple[Features, list[float], bool]] = []
    for f in data.queries:
        if f.shape == "filler" or (not f.relevant and f.shape != "offtopic"):
            continue
        s = data.stores[f.store]
        found = ranker(f, s)
        r5 = metrics([q for q in found if q not in f.exclude], f.relevant)[0] if f.relevant else 0.0
        rows.append((f, _features(f, s), r5 > 0))

    def report(name: str, decide: Callable[[Features, list[float]], bool], sources: Sequence[str]) -> None:
        cells = defaultdict(list)
        for f, x, _hit in rows:
            if f.source not in sources:
                continue
            answered = decide(f, x)
            if f.relevant:
                s = data.stores[f.store]
                r5 = metrics([q for q in ranker(f, s) if q not in f.exclude], f.relevant)[0]
                cells[set_name(f)].append(0.0 if answered else r5)
            else:
                cells[set_name(f)].append(0.0 if answered else 1.0)
        shown = " ".join(
            f"{k}: {'empty' if 'offtopic' in k else 'cost'} {np.mean(v):.3f}" for k, v in sorted(cells.items())
        )
        print(f"  {name}: {shown}")

    for held in SOURCES:
        train = [(x, 1 if f.relevant else 0) for f, x, hit in rows if f.source != held and (hit or not f.relevant)]
        w, b = fit_decision(train)
        report(f"fitted without {held}", lambda f, x, w=w, b=b: float(np.array(x) @ w + b) >= -1.5, [held])
    w, b = fit_decision([(x, 1 if f.relevant else 0) for f, x, hit in rows if hit or not f.relevant])
    print(f"  fitted on all: weights {np.round(w, 3).tolist()} bias {b:.3f} (bar at -1.5)")

    def rule(f: Features, x: list[float]) -> bool:  # retrieval/relevance.py, as shipped
        k, gap, best, cjk = x
        s = data.stores[f.store]
        top = int(np.argmax(np.where(np.isfinite(f.cos["question"]), f.cos["question"], -9.0)))
        latin_best = int(s.script[top]) == 0
        return best + 0.22 * gap + 0.058 * k >= 0.857 + (0.044 * cjk if not latin_best else 0.0)

    report("shipped rule", rule, SOURCES)


def study(data: Collected, half: str = "dev") -> None:
    _scripts(data, half)
    anchors = {"keyword-only": keyword_only(), "dense alone": dense("whole")}
    print("R@5, then MRR@10, per development set:")
    rankers = {**anchors, "hybrid before": hybrid_old, "hybrid now": shipped()}
    table(data, rankers)
    table(data, rankers, metric=1)
    print(
        "R@5 of what was tried and dropped (both parts normalised over the candidates, rank fusion, one query vector):"
    )
    table(
        data,
        {
            "min-max .5": fused(0.5, "minmax"),
            "z .5": fused(0.5, "z"),
            "rrf .5": fused(0.5, "rrf"),
            "last sentence": shipped(vec="question"),
            "whole query": shipped(vec="whole"),
        },
    )
    print(
        "R@5 and MRR@10 of two more, tried and dropped: the keyword part also from the whole query (every"
        " sentence alike, a share of .3 and .5), and the context vector's cosines lowered by .03 (its"
        " filler costs less):"
    )
    dropped = {
        "shipped": shipped(),
        "whole .3": shipped(whole=0.3),
        "whole .5": shipped(whole=0.5),
        "context -.03": shipped(vec="max:question+tail500@0.03"),
    }
    table(data, dropped)
    table(data, dropped, metric=1)
    print("keyword share, left out per source (margin: the mean over sets of min(R@5, MRR) - the better part's):")
    loso(data, lambda w: shipped(share=w), [0.4, 0.5, 0.6, 0.7], anchors)
    print("the relevance decision:")
    abstention(data, shipped())
