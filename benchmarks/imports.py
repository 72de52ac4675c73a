"""Import and export speed: files in the other tools' formats, built from the benchmark corpora
(English LoCoMo turns, Chinese MemoryBank turns), imported into a fresh database, imported again
(nothing may change), then exported as JSON and as MEMORY.md.

    python -m benchmarks.imports [--entities 5000] [--mem0 10000]

The reference server's memory.jsonl gets `--entities` entities with two observations each and a
relation for every second entity; the mem0 file is a `get_all` answer with `--mem0` memories.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from mcp_memory_server.config import Config
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer import ImportSummary, export_json, import_text, render_store

from .latency import _corpus, segmenter_cache


def memory_jsonl(entities: int) -> str:
    texts = _corpus(entities * 2)
    lines: list[dict[str, Any]] = []
    for n in range(entities):
        name = f"人物{n}" if n % 2 else f"Person {n}"
        observations = [texts[2 * n], texts[2 * n + 1]]
        lines.append({"type": "entity", "name": name, "entityType": "person", "observations": observations})
    for n in range(0, entities - 1, 2):
        lines.append({"type": "relation", "from": f"Person {n}", "to": f"人物{n + 1}", "relationType": "knows"})
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"


def mem0_get_all(count: int) -> str:
    texts = _corpus(count)
    results = [
        {
            "id": f"00000000-0000-4000-8000-{n:012d}",
            "memory": text,
            "hash": f"{n:032x}",
            "metadata": None,
            "categories": ["personal"] if n % 3 else ["work"],
            "created_at": "2025-03-01T08:00:00-08:00",
            "updated_at": None,
            "user_id": "alice",
        }
        for n, text in enumerate(texts)
    ]
    return json.dumps({"results": results}, ensure_ascii=False)


async def _timed(label: str, call: Callable[[], Awaitable[Any]]) -> Any:
    start = time.perf_counter()
    result = await call()
    print(f"  {label:<28} {time.perf_counter() - start:7.2f} s", flush=True)
    return result


async def _run(name: str, text: str, file_format: str, cache: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Config.from_env({}, db_path=Path(tmp) / "memory.db", cache_dir=cache)
        segmenter = Segmenter(cache)
        segmenter.wait_sync()
        print(f"{name}: {len(text.encode()) / 1e6:.1f} MB, {text.count(chr(10)) + 1:,} lines")
        async with Store(config, segmenter) as store:
            first: ImportSummary = await _timed("import", lambda: import_text(store, text, file_format))
            again: ImportSummary = await _timed("import again", lambda: import_text(store, text, file_format))
            exported = await _timed("export json", lambda: export_json(store))
            markdown = await _timed("export MEMORY.md (full)", lambda: render_store(store, full=True))
        print(f"  first: {first.detail}")
        print(f"  again: {again.detail}")
        print(f"  json export {len(exported.encode()) / 1e6:.1f} MB, MEMORY.md {len(markdown.encode()) / 1e6:.1f} MB")
        assert again.created == again.updated == 0, "a second import changed something"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=5000)
    parser.add_argument("--mem0", type=int, default=10000)
    args = parser.parse_args()
    cache = Path(segmenter_cache())
    anyio.run(_run, "memory.jsonl", memory_jsonl(args.entities), "memory-jsonl", cache)
    anyio.run(_run, "mem0 get_all", mem0_get_all(args.mem0), "mem0", cache)


if __name__ == "__main__":
    main()
