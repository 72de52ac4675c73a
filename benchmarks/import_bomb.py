"""What an import over HTTP costs the server, and the other namespaces while it runs: files that
weigh little and unpack to a lot (decompression bombs), and a large legal file.

    python -m benchmarks.import_bomb [--python PATH] [--legal 20000] [--scenarios zeros,json,legal]

Each scenario starts its own server (`PATH -m mcp_memory_server --transport http`, a new SQLite
file, two tokens: alice and bob, each with its own namespace), so the peak RSS read at the end
(VmHWM of /proc/PID/status) is that scenario's alone. Alice posts the file to the dashboard's
/ui/api/import while bob lists his memories (GET /ui/api/memories) every 50 ms; printed: alice's
status and time to answer, the server's peak RSS, and bob's slowest and median answer while
alice's import ran.

- zeros: 1 GiB of zero bytes, gzipped (about 1 MB).
- json: a mem0 list of tiny memories, `[{"memory": "a"}, ...]`, gzipped to about 64 KB.
- dense: `[{"a": {}}, ...]` with 4,194,300 JSON values (within the default limit of 4,194,304).
- items: 131,072 one-letter mem0 memories (the default limit on items).
- legal: a mem0 `get_all` of `--legal` distinct memories, half English, half Chinese (from
  benchmarks/data/zh_memories.json), gzipped; it must be imported.

`--python` runs another checkout's interpreter (its venv's python, the package installed there),
to compare the code before a change with the code after it on the same machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from .latency import segmenter_cache

TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}
_FILE = {"Content-Type": "application/octet-stream"}
ZH = Path(__file__).parent / "data" / "zh_memories.json"
_LIKES = ("green tea", "long walks", "jazz records", "mechanical keyboards", "spicy noodles", "chess", "cycling")
_TIMES = ("in the morning", "after work", "on weekends", "when travelling", "before meetings")


def zeros(size: int = 1 << 30) -> bytes:
    """`size` zero bytes gzipped, made a MiB at a time (the whole never sits in memory)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, packer.flush()])


def tiny_json(packed: int = 64 * 1024) -> bytes:
    """A mem0 list of one-letter memories, gzipped to about `packed` bytes."""
    item = b'{"memory": "a"},'
    count = 1 << 16
    while True:  # the ratio is stable: scale the count up to the packed size wanted
        body = gzip.compress(b"[" + item * count + b'{"memory": "b"}]', 9)
        if len(body) >= packed * 0.95:
            return body
        count = int(count * packed / len(body)) + 1


def dense(values: int = 4 * 1024 * 1024) -> bytes:
    """`[{"a": {}}, ...]` with as many JSON values as the default limit lets through (four marks
    each), gzipped: what parsing costs at that limit, in a file of no known format."""
    return gzip.compress(b"[" + b'{"a":{}},' * (values // 4 - 1) + b"{}]", 9)


def items(count: int = 4 * 1024 * 1024 // 32) -> bytes:
    """As many one-letter mem0 memories as the default limit on items lets through, gzipped."""
    return gzip.compress(b"[" + b'{"memory": "a"},' * (count - 1) + b'{"memory": "b"}]', 9)


def legal(count: int) -> bytes:
    """A mem0 `get_all` of `count` distinct memories, every other one Chinese, gzipped."""
    chinese = [m["content"] for user in json.loads(ZH.read_text(encoding="utf-8"))["users"] for m in user["memories"]]
    results = []
    for n in range(count):
        if n % 2:
            text = f"{chinese[n // 2 % len(chinese)]}（记录 {n}）"
        else:
            what, when = _LIKES[n // 2 % len(_LIKES)], _TIMES[n // 14 % len(_TIMES)]
            text = f"The user likes {what} {when}, noted in conversation {n}."
        created = f"2025-{n % 12 + 1:02d}-{n % 28 + 1:02d}T08:00:00Z"
        results.append({"id": f"m-{n}", "memory": text, "categories": ["personal"], "created_at": created})
    return gzip.compress(json.dumps({"results": results}, ensure_ascii=False).encode(), 9)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    base: str

    def peak_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM in /proc")


@contextmanager
def server(python: str, tmp: Path) -> Iterator[Server]:
    port = free_port()
    env = {
        **os.environ,
        "MCP_MEMORY_DB": str(tmp / "bomb.db"),
        "MCP_MEMORY_CACHE_DIR": segmenter_cache(),
        "MCP_MEMORY_TOKENS": ",".join(f"{ns}:{token}" for ns, token in TOKENS.items()),
        "MCP_MEMORY_LOG_LEVEL": "ERROR",
    }
    with (tmp / "stderr.log").open("wb") as err:
        proc = subprocess.Popen(
            [python, "-m", "mcp_memory_server", "--transport", "http", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            cwd=tmp,  # not this checkout: `-m` puts the working directory first on the path
        )
    try:
        base = f"http://127.0.0.1:{port}/ui/api"
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {(tmp / 'stderr.log').read_text()}")
            try:
                if httpx2.get(f"{base}/info", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                time.sleep(0.1)
        yield Server(proc, base)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def client(base: str, namespace: str, timeout: float) -> httpx2.Client:
    return httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {TOKENS[namespace]}"}, timeout=timeout)


def scenario(python: str, body: bytes, timeout: float) -> dict[str, object]:
    """Alice imports `body` while bob lists; the figures of the run."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        server(python, Path(tmp)) as served,
        client(served.base, "bob", timeout) as bob,
        client(served.base, "alice", timeout) as alice,
    ):
        bob.post("/memories", json={"content": "Bob 喜欢绿茶 and green tea"}).raise_for_status()
        idle = served.peak_mb()
        latencies: list[float] = []
        running = threading.Event()
        running.set()

        def poll() -> None:
            while running.is_set():
                started = time.perf_counter()
                bob.get("/memories", params={"limit": 5}).raise_for_status()
                latencies.append(time.perf_counter() - started)
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(0.3)  # a few answers before the import
        before = len(latencies)
        started = time.perf_counter()
        try:
            answer = alice.post("/import", content=body, headers=_FILE)
            status, text = answer.status_code, answer.text
        except httpx2.TimeoutException:
            status, text = 0, f"no answer within {timeout:.0f} s"
        elapsed = time.perf_counter() - started
        running.clear()
        poller.join()
        during = latencies[before:] or [float("nan")]
        return {
            "status": status,
            "answer": text[:160],
            "seconds": elapsed,
            "peak_mb": served.peak_mb(),
            "idle_mb": idle,
            "other_max_ms": max(during) * 1000,
            "other_p50_ms": statistics.median(during) * 1000,
            "other_calls": len(during),
        }


def machine() -> str:
    model = platform.processor()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{platform.machine()} {model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose mcp_memory_server serves")
    parser.add_argument("--legal", type=int, default=20_000, help="memories in the legal file")
    parser.add_argument("--scenarios", default="zeros,json,legal")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the import's answer")
    args = parser.parse_args()
    makers: dict[str, Callable[[], bytes]] = {
        "zeros": zeros,
        "json": tiny_json,
        "dense": dense,
        "items": items,
        "legal": lambda: legal(args.legal),
    }
    where = subprocess.run(
        [args.python, "-c", "import mcp_memory_server; print(mcp_memory_server.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    ).stdout.strip()
    print(f"machine: {machine()}; server: {where}", flush=True)
    for name in args.scenarios.split(","):
        body = makers[name]()
        unpacked = sum(len(chunk) for chunk in _unpacked(body))
        print(f"{name}: {len(body):,} bytes gzipped, {unpacked:,} unpacked", flush=True)
        figures = scenario(args.python, body, args.timeout)
        print(
            f"  {figures['status']} in {figures['seconds']:.2f} s; server peak RSS {figures['peak_mb']:.0f} MB"
            f" (idle {figures['idle_mb']:.0f} MB); the other namespace's list: slowest"
            f" {figures['other_max_ms']:.0f} ms, median {figures['other_p50_ms']:.0f} ms"
            f" over {figures['other_calls']} calls\n  answer: {figures['answer']}",
            flush=True,
        )


def _unpacked(body: bytes) -> Iterator[bytes]:
    unpacker = zlib.decompressobj(31)
    data = body
    while data:
        yield unpacker.decompress(data, 1 << 20)
        data = unpacker.unconsumed_tail


if __name__ == "__main__":
    main()
