"""Cold start: spawn -> `initialize` answered over stdio, beside a bare `import mcp.server`.

python -m benchmarks.startup [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp_memory_server.text import Segmenter

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "startup-benchmark", "version": "1"},
    },
}


def cold_start(command: str, db: Path, cache: Path) -> float:
    env = {**os.environ, "MCP_MEMORY_DB": str(db), "MCP_MEMORY_CACHE_DIR": str(cache), "MCP_MEMORY_LOG_LEVEL": "ERROR"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    elapsed = time.perf_counter() - started
    assert answer.get("id") == 1 and "result" in answer, answer
    proc.stdin.close()
    proc.wait(timeout=30)
    return elapsed


def bare_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server"], check=True)
    return time.perf_counter() - started


def _spread(runs: list[float]) -> str:
    return f"(min {min(runs) * 1000:.0f}, max {max(runs) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    command = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert command, "install the package first (make test or pip install -e .)"
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        # The segmenter's cache, built here: a server asked only for `initialize` exits before its
        # background thread has written it.
        Segmenter(cache).wait_sync()
        cold_start(command, Path(tmp) / "warmup.db", cache)
        bare_import()
        ours = [cold_start(command, Path(tmp) / f"run{i}.db", cache) for i in range(args.runs)]
        bare = [bare_import() for _ in range(args.runs)]
    ours_median, bare_median = statistics.median(ours), statistics.median(bare)
    print(
        f"cold start (spawn -> initialize answered), median of {args.runs}: {ours_median * 1000:.0f} ms {_spread(ours)}"
    )
    print(f"bare `python -c 'import mcp.server'`, median of {args.runs}:   {bare_median * 1000:.0f} ms {_spread(bare)}")
    print(f"ratio: {ours_median / bare_median:.2f}x")


if __name__ == "__main__":
    main()
