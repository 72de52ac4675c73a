"""Writes retried with their request_id are applied exactly once, whatever happened to the first try:
a PostgreSQL cluster restarted again and again under a writer (fast and immediate restarts, which
end connections mid-transaction and mid-commit), and SQLite servers killed with SIGKILL while
remember calls are in flight, then started again. The client does what RELIABILITY.md tells a
client to do: on an error, or on no answer at all, it sends the same call with the same request_id
until it is answered.

At the end every memory is stored once (none doubled, none lost), every call's answer is the
first try's (`created`), and no answer said "rolled back" for a write that was stored.

`RETRY_RESTARTS=20 RETRY_TRIALS=20` is the longer run whose figures RELIABILITY.md gives; each test
prints its counts (`pytest -s`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import signal
import sqlite3
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from . import pg_server as pg_server_module
from . import rawdb
from .test_reliability import raw_server

BOUND_S = 300  # the test's work: catches a hang, with room for a loaded machine
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(BOUND_S + 120)]

RESTARTS = int(os.environ.get("RETRY_RESTARTS", "6"))
TRIALS = int(os.environ.get("RETRY_TRIALS", "3"))  # SQLite servers killed mid-stream
WRITERS = 4  # servers writing to the restarted cluster at once
_F_SETPIPE_SZ = 1031  # Linux's fcntl command (fcntl.F_SETPIPE_SZ from Python 3.10 on some builds only)
CALLS = 40  # remember calls sent to each SQLite server before it is killed


def _content(tag: str, n: int) -> str:
    # Different enough that no two are near-duplicates (remember would merge them).
    return f"{uuid.uuid4().hex} 重试 {tag} 第 {n} 条 retry {uuid.uuid4().hex[:10]}"


@dataclass
class Attempt:
    started: datetime
    ended: datetime
    error: str | None  # None: answered


@dataclass
class Write:
    request_id: str
    content: str
    attempts: list[Attempt] = field(default_factory=list)
    answer: dict[str, Any] | None = None


def _kind(error: str) -> str:
    if "outcome unknown" in error:
        return "outcome unknown"
    if "rolled back" in error:
        return "rolled back"
    return "other"


# ---- PostgreSQL restarts ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[pg_server_module.PgServer]:
    """A cluster of this module's own (restarting the session's would disturb other tests), with
    PostgreSQL's durable defaults: a commit waits for its log to reach the disk, which widens the
    moment a restart can fall in."""
    try:
        server = pg_server_module.start(durable=True)
    except pg_server_module.PostgresMissing as missing:
        if os.environ.get("CI"):
            pytest.fail(str(missing))
        pytest.skip(str(missing))
    try:
        yield server
    finally:
        server.stop()


async def test_a_writer_retrying_through_postgresql_restarts_stores_each_memory_once(
    own_cluster: pg_server_module.PgServer, segmenter: Segmenter, cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with own_cluster.database() as url:
        environ = {"MCP_MEMORY_SEMANTIC": "off"}
        config = Config.from_env(environ, db_path=url, cache_dir=cache_dir, maintenance_minutes=0)
        writes: list[Write] = []
        restarted, ready = anyio.Event(), anyio.Event()
        connected = 0
        modes: Counter[str] = Counter()

        async def restarter() -> None:
            rng = random.Random(20)
            await ready.wait()  # every server has started (a restart at start-up is another test's)
            for n in range(RESTARTS):
                await anyio.sleep(rng.uniform(0.3, 1.2))
                mode = ("fast", "immediate")[n % 2]
                await anyio.to_thread.run_sync(own_cluster.restart, mode)
                modes[mode] += 1
            restarted.set()

        async def writer(index: int) -> None:
            nonlocal connected
            async with Client(build_server(config, segmenter)) as client:
                connected += 1
                if connected == WRITERS:
                    ready.set()
                n = 0
                while not restarted.is_set() or n < 10:
                    write = Write(f"pg-{index}-{n}", _content(f"pg {index}", n))
                    writes.append(write)
                    args = {"content": write.content, "category": "note", "request_id": write.request_id}
                    while write.answer is None:
                        started = datetime.now(UTC)
                        result = await client.call_tool("remember", args)
                        error = str(result.content[0].text) if result.is_error else None  # type: ignore[union-attr]
                        write.attempts.append(Attempt(started, datetime.now(UTC), error))
                        if error is None:
                            write.answer = result.structured_content
                        else:
                            await anyio.sleep(0.05)
                    n += 1

        with anyio.fail_after(BOUND_S):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(restarter)
                for index in range(WRITERS):  # a server each: their commits overlap the restarts more often
                    tasks.start_soon(writer, index)

        direct = Config.from_env({}, db_path=url)
        settled = sum("a commit whose connection was lost took effect" in r.getMessage() for r in caplog.records)
        _check_once(direct, writes, restarts=modes, settled=settled, server_times=True)


# ---- SQLite: servers killed with SIGKILL ---------------------------------------------------------


def _start(db: str, cache_dir: Path) -> subprocess.Popen[bytes]:
    proc, hello = raw_server(db, cache_dir, "retry")
    _send(proc, hello)
    return proc


def _end(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    proc.send_signal(sig)
    proc.wait(timeout=30)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _send(proc: subprocess.Popen[bytes], lines: list[dict[str, Any]]) -> None:
    assert proc.stdin
    proc.stdin.write(b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines))
    proc.stdin.flush()


def _call(number: int, write: Write) -> dict[str, Any]:
    arguments = {"content": write.content, "category": "note", "request_id": write.request_id}
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": arguments},
    }


def _answers(proc: subprocess.Popen[bytes], wanted: int) -> Iterator[dict[str, Any]]:
    """Up to `wanted` answers to calls (the initialize answer skipped), as they come."""
    assert proc.stdout
    seen = 0
    while seen < wanted:
        raw = proc.stdout.readline()
        if not raw:
            return
        answer = json.loads(raw)
        if answer.get("id"):
            seen += 1
            yield answer


def _stored_of(db: str, writes: list[Write]) -> int:
    """How many of `writes` the database holds (written, but the server was killed before it answered)."""
    if not writes:
        return 0
    with contextlib.closing(sqlite3.connect(db)) as conn:
        marks = ",".join("?" * len(writes))
        found = conn.execute(f"SELECT count(*) FROM memories WHERE content IN ({marks})", [w.content for w in writes])
        return int(found.fetchone()[0])


def _kill_trials(db: str, cache_dir: Path, trials: int) -> tuple[list[Write], dict[str, int]]:
    """Each trial: one server gets CALLS remember calls at once and is killed with SIGKILL after a
    few answers; a new server then gets every call left unanswered, and a few answered ones, again
    with the same request_id, until each is answered."""
    rng = random.Random(9)
    writes: list[Write] = []
    counts = Counter[str]()
    for trial in range(trials):
        batch = [Write(f"kill-{trial}-{n}", _content(f"kill {trial}", n)) for n in range(1, CALLS + 1)]
        writes += batch
        proc = _start(db, cache_dir)
        # A pipe of one page: once the client stops reading, the server's answers wait in it while
        # the server goes on writing, so that at the kill some writes are stored and unanswered.
        assert proc.stdout
        fcntl.fcntl(proc.stdout.fileno(), _F_SETPIPE_SZ, 4096)
        _send(proc, [_call(n, w) for n, w in enumerate(batch, 1)])
        kill_after = rng.randint(1, CALLS - 5)
        for answer in _answers(proc, kill_after):
            write = batch[answer["id"] - 1]
            assert not answer["result"]["isError"], answer
            write.answer = answer["result"]["structuredContent"]
        time.sleep(rng.uniform(0.0, 0.5))  # the client reads no more: the server writes on meanwhile
        _end(proc, signal.SIGKILL)  # mid-stream: later calls are in flight, one maybe mid-commit
        counts["killed"] += 1
        answered = [w for w in batch if w.answer is not None]
        counts["answered before the kill"] += len(answered)
        counts["stored, unanswered at the kill"] += _stored_of(db, [w for w in batch if w.answer is None])
        while unanswered := [w for w in batch if w.answer is None]:
            again = _start(db, cache_dir)
            repeats = rng.sample(answered, min(3, len(answered)))  # retried though answered: the same answer
            calls = unanswered + repeats
            counts["retries"] += len(calls)
            _send(again, [_call(n, w) for n, w in enumerate(calls, 1)])
            for answer in _answers(again, len(calls)):
                write = calls[answer["id"] - 1]
                assert not answer["result"]["isError"], answer
                if write.answer is None:
                    write.answer = answer["result"]["structuredContent"]
                else:
                    assert answer["result"]["structuredContent"] == write.answer
            _end(again, signal.SIGTERM)
    return writes, dict(counts)


async def test_remember_calls_retried_after_a_kill_store_each_memory_once(config: Config, cache_dir: Path) -> None:
    assert config.db_url is None  # the SQLite file of the `config` fixture
    writes, counts = await anyio.to_thread.run_sync(_kill_trials, str(config.db_path), cache_dir, TRIALS)
    assert rawdb.value(config, "PRAGMA integrity_check") == "ok"
    assert counts["answered before the kill"] < len(writes)  # calls were in flight at each kill
    assert counts["stored, unanswered at the kill"] > 0  # the case retries are for: written, never answered
    print(f"\nkill trials: {counts}")
    _check_once(config, writes, restarts=Counter({"SIGKILL": counts["killed"]}), retries=counts["retries"])


# ---- the checks --------------------------------------------------------------------------------


def _check_once(
    config: Config,
    writes: list[Write],
    *,
    restarts: Counter[str],
    settled: int = 0,
    retries: int | None = None,
    server_times: bool = False,
) -> None:
    """Every write answered `created` once and stored once; with `server_times`, the try that
    stored each one (by the memory's creation time) did not answer "rolled back"."""
    assert writes and all(w.answer is not None for w in writes)
    assert all(w.answer["action"] == "created" for w in writes if w.answer is not None), [
        (w.request_id, w.answer) for w in writes if w.answer and w.answer["action"] != "created"
    ]
    rows = rawdb.rows(config, "SELECT content, count(*), min(created_at) FROM memories GROUP BY content")
    stored = {content: (count, created) for content, count, created in rows}
    doubled = [c for c, (count, _) in stored.items() if count > 1]
    lost = [w.content for w in writes if w.content not in stored]
    assert doubled == [] and lost == []
    assert len(stored) == len(writes)
    assert len({w.answer["id"] for w in writes if w.answer is not None}) == len(writes)
    errors = Counter(_kind(a.error) for w in writes for a in w.attempts if a.error is not None)
    false_rollbacks = 0
    if server_times:
        for write in writes:
            created = datetime.fromisoformat(stored[write.content][1])
            storing = [a for a in write.attempts if a.started <= created <= a.ended]
            assert len(storing) == 1, (write.request_id, created, write.attempts)
            if storing[0].error is not None and "rolled back" in storing[0].error:
                false_rollbacks += 1
    assert false_rollbacks == 0
    tries = retries if retries is not None else sum(len(w.attempts) - 1 for w in writes)
    print(  # the figures for RELIABILITY.md (pytest -s)
        f"\nrestarts {dict(restarts)}, writes {len(writes)}, retries {tries}, errors {dict(errors)}, "
        f"lost commits settled {settled}, doubled {len(doubled)}, lost {len(lost)}, false rollbacks {false_rollbacks}"
    )
