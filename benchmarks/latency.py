"""Speed at several store sizes: recall latency in-process and over stdio, remember throughput
(one at a time and bulk), the stdio server's peak RSS, a no-op tool's round trip on the same SDK,
and the official reference server's `search_nodes` on the same memories.

    python -m benchmarks.latency [--sizes 1000,10000,100000] [--queries 200] [--official]

Memories are real conversation turns (LoCoMo in English, MemoryBank in Chinese, alternating);
queries are LoCoMo questions and MemoryBank user messages. Access tracking is on; it is written
after each answer, so it is not part of the measured latency.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .data import locomo_questions, locomo_turns, memorybank_turns


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
    timings = []
    for query in _queries(queries):
        t = time.perf_counter()
        await service.recall(query=query)
        timings.append(time.perf_counter() - t)
    row["inproc_p50"], row["inproc_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)


async def run_size(size: int, queries: int, official: bool, segmenter: Segmenter, tmp: Path) -> dict[str, float]:
    config = Config.from_env({}, db_path=tmp / f"bench-{size}.db", cache_dir=Path(segmenter_cache()))
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

    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first"
    env = {**os.environ, "MCP_MEMORY_CACHE_DIR": str(config.cache_dir), "MCP_MEMORY_LOG_LEVEL": "ERROR"}
    params = StdioServerParameters(command=command, args=["--db", str(config.db_path)], env=env)
    async with Client(params) as client:
        await client.call_tool("recall", {"query": "warm up"})
        timings = await _timed_calls(client, "recall", [{"query": q} for q in _queries(queries)])
        row["stdio_p50"], row["stdio_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)
        row["server_rss_mb"] = _peak_rss_mb(str(config.db_path))

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


def segmenter_cache() -> str:
    return os.environ.get("MCP_MEMORY_CACHE_DIR", str(Path(tempfile.gettempdir()) / "mms-bench-cache"))


async def run(args: argparse.Namespace) -> None:
    segmenter = Segmenter(Path(segmenter_cache()))
    await segmenter.wait()
    noop = await noop_round_trip(args.queries)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"no-op tool round trip over stdio (same SDK): p50 {_pct(noop, 0.5):.2f} ms, p95 {_pct(noop, 0.95):.2f} ms")
    header = (
        "| memories | recall in-process p50 / p95 | recall stdio p50 / p95 | stdio / no-op | first recall |"
        " remember / s | bulk import / s | server peak RSS |"
    )
    if args.official:
        header += " official search_nodes p50 / p95 | official / ours (stdio p50) |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    with tempfile.TemporaryDirectory(prefix="mms-latency-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            r = await run_size(size, args.queries, args.official, segmenter, Path(tmp))
            line = (
                f"| {size:,} | {r['inproc_p50']:.2f} / {r['inproc_p95']:.2f} ms | {r['stdio_p50']:.2f} / "
                f"{r['stdio_p95']:.2f} ms | {r['stdio_p50'] / _pct(noop, 0.5):.1f}x | {r['first_recall_ms']:.0f} ms |"
                f" {r['remember_per_s']:,.0f} | {r['bulk_per_s']:,.0f} | {r['server_rss_mb']:.0f} MB |"
            )
            if args.official:
                line += (
                    f" {r['official_p50']:.1f} / {r['official_p95']:.1f} ms |"
                    f" {r['official_p50'] / r['stdio_p50']:.1f}x |"
                )
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--official", action="store_true", help="also time the official reference server")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
