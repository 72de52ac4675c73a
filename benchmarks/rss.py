"""Memory at one store size, quicker than `benchmarks.latency`: the database is built once and kept.

    python -m benchmarks.rss [--size 100000] [--runs 3] [--queries 100] [--dir $TMPDIR/mms-rss]
                             [--inprocess] [--rankings FILE]

Each run spawns the installed `jiyi` over stdio on the kept database, waits for the
first recall (which waits for the index build), answers `--queries` recalls and reads the
server's VmHWM (peak) and VmRSS (now) from /proc. `--inprocess` also times the index build and
recall in this process. `--rankings FILE` writes the index's ranked (seq, score) lists for the
queries, to compare two versions of the index for identical results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import char_queries, keyword_query, keywords, normalize

from .latency import _corpus, _queries, _timed_calls


def _status(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmHWM:", "VmRSS:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _server_pid(marker: str) -> int:
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace") and proc.name != str(os.getpid()):
                return int(proc.name)
        except (OSError, ValueError):
            continue
    raise RuntimeError("server process not found")


async def build(db: Path, cache: Path, size: int) -> None:
    """Fill a database at `db` with `size` memories, as `benchmarks.latency` does."""
    config = Config.from_env({}, db_path=db, cache_dir=cache)
    rows = [{"content": t[:2000], "category": "fact" if i % 3 else "preference"} for i, t in enumerate(_corpus(size))]
    async with Store(config, Segmenter(cache)) as store:
        service = MemoryService(store)
        for start in range(0, len(rows), 5000):
            await service.import_memories(rows[start : start + 5000])


async def serve(db: Path, cache: Path, queries: int, env_extra: dict[str, str]) -> dict[str, float]:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first"
    env = {**os.environ, "MCP_MEMORY_CACHE_DIR": str(cache), "MCP_MEMORY_LOG_LEVEL": "ERROR", **env_extra}
    params = StdioServerParameters(command=command, args=["--db", str(db)], env=env)
    async with Client(params) as client:
        pid = _server_pid(str(db))
        started = time.perf_counter()
        await client.call_tool("recall", {"query": "warm up"})
        first = time.perf_counter() - started
        after_warm = _status(pid)
        timings = await _timed_calls(client, "recall", [{"query": q} for q in _queries(queries)])
        end = _status(pid)
    return {
        "first_s": first,
        "hwm_warm": after_warm["VmHWM"],
        "rss_warm": after_warm["VmRSS"],
        "hwm": end["VmHWM"],
        "rss": end["VmRSS"],
        "stdio_p50_ms": statistics.median(timings) * 1000,
    }


async def inprocess(db: Path, cache: Path, queries: int, rankings: bool) -> dict[str, Any]:
    segmenter = Segmenter(cache)
    await segmenter.wait()
    config = Config.from_env({}, db_path=db, cache_dir=cache)
    out: dict[str, Any] = {}
    async with Store(config, segmenter) as store:
        started = time.perf_counter()
        await store.warm()
        out["build_s"] = time.perf_counter() - started
        service = MemoryService(store)
        timings = []
        for q in _queries(queries):
            t = time.perf_counter()
            await service.recall(query=q, track_access=False)
            timings.append(time.perf_counter() - t)
        out["inproc_p50_ms"] = statistics.median(timings) * 1000
        if rankings:
            index = store._live.index
            assert index is not None
            dump = []
            for q in [*_queries(queries), "python programming", "pyth", "painting", "咖啡 拿铁", "lov"]:
                terms = keywords(segmenter.cut(normalize(q)), config.recall.max_keywords)
                kq = [k for k in (keyword_query(t) for t in terms) if k is not None]
                kq += char_queries(terms, config.recall.char_weight)
                dump.append([q, index.search(kq, 50)])
            out["rankings"] = dump
    return out


async def run(args: argparse.Namespace, db: Path, cache: Path) -> None:
    if args.inprocess or args.rankings:
        found = await inprocess(db, cache, args.queries, bool(args.rankings))
        if args.rankings:
            Path(args.rankings).write_text(json.dumps(found.pop("rankings"), ensure_ascii=False))  # noqa: ASYNC240
        print("in-process:", found, flush=True)
    for _ in range(args.runs):
        print("stdio:", {k: round(v, 2) for k, v in (await serve(db, cache, args.queries, {})).items()}, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "mms-rss"))
    parser.add_argument("--inprocess", action="store_true")
    parser.add_argument("--rankings")
    args = parser.parse_args()
    base = Path(args.dir)
    cache, db = base / "cache", base / f"db-{args.size}.db"
    if not db.exists():
        base.mkdir(parents=True, exist_ok=True)
        building = base / f"building-{args.size}.db"
        for leftover in base.glob(f"building-{args.size}.db*"):
            leftover.unlink()
        anyio.run(build, building, cache, args.size)
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{building}{suffix}").exists():
                os.replace(f"{building}{suffix}", f"{db}{suffix}")
    Segmenter(cache).wait_sync()  # the cache file exists before any timed run
    anyio.run(run, args, db, cache)


if __name__ == "__main__":
    main()
