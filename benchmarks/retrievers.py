"""The retrievers compared by `benchmarks.retrieval`: ours (in-process and over stdio) and the
baselines. Each indexes one corpus, then answers queries with a ranked list of memory ids."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

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
