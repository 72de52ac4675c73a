"""jieba, loaded once per process in a background thread so start-up never waits for it.

jieba's own start-up unpickles a 500,000-entry prefix dictionary in one call that holds the GIL
for a quarter of a second, which would stall the event loop answering `initialize`. We keep our
own cache of the same dictionary in chunks: loading it chunk by chunk lets the interpreter switch
threads between chunks, so the server stays responsive while the dictionary loads.
"""

from __future__ import annotations

import logging
import marshal
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

if TYPE_CHECKING:
    from jieba import Tokenizer

__all__ = ["Segmenter"]

log = logging.getLogger(__name__)

_CHUNK = 8000
_CACHE_FORMAT = 1


class Segmenter:
    """Chinese/English word segmentation; thread-safe once loaded."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = cache_dir
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._tokenizer: Tokenizer | None = None
        self._error: BaseException | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def start(self) -> None:
        """Begin loading in a daemon thread; calling it again does nothing."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="jieba-loader", daemon=True)
                self._thread.start()

    def wait_sync(self) -> None:
        self.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(f"the Chinese segmenter failed to load: {self._error}") from self._error

    async def wait(self) -> None:
        """Wait for the dictionary without blocking the event loop."""
        if not self._ready.is_set():
            self.start()
            await anyio.to_thread.run_sync(self._ready.wait)
        if self._error is not None:
            raise RuntimeError(f"the Chinese segmenter failed to load: {self._error}") from self._error

    def cut(self, text: str) -> list[str]:
        """Precise-mode segmentation (queries)."""
        return list(self._loaded().cut(text, HMM=True))

    def _loaded(self) -> Tokenizer:
        if self._tokenizer is None:
            self.wait_sync()
        assert self._tokenizer is not None
        return self._tokenizer

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            freq, total = self._read_cache(jieba.__version__) or self._build(tokenizer, jieba.__version__)
            tokenizer.FREQ, tokenizer.total = freq, total
            tokenizer.initialized = True
            self._tokenizer = tokenizer
            log.debug("Chinese segmenter ready in %.2f s", time.perf_counter() - started)
        except BaseException as exc:  # recorded and re-raised to every waiter
            log.exception("loading the jieba dictionary failed")
            self._error = exc
        finally:
            self._ready.set()

    def _cache_file(self, version: str) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / f"jieba-{version}-v{_CACHE_FORMAT}.dict"

    def _read_cache(self, version: str) -> tuple[dict[str, int], int] | None:
        path = self._cache_file(version)
        if path is None or not path.is_file():
            return None
        try:
            total, chunks = marshal.loads(path.read_bytes())
            freq: dict[str, int] = {}
            for chunk in chunks:  # one short C call per chunk: other threads run in between
                freq.update(marshal.loads(chunk))
            return freq, int(total)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            log.warning("ignoring unreadable segmenter cache %s: %s", path, exc)
            return None

    def _build(self, tokenizer: Any, version: str) -> tuple[dict[str, int], int]:
        freq, total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
        path = self._cache_file(version)
        if path is not None:
            self._write_cache(path, freq, total)
        return freq, total

    @staticmethod
    def _write_cache(path: Path, freq: dict[str, int], total: int) -> None:
        items = list(freq.items())
        chunks = [marshal.dumps(dict(items[i : i + _CHUNK])) for i in range(0, len(items), _CHUNK)]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".jieba-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps((total, chunks)))
            os.replace(tmp, path)
        except OSError as exc:  # a read-only cache dir costs start-up time, nothing else
            log.warning("could not write the segmenter cache %s: %s", path, exc)
