"""Our stdio transport against the SDK's, and our lean schemas against pydantic's, end to end: the
installed server code in a child process (`benchmarks.stdio_server`), the SDK's `Client` over
stdio with its default settings.

    python -m benchmarks.stdio_transport [--memories 1000] [--calls 200] [--rounds 3] [--malformed]

Each round starts one server per variant, each on its own copy of one database of `--memories`
memories (LoCoMo and MemoryBank turns), then times `tools/list`, `recall` (LoCoMo questions and
MemoryBank messages) and `remember` (new turns) round trips, each call made of every server in
turn so that the load of a shared machine falls on all variants alike; also spawn until the
`initialize` answer is read. Percentiles are over every round's calls. `tools/list` is also
weighed for each schema variant: compact JSON bytes of the result, and bytes / 4 as a rough
token count.

--malformed sends each malformed line of tests/server/test_stdio_malformed.py, then a line over the
limit, to both transports over pipes, and prints what came back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .latency import _corpus, _pct, _queries, segmenter_cache

VARIANTS = [("own", "lean"), ("sdk", "lean"), ("own", "pydantic")]


def _argv(transport: str, schemas: str, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "benchmarks.stdio_server",
        "--db",
        str(db),
        "--transport",
        transport,
        "--schemas",
        schemas,
    ]


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "MCP_MEMORY_CACHE_DIR": str(cache), "MCP_MEMORY_LOG_LEVEL": "ERROR"}


def _compact_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def _database(path: Path, memories: int, segmenter: Segmenter) -> list[str]:
    """A database of the first `memories` texts of the corpus; the texts after them, for remember."""
    texts = _corpus(memories + 5000)
    config = Config.from_env({}, db_path=path, cache_dir=Path(segmenter_cache()))
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        rows = [{"content": t[:2000], "category": "fact"} for t in texts[:memories]]
        for start in range(0, len(rows), 5000):
            await service.import_memories(rows[start : start + 5000])
    return texts[memories:]


def _server_cpu(marker: str) -> float:
    """CPU seconds (user + system) used so far by the process whose command line holds `marker`."""
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return float("nan")


class _Server:
    """One variant's server and client, and what was measured of it."""

    def __init__(self, transport: str, schemas: str, db: Path) -> None:
        self.variant = (transport, schemas)
        self.db = db
        argv = _argv(transport, schemas, db)
        self.params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env(Path(segmenter_cache())))
        self.times: dict[str, list[float]] = {}

    def add(self, name: str, value: float) -> None:
        self.times.setdefault(name, []).append(value)

    async def start(self, stack: AsyncExitStack) -> Client:
        started = time.perf_counter()
        client = await stack.enter_async_context(Client(self.params))
        self.add("spawn_initialize", time.perf_counter() - started)
        await client.call_tool("recall", {"query": "warm up"})  # waits for the index the server builds
        for query in _queries(20):  # jieba and the index loaded and warm before anything is timed
            await client.call_tool("recall", {"query": query})
        return client


async def _interleaved(servers: list[tuple[_Server, Client]], name: str, calls: list[Any]) -> None:
    """Each call made of every server in turn (the order rotating), so a busy moment of the
    machine falls on all of them alike: the round trip, this process's CPU for it (where the
    client parses and validates the result), and each server's CPU over all of its calls."""
    cpu = [_server_cpu(str(server.db)) for server, _ in servers]
    for i, arguments in enumerate(calls):
        for server, client in servers[i % len(servers) :] + servers[: i % len(servers)]:
            mine, t = time.process_time(), time.perf_counter()
            if name == "tools/list":
                await client.list_tools()
            else:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result.content
            server.add(name, time.perf_counter() - t)
            server.add(f"{name} client CPU", time.process_time() - mine)
    for (server, _), before in zip(servers, cpu, strict=True):
        server.add(f"{name} server CPU", (_server_cpu(str(server.db)) - before) / len(calls))


async def _tools_list_bytes(schemas: str, db: Path) -> tuple[int, dict[str, Any]]:
    """The compact JSON bytes of tools/list as the client receives it, and the result."""
    argv = _argv("own", schemas, db)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env(Path(segmenter_cache())))
    async with Client(params) as client:
        listed = (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
    return _compact_bytes(listed), listed


def _line(name: str, values: list[float]) -> str:
    return f"{name} p50 {_pct(values, 0.5):.2f} / p95 {_pct(values, 0.95):.2f} ms"


async def timings(args: argparse.Namespace) -> None:
    segmenter = Segmenter(Path(segmenter_cache()))
    await segmenter.wait()
    with tempfile.TemporaryDirectory(prefix="mms-stdio-") as tmp:
        base = Path(tmp) / "base.db"
        fresh = await _database(base, args.memories, segmenter)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        for schemas in ("lean", "pydantic-input", "pydantic-output", "pydantic"):
            size, _ = await _tools_list_bytes(schemas, Path(tmp) / f"list-{schemas}.db")
            print(f"tools/list, schemas {schemas}: {size:,} bytes, about {size // 4:,} tokens (bytes / 4)", flush=True)
        pooled: dict[tuple[str, str], dict[str, list[float]]] = {v: {} for v in VARIANTS}
        for round_no in range(args.rounds):
            servers = []
            for variant in VARIANTS:
                db = Path(tmp) / f"r{round_no}-{variant[0]}-{variant[1]}.db"
                shutil.copy(base, db)
                servers.append(_Server(*variant, db))
            async with AsyncExitStack() as stack:
                started = [(server, await server.start(stack)) for server in servers]
                await _interleaved(started, "tools/list", [None] * 20)
                await _interleaved(started, "recall", [{"query": q} for q in _queries(args.calls)])
                remembered = [{"content": t[:2000], "category": "fact"} for t in fresh[: args.calls]]
                await _interleaved(started, "remember", remembered)
            for server in servers:
                for name, values in server.times.items():
                    pooled[server.variant].setdefault(name, []).extend(values)
                round_p50 = _pct(server.times["recall"], 0.5)
                pooled[server.variant].setdefault("recall p50 of the round", []).append(round_p50)
                server.db.unlink()
        print(
            f"{args.memories:,} memories; {args.calls} recalls and remembers per server and round, {args.rounds} rounds"
        )
        for variant, got in pooled.items():
            print(f"transport {variant[0]}, schemas {variant[1]}:")
            for name in ("recall", "remember", "tools/list"):
                line = f"  {name} p50 {_pct(got[name], 0.5):.2f} / p95 {_pct(got[name], 0.95):.2f} ms"
                line += f"; CPU per call: server {_mean(got[name + ' server CPU']):.2f} ms"
                line += f", client {_mean(got[name + ' client CPU']):.2f} ms"
                if name == "recall":
                    line += (
                        " (p50 of each round: " + ", ".join(f"{p:.2f}" for p in got["recall p50 of the round"]) + ")"
                    )
                print(line)
            spawn = got["spawn_initialize"]
            print(f"  spawn to initialize answered: p50 {_pct(spawn, 0.5):.0f} ms")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) * 1000 if values else float("nan")


# ---- malformed lines ---------------------------------------------------------------------------


class _Pipe:
    """The server on pipes: raw lines in, JSON messages out (a reader thread)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.heard: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.proc.stderr and self.proc.stderr.read(), daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.heard.put(json.loads(line))
        self.heard.put(None)

    def send(self, data: bytes) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return False
        return True

    def answer(self, timeout: float) -> dict[str, Any] | None:
        """The next message that is not a notification, or None (none within `timeout`, or stdout closed)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.heard.get(timeout=left)
            except queue.Empty:
                return None
            if message is None or "method" not in message:
                return message
        return None

    def peak_mib(self) -> float:
        for row in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _outcome(pipe: _Pipe, line: bytes, wait: float) -> str:
    ping = b'{"jsonrpc": "2.0", "id": "after", "method": "ping"}'
    if not pipe.send(line):
        return "stdin closed by the server"
    reply = pipe.answer(wait)
    if reply is not None and reply.get("id") == "after":
        said = "no reply of its own (only the ping after it was answered)"
    elif reply is not None:
        error = reply.get("error")
        result = reply.get("result", {})
        said = (
            f"error {error['code']} (id {reply.get('id')!r})"
            if error
            else f"a result (id {reply.get('id')!r}, isError {result.get('isError', False)})"
        )
        if pipe.send(ping):
            pong = pipe.answer(wait)
            said += "; the ping after it answered" if pong is not None else "; the ping after it NOT answered"
        return said
    else:
        said = f"no reply within {wait:g} s"
    if reply is None:
        if pipe.proc.poll() is not None:
            return said + f"; the server exited ({pipe.proc.returncode})"
        if pipe.send(ping):
            pong = pipe.answer(wait)
            said += "; the ping after it answered" if pong is not None else "; the ping after it NOT answered"
    return said


def malformed(wait: float) -> None:
    from tests.test_stdio_malformed import _HUGE, MALFORMED, _initialize

    cache = Path(segmenter_cache())
    with tempfile.TemporaryDirectory(prefix="mms-malformed-") as tmp:
        for transport in ("own", "sdk"):
            print(f"transport {transport}:")
            cases = [(what, line, f"{code}") for what, line, code, _ in MALFORMED]
            head = b'{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "remember", "arguments": '
            huge = head + b'{"content": "' + "长".encode() * (_HUGE // 3) + b'"}}}'
            cases.append((f"a line of {len(huge) / 2**20:.0f} MiB", huge, "-32600"))
            pipe = _Pipe(_argv(transport, "lean", Path(tmp) / f"{transport}.db"), _env(cache))
            try:
                pipe.send(_initialize())
                assert pipe.answer(60) is not None, "no answer to initialize"
                pipe.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
                for what, line, expected in cases:
                    before = pipe.peak_mib()
                    said = _outcome(pipe, line, wait)
                    grown = pipe.peak_mib() - before
                    print(f"  {what} (expected {expected}): {said}; peak RSS +{grown:.0f} MiB", flush=True)
            finally:
                pipe.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=200, help="recalls and remembers per server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--malformed", action="store_true", help="only the malformed-line check")
    parser.add_argument("--wait", type=float, default=5.0, help="seconds to wait for each reply (--malformed)")
    args = parser.parse_args()
    if args.malformed:
        malformed(args.wait)
    else:
        anyio.run(timings, args)


if __name__ == "__main__":
    main()
