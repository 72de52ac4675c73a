"""The first tool calls after a client starts the server, through the SDK's stdio client.

    python -m benchmarks.first_call [--runs 10] [--cache cold|warm|both] [--semantic on|off|auto]
    python -m benchmarks.first_call --quality
    python -m benchmarks.first_call --duplicates


Each run spawns the installed `jiyi` on a new empty database and times, from the spawn: the
`initialize` answer (the `Client` entered), `tools/list` (what a client asks first, and what the
SDK's client would otherwise ask inside the first call, to validate its result), then the first
`remember` (Chinese), then the first `recall` (Chinese), each call's own time given too. The
client's own first-use work (importing jsonschema to validate results) is done before the spawn,
so the times are the server's. `cold` gives every run a new empty cache
folder, so the segmenter has no dictionary cache and builds it from jieba's dictionary file (the
first start after an install); `warm` shares one cache folder built before the runs. After the
calls, `memory://stats` says whether the segmenter had loaded by then.

--quality: what a recall answered before jieba has loaded is worth, on the Chinese set
(benchmarks/data/zh_memories.json with its distractors), through the in-process retriever of
benchmarks.retrieval: R@5, R@10 and MRR@10 with jieba's tokens against dictionary-free ones
(text/provisional.py), per query group.

--duplicates: whether `remember`'s near-duplicate search without the dictionary (every write's
now) decides as the search by jieba's keywords did: two corpora each of the Chinese set (with its
MemoryBank distractors) and of LoCoMo, written one by one, then 300 of each set's memories again
with one edit (a character dropped or replaced, a word appended); for every write, the memory each
search would merge it into.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import jsonschema  # noqa: F401  # the client's validator, loaded before timing: see the docstring
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.text import Segmenter

MEMORY = "我对花生过敏，吃了会起疹子"
QUERY = "我对什么过敏"


@dataclass
class Run:
    initialize: float  # seconds from spawn
    list_tools: float
    remember: float  # the call alone
    recall: float
    remember_at: float  # answered, seconds from spawn
    recall_at: float
    ready_after: bool | None  # the segmenter had loaded when the stats were read


def _command() -> str:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first (make test or pip install -e .)"
    return command


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error and result.structured_content is not None, result.content
    return result.structured_content


async def one_run(db: Path, cache: Path, semantic: str, *, until_loaded: bool = False) -> Run:
    """One spawn and its first calls; with `until_loaded`, the server is left running until its
    segmenter has loaded (and written its cache), as a warm-up."""
    env = {
        **os.environ,
        "MCP_MEMORY_DB": str(db),
        "MCP_MEMORY_CACHE_DIR": str(cache),
        "MCP_MEMORY_LOG_LEVEL": "ERROR",
        "MCP_MEMORY_SEMANTIC": semantic,
    }
    params = StdioServerParameters(command=_command(), env=env)
    started = time.perf_counter()
    async with Client(params) as client:
        initialized = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter()
        stored = await _call(client, "remember", {"content": MEMORY, "category": "health"})
        remembered = time.perf_counter()
        found = await _call(client, "recall", {"query": QUERY})
        recalled = time.perf_counter()
        assert found["hits"] and found["hits"][0]["id"] == stored["id"], found
        stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
        with anyio.fail_after(300):
            while until_loaded and stats.get("segmenter", "ready") == "loading":
                await anyio.sleep(0.1)
                stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
    segmenter = stats.get("segmenter")
    return Run(
        initialize=initialized - started,
        list_tools=listed - initialized,
        remember=remembered - listed,
        recall=recalled - remembered,
        remember_at=remembered - started,
        recall_at=recalled - started,
        ready_after=None if segmenter is None else segmenter == "ready",
    )


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


async def measure(runs: int, cache_mode: str, semantic: str) -> list[Run]:
    with tempfile.TemporaryDirectory() as tmp:
        shared = Path(tmp) / "cache"
        if cache_mode == "warm":
            await one_run(Path(tmp) / "warmup.db", shared, semantic, until_loaded=True)  # builds the cache
        out = []
        for i in range(runs):
            cache = shared if cache_mode == "warm" else Path(tmp) / f"cache{i}"
            out.append(await one_run(Path(tmp) / f"run{i}.db", cache, semantic))
    return out


def report(cache_mode: str, results: list[Run]) -> None:
    ready = [r.ready_after for r in results]
    print(f"{cache_mode} segmenter cache, {len(results)} runs, median (min-max) ms:")
    print(f"  initialize answered after spawn   {_ms([r.initialize for r in results])}")
    print(f"  tools/list                        {_ms([r.list_tools for r in results])}")
    print(f"  first remember (the call)         {_ms([r.remember for r in results])}")
    print(f"  first recall (the call)           {_ms([r.recall for r in results])}")
    print(f"  remember answered after spawn     {_ms([r.remember_at for r in results])}")
    print(f"  recall answered after spawn       {_ms([r.recall_at for r in results])}")
    if None not in ready:
        print(f"  segmenter loaded after the calls  {sum(map(bool, ready))} of {len(ready)} runs")


class _NeverLoaded(Segmenter):
    """A segmenter whose dictionary never loads: every query takes the dictionary-free path."""

    def start(self) -> None:
        pass


async def quality() -> None:
    from mcp_memory_server.memory import recall

    from .data import chinese
    from .retrieval import evaluate
    from .retrievers import OursInProcess

    loaded = Segmenter(OursInProcess(Segmenter(None)).segmenter_cache())
    await loaded.wait()
    recall.SEGMENTER_PATIENCE = 0  # answer at once: a loading segmenter would be waited for first
    corpora = chinese()
    print("| tokens | group | n | R@5 | R@10 | MRR@10 |")
    print("|---|---|---|---|---|---|")
    for label, segmenter in (("jieba", loaded), ("dictionary-free", _NeverLoaded(None))):
        _, scores = await evaluate(functools.partial(OursInProcess, segmenter), corpora)
        for group, score in sorted(scores.items(), key=lambda kv: kv[0] != "all"):
            r = score.row()
            print(f"| {label} | {group} | {r['n']:.0f} | {r['R@5']:.3f} | {r['R@10']:.3f} | {r['MRR@10']:.3f} |")


def _edited(text: str, rng: random.Random) -> str:
    chars = list(text)
    kind = rng.choice(["drop", "replace", "append"])
    if kind == "drop" and len(chars) > 10:
        del chars[rng.randrange(len(chars))]
    elif kind == "replace" and len(chars) > 10:
        chars[rng.randrange(len(chars))] = rng.choice("的了很我在，。 ")
    else:
        chars += rng.choice(["。", "!", " 真的", "呢", " really"])
    return "".join(chars)


async def duplicates() -> None:
    from mcp_memory_server.config import Config
    from mcp_memory_server.memory import validate
    from mcp_memory_server.memory.service import MemoryService
    from mcp_memory_server.store.store import Store
    from mcp_memory_server.text.provisional import near_duplicate_query
    from mcp_memory_server.text.tokens import fts_query, keywords, normalize, similarity

    from .data import chinese, locomo
    from .retrievers import OursInProcess

    rng = random.Random(7)
    cache = OursInProcess(Segmenter(None)).segmenter_cache()
    segmenter = Segmenter(cache)
    await segmenter.wait()
    sets = {"Chinese": chinese()[:2], "LoCoMo": locomo()[:2]}
    for name, corpora in sets.items():
        items = [(text[:2000], category) for corpus in corpora for _, text, category in corpus.memories]
        items += [(_edited(text, rng), category) for text, category in rng.sample(items, 300)]
        same = merged = 0
        with tempfile.TemporaryDirectory() as tmp:
            config = Config.from_env({}, db_path=Path(tmp) / "dup.db", cache_dir=cache)
            async with Store(config, segmenter) as store:
                service = MemoryService(store)
                for text, category in items:
                    draft = validate.draft(config, content=text, category_name=category)
                    jieba_query = fts_query(keywords(segmenter.cut(normalize(text)), config.recall.max_keywords))
                    picks = []
                    for query in (jieba_query, near_duplicate_query(text)):
                        async with store.transaction() as tx:
                            found = await tx.similar_in_category(query, draft.category, 10)
                        scored = [(similarity(m.content, draft.content), m.id) for m in found]
                        best = max((s for s in scored if s[0] >= config.recall.duplicate_threshold), default=None)
                        picks.append(best[1] if best else None)
                    same += picks[0] == picks[1]
                    merged += picks[1] is not None
                    await service.remember(content=text, category=category)
        print(f"{name}: {len(items)} writes, the same decision for {same}, a near-duplicate merge for {merged}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cache", choices=["cold", "warm", "both"], default="both")
    parser.add_argument("--semantic", choices=["on", "off", "auto"], default="auto")
    parser.add_argument("--quality", action="store_true", help="recall quality before jieba has loaded")
    parser.add_argument("--duplicates", action="store_true", help="near-duplicate decisions without jieba")
    args = parser.parse_args()
    if args.quality or args.duplicates:
        anyio.run(quality if args.quality else duplicates)
        return
    for mode in ["cold", "warm"] if args.cache == "both" else [args.cache]:
        report(mode, anyio.run(measure, args.runs, mode, args.semantic))


if __name__ == "__main__":
    main()
