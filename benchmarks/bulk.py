"""Write throughput alone, for quick iteration: bulk import (chunks of 5,000, as in
`benchmarks.latency`) and `remember` one call at a time, on a fresh database.

    python -m benchmarks.bulk [--size 10000] [--remember 300] [--repeat 1] [--profile FILE]

With --profile the import runs under cProfile (written to FILE); with --sql the time spent
inside SQLite statements (measured in the aiosqlite worker thread) is reported separately.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .latency import _corpus, _queries, segmenter_cache


class _SqlTimer:
    """Adds up, per statement, the wall and CPU time spent in aiosqlite's worker thread (SQLite
    itself plus parameter binding) by wrapping the calls aiosqlite hands to that thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}

    def install(self, conn: Any) -> None:
        dispatch = conn._execute
        seconds = self.seconds

        async def timed_dispatch(fn: Any, *args: Any, **kwargs: Any) -> Any:
            label = " ".join(args[0].split()[:4]) if args and isinstance(args[0], str) else fn.__name__

            def timed(*a: Any, **k: Any) -> Any:
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return fn(*a, **k)
                finally:
                    total = seconds.setdefault(label, [0.0, 0.0])
                    total[0] += time.perf_counter() - wall
                    total[1] += time.thread_time() - cpu

            return await dispatch(timed, *args, **kwargs)

        conn._execute = timed_dispatch

    def report(self, rows: int) -> None:
        total = [sum(v[0] for v in self.seconds.values()), sum(v[1] for v in self.seconds.values())]
        for label, (wall, cpu) in sorted(self.seconds.items(), key=lambda kv: -kv[1][1]):
            if cpu * 1e6 / rows >= 0.05:
                print(f"  sql wall {wall * 1e6 / rows:6.1f} cpu {cpu * 1e6 / rows:6.1f} us/row  {label}")
        print(f"  sql wall {total[0] * 1e6 / rows:6.1f} cpu {total[1] * 1e6 / rows:6.1f} us/row  (all statements)")


async def run(args: argparse.Namespace) -> None:
    segmenter = Segmenter(Path(segmenter_cache()))
    await segmenter.wait()
    texts = _corpus(args.size + args.remember)
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="mms-bulk-") as tmp:
            config = Config.from_env({}, db_path=Path(tmp) / "bulk.db", cache_dir=Path(segmenter_cache()))
            async with Store(config, segmenter) as store:
                service = MemoryService(store)
                for pragma in args.pragma:  # e.g. cache_size=-65536 (experiments)
                    await store.conn.execute(f"PRAGMA {pragma}")
                for setting in args.fts:  # e.g. hashsize=1048576 (experiments)
                    name, value = setting.split("=")
                    await store.conn.execute(
                        "INSERT INTO memory_fts (memory_fts, rank) VALUES (?, ?)", (name, int(value))
                    )
                started = time.perf_counter()
                for i, text in enumerate(texts[: args.remember]):
                    await service.remember(content=text[:2000], category="fact" if i % 3 else "preference")
                remember = args.remember / max(time.perf_counter() - started, 1e-9)
                items = [{"content": t[:2000], "category": "fact"} for t in texts[args.remember :]]
                timer = _SqlTimer()
                if args.sql:
                    timer.install(store.conn)
                if args.no_gc:
                    gc.disable()
                profiler = cProfile.Profile() if args.profile else None
                started, cpu, main_cpu = time.perf_counter(), time.process_time(), time.thread_time()
                if profiler:
                    profiler.enable()
                for start in range(0, len(items), 5000):
                    await service.import_memories(items[start : start + 5000])
                if profiler:
                    profiler.disable()
                    profiler.dump_stats(args.profile)
                elapsed = time.perf_counter() - started
                if args.recall:
                    t = time.perf_counter()
                    await service.recall(query="warm up")
                    first = time.perf_counter() - t
                    timings = []
                    for query in _queries(args.recall):
                        t = time.perf_counter()
                        await service.recall(query=query)
                        timings.append(time.perf_counter() - t)
                    timings.sort()
                    print(f"  first recall {first * 1e3:.0f} ms, p50 {timings[len(timings) // 2] * 1e3:.2f} ms")
                cpu, main_cpu = time.process_time() - cpu, time.thread_time() - main_cpu
            size = (Path(tmp) / "bulk.db").stat().st_size
            per_row = 1e6 / len(items)
            print(
                f"run {attempt + 1}: remember {remember:,.0f}/s, bulk {len(items) / elapsed:,.0f}/s ({elapsed:.2f} s;"
                f" CPU {cpu * per_row:.0f} us/row, event loop thread {main_cpu * per_row:.0f}), db {size / 1e6:.1f} MB",
                flush=True,
            )
            if args.sql:
                timer.report(len(items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--remember", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", default="")
    parser.add_argument("--sql", action="store_true")
    parser.add_argument("--recall", type=int, default=0, help="then time the first recall and this many more")
    parser.add_argument("--no-gc", action="store_true", help="import with the cyclic garbage collector off")
    parser.add_argument("--pragma", action="append", default=[], help="a PRAGMA such as cache_size=-65536")
    parser.add_argument("--fts", action="append", default=[], help="an FTS5 setting such as hashsize=1048576")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
