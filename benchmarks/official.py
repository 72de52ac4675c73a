"""Driver for the official MCP reference memory server, `@modelcontextprotocol/server-memory`.

    async with OfficialServer(workdir) as official:
        await official.load([("m1", "我每天早上喝一杯拿铁咖啡"), ...])
        ids = await official.search("咖啡")

Start-up. The server runs as `npx -y --prefer-offline @modelcontextprotocol/server-memory@VERSION`
(server name "memory-server", protocol 2025-11-25, a handshake-era server, so the client connects in
`mode="legacy"` and skips the `server/discover` probe). `available()` runs that command once with stdin
closed, which downloads the package into npx's cache (`~/.npm/_npx`) on first use and proves it starts;
every later start finds it there, and `--prefer-offline` keeps npm from revalidating the registry's
package metadata, so starting costs about 0.7-1 s of npx plus node (node alone on the installed
script is about 0.2 s) and no download. `__aenter__` calls `available()` first, so the download never
lands inside a timed start. Data lives in the one JSONL file named by `MEMORY_FILE_PATH`, here
`<workdir>/memory.jsonl`; it is created by the first write.

Tools (9): create_entities, create_relations, add_observations, delete_entities, delete_observations,
delete_relations, read_graph, search_nodes, open_nodes. Those used here:

    create_entities {"entities": [{"name": str, "entityType": str, "observations": [str]}]}
        -> structuredContent {"entities": [the entities actually created]}
    search_nodes    {"query": str}      -> structuredContent {"entities": [...], "relations": [...]}
    open_nodes      {"names": [str]}    -> structuredContent {"entities": [...], "relations": [...]}

Each result also carries the same data as pretty-printed JSON text in `content[0]`; for create_entities
that text is the bare list. Results are read from `structuredContent` (the SDK client validates it
against the tool's output schema), falling back to the text.

Storage model. There is no index and no state in memory: every tool call reads and `JSON.parse`s the
whole JSONL file, and every write rewrites all of it (to a temp file, then rename). create_entities
also drops entities whose name is already stored by scanning the stored list once per new entity
(`some(...)`), which costs stored x batch comparisons per call, N^2/2 for a load of N whatever the
batch size; duplicates inside one call are not dropped, so `load` refuses duplicate ids itself.

Matching (`KnowledgeGraphManager.searchNodes` in dist/index.js of the pinned version): an entity
matches when `query.toLowerCase()` is a substring of `name.toLowerCase()`, of
`entityType.toLowerCase()` or of any observation's `toLowerCase()`. The whole query string is one
needle: no tokenising, trimming, Unicode normalisation or full-/half-width folding, so a
natural-language question matches only a memory that contains it verbatim. The entity type and the
name are searched too: here every entity has type "memory", so "memory", "mem", "or", "e", "y" (any
substring of it) and "" return the whole store, and a query that is part of an id matches that id.
Ordering: every match is returned, unranked and unlimited, in file order, which is insertion order.
Each match comes back with its observations, so a broad query returns most of the store.

Measured on a 2-core x86_64 container (noisy; ranges are two runs), Node 20.20, mcp 2.3 client,
memories of about 240 bytes (the half English, half Chinese corpus of benchmarks.latency, ids
"m000000"...; 10k = 3.2 MB of JSONL, 100k = 32 MB), the queries of benchmarks.latency:

    load 10,000 (BATCH_SIZE 10,000 -> one call)     1.1-1.3 s  (batches of 500: 1.7-1.9 s)
    load 100,000 (BATCH_SIZE 10,000)                21-24 s    (500: 132 s, 2,000: 55 s,
                                                                5,000: 29 s, 20,000: 23 s)
    search_nodes p50 at 10,000                      34-40 ms   (p95 49-65 ms)
    search_nodes p50 at 100,000                     370-450 ms (p95 520-580 ms)

Search time is the file re-read plus a linear scan, so it grows linearly with the store. Small
batches are slow because every call re-reads and rewrites the whole file; from 10,000 up the
quadratic name check dominates, hence BATCH_SIZE (a 10,000-entity request is about 3 MB of JSON and
its echoed reply about 7 MB). A query matching most of the store is another matter: the reply holds
every match twice (structured and as indented text), about 68 MB for all 100k, and the mcp 2.3 stdio
client reassembles a long line quadratically (`buffer + chunk` per pipe read), so `search("e")` takes
0.55 s at 10k but about 78 s at 100k, nearly all of it in the client.

`noop` is `open_nodes(names=[])`: the cheapest tool call that succeeds, with an empty reply at any
store size. On an empty store it is the bare round trip (~0.6 ms p50, like read_graph or a search
that matches nothing; `tools/list` costs 1.5-3.5 ms in the client parsing nine tool schemas, and
`ping` raises MCPDeprecationWarning in this SDK). On a loaded store it still reads and parses the
whole file (~35 ms at 10k, 310-390 ms at 100k): no tool of this server answers without doing so.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp import Client
from mcp.client.stdio import StdioServerParameters

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"  # latest on the npm registry when written; its MCP server reports "memory-server" 0.6.3
SPEC = f"{PACKAGE}@{VERSION}"
NPX_ARGS = ["-y", "--prefer-offline", SPEC]
MEMORY_FILE = "memory.jsonl"
ENTITY_TYPE = "memory"
BATCH_SIZE = 10_000
INSTALL_TIMEOUT_S = 300


def _env(memory_file: Path) -> dict[str, str]:
    """The server's data file, and npm quiet (its config notices would land on stderr)."""
    return {"MEMORY_FILE_PATH": str(memory_file), "NPM_CONFIG_LOGLEVEL": "error", "NPM_CONFIG_UPDATE_NOTIFIER": "false"}


class OfficialServer:
    """The reference @modelcontextprotocol/server-memory, started with npx over stdio."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.memory_file = self.workdir / MEMORY_FILE
        self._client: Client | None = None

    async def __aenter__(self) -> OfficialServer:
        if not await anyio.to_thread.run_sync(OfficialServer.available):
            raise RuntimeError(f"cannot start {SPEC} with npx")
        npx = shutil.which("npx")
        assert npx is not None  # available() checked it
        self.workdir.mkdir(parents=True, exist_ok=True)
        params = StdioServerParameters(command=npx, args=NPX_ARGS, env=_env(self.memory_file), cwd=self.workdir)
        client = Client(params, mode="legacy")
        await client.__aenter__()
        self._client = client
        return self

    async def __aexit__(self, *exc: object) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.__aexit__(None, None, None)  # closes stdin; the server exits and is reaped

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("use `async with OfficialServer(workdir)` first")
        return self._client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        data: Any = result.structured_content
        if data is None:
            data = json.loads(result.content[0].text)  # type: ignore[union-attr]
        return {"entities": data} if isinstance(data, list) else dict(data)

    async def load(self, memories: list[tuple[str, str]], batch_size: int = BATCH_SIZE) -> None:
        """Each (memory_id, text) becomes the entity {name: memory_id, entityType: "memory",
        observations: [text]}, sent with create_entities `batch_size` at a time."""
        ids = [memory_id for memory_id, _ in memories]
        if len(set(ids)) != len(ids):
            raise ValueError("memory ids must be unique")
        for start in range(0, len(memories), batch_size):
            batch = memories[start : start + batch_size]
            entities = [{"name": mid, "entityType": ENTITY_TYPE, "observations": [text]} for mid, text in batch]
            created = await self._call("create_entities", {"entities": entities})
            if len(created["entities"]) != len(batch):
                raise ValueError(f"{len(batch) - len(created['entities'])} of these ids were already stored")

    async def search(self, query: str) -> list[str]:
        """search_nodes(query): the matching entities' names (our memory ids), in the server's order."""
        found = await self._call("search_nodes", {"query": query})
        return [entity["name"] for entity in found["entities"]]

    async def noop(self) -> None:
        """open_nodes(names=[]): see the module docstring for what it costs."""
        await self._call("open_nodes", {"names": []})

    @staticmethod
    @functools.cache
    def available() -> bool:
        """True when npx can start the pinned package; the first call downloads it into npx's cache."""
        npx = shutil.which("npx")
        if npx is None:
            return False
        with tempfile.TemporaryDirectory() as tmp:
            try:
                # With stdin closed the server starts, reads EOF and exits 0.
                done = subprocess.run(
                    [npx, *NPX_ARGS],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    env={**os.environ, **_env(Path(tmp) / MEMORY_FILE)},
                    cwd=tmp,
                    timeout=INSTALL_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                return False
        return done.returncode == 0
