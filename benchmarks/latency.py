"""Recall latency and remember throughput at a given store size, in-process and over stdio.

    python -m benchmarks.latency [--size 1000] [--queries 200]

Memories are real conversation turns (LoCoMo in English, MemoryBank in Chinese, half each);
queries are LoCoMo questions and MemoryBank user messages.
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
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.service import MemoryService
from mcp_memory_server.store import Store

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


async def run(size: int, queries: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Config.from_env({}, db_path=Path(tmp) / "bench.db", cache_dir=Path(tmp) / "cache")
        segmenter = Segmenter(config.cache_dir)
        await segmenter.wait()
        texts = _corpus(size)
        async with Store(config, segmenter) as store:
            service = MemoryService(store)
            single = min(size, 300)
            started = time.perf_counter()
            for i, text in enumerate(texts[:single]):
                await service.remember(content=text[:2000], category="fact" if i % 3 else "preference")
            single_rate = single / (time.perf_counter() - started)
            started = time.perf_counter()
            rest = [{"content": t[:2000], "category": "fact"} for t in texts[single:]]
            for start in range(0, len(rest), 5000):
                await service.import_memories(rest[start : start + 5000])
            bulk_rate = len(rest) / max(time.perf_counter() - started, 1e-9) if rest else 0.0
            await service.recall(query="warm up")  # builds the in-memory index once
            timings = []
            for query in _queries(queries):
                t = time.perf_counter()
                await service.recall(query=query)
                timings.append(time.perf_counter() - t)
                await store.flush()  # access tracking is written after the answer; not part of latency
        print(f"store size {size:,}: remember {single_rate:,.0f}/s one call at a time; bulk import {bulk_rate:,.0f}/s")
        print(f"recall in-process: p50 {_pct(timings, 0.5):.2f} ms, p95 {_pct(timings, 0.95):.2f} ms")

        command = shutil.which("mcp-memory-server", path=str(Path(sys.executable).parent))
        assert command
        env = {**os.environ, "MCP_MEMORY_DB": str(config.db_path), "MCP_MEMORY_CACHE_DIR": str(config.cache_dir)}
        async with Client(StdioServerParameters(command=command, args=["--log-level", "ERROR"], env=env)) as client:
            await client.call_tool("recall", {"query": "warm up"})
            timings = []
            for query in _queries(queries):
                t = time.perf_counter()
                result = await client.call_tool("recall", {"query": query})
                timings.append(time.perf_counter() - t)
                assert not result.is_error
        print(f"recall over stdio:  p50 {_pct(timings, 0.5):.2f} ms, p95 {_pct(timings, 0.95):.2f} ms")
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    anyio.run(run, args.size, args.queries)


if __name__ == "__main__":
    main()
