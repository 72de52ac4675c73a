"""SQLite and PostgreSQL in one run, on the same data: recall latency (in-process and through a
real stdio server), recall's rankings (which must be identical, query by query: the run fails
otherwise), write throughput (remember one call at a time, bulk import) and concurrent writers
(server processes writing at once, as replicas or several clients would). Everything but the
rankings of --semantic runs on the keyword path (the semantic stage off), in-process and in the
servers.

    python -m benchmarks.backends [--backend sqlite|postgresql|both] [--sizes 10000,100000]
                                  [--queries 200] [--writers 4,8] [--writes 100] [--durable] [--near] [--semantic]

PostgreSQL is a throwaway cluster started by the tests' own helper (tests/pg_server.py: Debian's
server binaries, initdb into a temporary directory, loopback only), with the tests' settings:
fsync, synchronous_commit and full_page_writes off. --durable also starts a second cluster with
PostgreSQL's defaults (fsync at every commit) and measures it as a third backend. SQLite runs as
the server does: WAL, synchronous=NORMAL (it syncs at checkpoints, not at every commit).

Memories and queries are those of `benchmarks.latency` (LoCoMo and MemoryBank turns, LoCoMo
questions and MemoryBank user messages); access tracking is on, written after each answer.
Concurrent writers: each writer is an installed `jiyi` process over stdio, on a fresh
database, writing its share of distinct conversation turns with `remember`, one call after
another, all writers at once; the clock starts when every writer has answered a first call.

--semantic also compares the hybrid's rankings, query by query, after every memory
is given its vector of the bundled model (as `benchmarks.latency --semantic` gives them; the
in-process recalls embed each query): the vector index and fusion are the same code on both
databases, the vectors come from each database's own rows.

--near compares the near-duplicate check of `remember`, which differs by backend (FTS5 bm25 on
SQLite, the GIN tsvector index ranked by ts_rank on PostgreSQL, 10 candidates each, then the same
bigram similarity): a store of the Chinese set's labelled memories, the MemoryBank turns and 2,000
LoCoMo turns (bulk import), then two reworded copies of each labelled memory and of 300 LoCoMo
turns written with `remember`; the answers (merged into which memory, or created) are compared.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import anyio
import psycopg
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from tests import pg_server

from .data import chinese, locomo_turns, memorybank_turns
from .latency import _corpus, _pct, _queries, give_vectors, import_and_recall, segmenter_cache

REMEMBERED = 300  # memories written one call at a time before the bulk import, as benchmarks.latency


@dataclass
class Backend:
    """One database kind: `fresh()` gives a new empty database's `--db` value."""

    name: str
    tmp: Path
    server: pg_server.PgServer | None = None

    @contextlib.contextmanager
    def fresh(self, label: str) -> Iterator[str]:
        if self.server is None:
            path = self.tmp / f"{label}.db"
            try:
                yield str(path)
            finally:
                for suffix in ("", "-wal", "-shm"):
                    path.with_name(path.name + suffix).unlink(missing_ok=True)
        else:
            with self.server.database() as url:
                yield url


def _config(db: str) -> Config:
    return Config.from_env({}, db_path=db, cache_dir=Path(segmenter_cache()))


def _server(db: str) -> StdioServerParameters:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first"
    # The keyword path, as in-process: these figures compare the databases, and a server at its
    # defaults with the semantic extra installed would meanwhile embed every memory it was given.
    env = {
        **os.environ,
        "MCP_MEMORY_CACHE_DIR": segmenter_cache(),
        "MCP_MEMORY_LOG_LEVEL": "ERROR",
        "MCP_MEMORY_SEMANTIC": "off",
    }
    return StdioServerParameters(command=command, args=["--db", db], env=env)


async def load_and_recall(
    db: str, size: int, queries: int, segmenter: Segmenter, semantic: bool = False
) -> tuple[dict[str, float], list[list[str]]]:
    """`size` memories (REMEMBERED one by one, the rest by bulk import), then recall in-process and
    over stdio; also each query's ranking (the hits' contents, best first), to compare backends.
    With `semantic`, the rankings of the hybrid follow those of the keyword path: every memory
    given its vector of the bundled model as `benchmarks.latency` gives them, each query embedded."""
    texts = _corpus(size)
    row: dict[str, float] = {}
    async with Store(_config(db), segmenter) as store:
        service = MemoryService(store)
        actions: Counter[str] = Counter()
        started = time.perf_counter()
        for i, text in enumerate(texts[:REMEMBERED]):
            result = await service.remember(content=text[:2000], category="fact" if i % 3 else "preference")
            actions[result.action] += 1
        row["remember_per_s"] = REMEMBERED / (time.perf_counter() - started)
        row["remember_created"] = actions["created"]
        await import_and_recall(service, texts[REMEMBERED:], queries, row)
        row["db_mb"] = (await store.stats()).db_bytes / 1e6
        rankings = [[hit.content for hit in (await service.recall(query=q)).hits] for q in _queries(queries)]
        if semantic:
            stage = await give_vectors(store, _config(db), {})
            assert await EmbeddingWorker(store, stage).attach()
            for q in _queries(queries):
                found = await service.recall(query=q)
                assert found.stage in ("hybrid", "none"), found.stage
                rankings.append([hit.content for hit in found.hits])
    async with Client(_server(db)) as client:
        await client.call_tool("recall", {"query": "warm up"})
        timings = []
        for query in _queries(queries):
            t = time.perf_counter()
            result = await client.call_tool("recall", {"query": query})
            timings.append(time.perf_counter() - t)
            assert not result.is_error, result.content
        row["stdio_p50"], row["stdio_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)
    return row, rankings


async def concurrent_writers(db: str, writers: int, writes: int) -> dict[str, float]:
    """`writers` server processes each remember `writes` distinct turns at once."""
    turns = _corpus(writers * (writes + 1))
    timings: list[float] = []
    actions: Counter[str] = Counter()
    ready = anyio.Event()
    waiting = [writers]
    go = anyio.Event()

    async def writer(index: int) -> None:
        mine = turns[index::writers]
        async with Client(_server(db)) as client:
            await client.call_tool("remember", {"content": mine[0][:2000], "category": "fact"})  # jieba loaded
            waiting[0] -= 1
            if waiting[0] == 0:
                ready.set()
            await go.wait()
            for text in mine[1 : writes + 1]:
                t = time.perf_counter()
                result = await client.call_tool("remember", {"content": text[:2000], "category": "fact"})
                timings.append(time.perf_counter() - t)
                assert not result.is_error and result.structured_content is not None, result.content
                actions[result.structured_content["action"]] += 1

    async with anyio.create_task_group() as group:
        for index in range(writers):
            group.start_soon(writer, index)
        await ready.wait()
        started = time.perf_counter()
        go.set()
    elapsed = time.perf_counter() - started
    return {
        "per_s": writers * writes / elapsed,
        "p50": _pct(timings, 0.5),
        "p95": _pct(timings, 0.95),
        "created": actions["created"],
        "calls": sum(actions.values()),
    }


def _near_data() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(id, text, category) to import, and (id of the original, reworded text, category) to remember:
    one character added at the end, and the last two characters (Chinese) or word (English) dropped."""
    labelled = [m for corpus in chinese() for m in corpus.memories if not m[0].startswith("mb")]
    english = [(f"lc{i}", text, "fact") for i, text in enumerate(locomo_turns()[:2000])]
    base = labelled + [(f"mb{i}", f"{q} {r}", "context") for i, (q, r) in enumerate(memorybank_turns())] + english
    variants = []
    for mid, text, category in labelled:
        variants += [(mid, text + "呀", category), (mid, text[:-2], category)]
    for mid, text, category in english[:300]:
        variants += [(mid, text + " indeed", category), (mid, text.rsplit(" ", 1)[0], category)]
    return base, variants


async def near_duplicates(db: str, segmenter: Segmenter) -> list[tuple[str, str]]:
    """For each reworded copy: remember's action and the original it landed on ("" if created)."""
    base, variants = _near_data()
    async with Store(_config(db), segmenter) as store:
        service = MemoryService(store)
        ours = await service.import_memories([{"content": t[:2000], "category": c} for _, t, c in base])
        corpus_id = dict(zip(ours, (m[0] for m in base), strict=True))
        answers = []
        for _, text, category in variants:
            result = await service.remember(content=text[:2000], category=category)
            answers.append((result.action, corpus_id.get(result.id, "")))
    return answers


@contextlib.asynccontextmanager
async def backends(choice: str, durable: bool) -> AsyncIterator[list[Backend]]:
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mms-backends-")))
        chosen = [Backend("SQLite", tmp)] if choice in ("sqlite", "both") else []
        if choice in ("postgresql", "both"):
            chosen.append(Backend("PostgreSQL (fsync off)", tmp, stack.enter_context(pg_server.running())))
            if durable:
                server = stack.enter_context(pg_server.running(durable=True))
                chosen.append(Backend("PostgreSQL (fsync on)", tmp, server))
        yield chosen


def machine_line(chosen: list[Backend]) -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    line = (
        f"machine: {platform.machine()} {cpu}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" SQLite {sqlite3.sqlite_version}, mcp {version('mcp')},"
        f" psycopg {psycopg.__version__}"
    )
    for backend in chosen:
        if backend.server is not None:
            with psycopg.connect(backend.server.url()) as conn:
                row = conn.execute("SELECT current_setting('server_version'), current_setting('fsync')").fetchone()
            assert row is not None
            line += f"; {backend.name}: PostgreSQL {row[0]}, fsync={row[1]}"
    return line


async def run(args: argparse.Namespace) -> None:
    segmenter = Segmenter(Path(segmenter_cache()))
    await segmenter.wait()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    writer_counts = [int(w) for w in args.writers.split(",") if w]
    async with backends(args.backend, args.durable) as chosen:
        print(machine_line(chosen), flush=True)
        if sizes:
            print()
            print(
                "| memories | backend | recall in-process p50 / p95 | recall stdio p50 / p95 | first recall |"
                f" remember / s ({REMEMBERED}, created) | bulk import / s | database |"
            )
            print("|---|---|---|---|---|---|---|---|")
        ranked: dict[tuple[int, str], list[list[str]]] = {}
        for size in sizes:
            for backend in chosen:
                with backend.fresh(f"size-{size}") as db:
                    r, ranked[size, backend.name] = await load_and_recall(
                        db, size, args.queries, segmenter, args.semantic
                    )
                print(
                    f"| {size:,} | {backend.name} | {r['inproc_p50']:.2f} / {r['inproc_p95']:.2f} ms |"
                    f" {r['stdio_p50']:.2f} / {r['stdio_p95']:.2f} ms | {r['first_recall_ms']:,.0f} ms |"
                    f" {r['remember_per_s']:,.0f} ({r['remember_created']:.0f}) | {r['bulk_per_s']:,.0f} |"
                    f" {r['db_mb']:.0f} MB |",
                    flush=True,
                )
        for size in sizes:
            compare_rankings(size, {backend.name: ranked[size, backend.name] for backend in chosen})
        if writer_counts:
            print()
            print("| writers × remember calls | backend | calls / s, all writers | call p50 / p95 | created |")
            print("|---|---|---|---|---|")
        for writers in writer_counts:
            for backend in chosen:
                with backend.fresh(f"writers-{writers}") as db:
                    w = await concurrent_writers(db, writers, args.writes)
                print(
                    f"| {writers} × {args.writes} | {backend.name} | {w['per_s']:,.0f} |"
                    f" {w['p50']:.1f} / {w['p95']:.1f} ms | {w['created']:.0f} of {w['calls']:.0f} |",
                    flush=True,
                )
        if args.near:
            await compare_near(chosen, segmenter)


def compare_rankings(size: int, by_backend: dict[str, list[list[str]]]) -> None:
    """Recall's ranking, query by query: every backend must give the first one's."""
    (first, a), *others = by_backend.items()
    for name, b in others:
        differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        print(
            f"\nrankings at {size:,}, {name} against {first}: identical for {len(a) - len(differ)} of {len(a)} queries"
        )
        for i in differ[:5]:
            print(f"  query {i}: {first} {[t[:30] for t in a[i]]}, {name} {[t[:30] for t in b[i]]}")
        if differ:
            raise SystemExit(f"recall ranks differently on {name} and {first} for {len(differ)} queries")


async def compare_near(chosen: list[Backend], segmenter: Segmenter) -> None:
    _, variants = _near_data()
    answers = {}
    for backend in chosen:
        with backend.fresh("near") as db:
            answers[backend.name] = await near_duplicates(db, segmenter)
    print()
    for name, found in answers.items():
        actions = Counter(action for action, _ in found)
        right = sum(1 for (action, target), (mid, _, _) in zip(found, variants, strict=True) if target == mid)
        print(f"near-duplicates, {name}: {dict(actions)} of {len(found)}; merged into their own original: {right}")
    (first, a), *others = answers.items()
    for name, b in others:
        differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        print(f"{name} against {first}: the same answer for {len(a) - len(differ)} of {len(a)}")
        for i in differ[:10]:
            print(f"  {variants[i][0]} {variants[i][1][:60]!r}: {first} {a[i]}, {name} {b[i]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--sizes", default="10000,100000", help="store sizes for recall and write speed")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writers", default="4,8", help="numbers of concurrent writer processes")
    parser.add_argument("--writes", type=int, default=100, help="remember calls per writer")
    parser.add_argument("--durable", action="store_true", help="also PostgreSQL with fsync on (its defaults)")
    parser.add_argument("--semantic", action="store_true", help="also compare the hybrid's rankings, query by query")
    parser.add_argument("--near", action="store_true", help="also compare remember's near-duplicate merges")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
