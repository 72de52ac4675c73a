"""The semantic stage's background work: the embedding model, loaded once per process in a worker
thread after start-up, and one worker per served namespace that gives every memory a vector.

Writes never wait for the model: `remember` and imports commit as they always did, and the
worker finds what has no current vector afterwards (memories written by this process wake it at
once; other processes' writes are found by reading the change log every few seconds, or heard at
once on PostgreSQL). It embeds a small batch in a worker thread with no lock or transaction held,
then writes the batch's vectors in one short transaction (store.write_vectors), yielding between
batches so writers are never starved. A model that cannot load or run is logged once and recall
stays keyword-only; nothing the clients call fails because of it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..config.config import Config
from ..config.settings import Semantic
from ..embed.embedder import Embedder, EmbedderUnavailable
from ..errors import MemoryServerError
from ..models import SemanticStatus
from ..store.changeset import Change
from ..store.live_vectors import PendingText
from ..store.store import Store

__all__ = ["EmbeddingWorker", "Progress", "SemanticStage"]

log = logging.getLogger(__name__)

Progress = Callable[[int, int], Awaitable[None]]
Loader = Callable[[], Embedder]

# Texts per model call: a recall's query waits for at most one call to finish (the model runs
# one call at a time), so background batches go through the model in small slices.
_SLICE = 8
# How often an idle worker reads the change log for other processes' writes (SQLite cannot tell).
_POLL_SECONDS = 2.0
# Seqs from the change log checked per query when catching up with many writes (an import).
_CHANGED_CHUNK = 1000
# The worker's model calls wait until this process has written nothing for this long: on a
# machine of few cores the model would otherwise take the CPU from a stream of remember calls.
_QUIET_SECONDS = 0.2
# After a database error (another process holding the write lock too long): wait, then go on.
_RETRY_SECONDS = 5.0


class SemanticStage:
    """The process's embedding model, shared by every namespace: `state` is off, loading, ready
    or failed (`reason` says why it is off or failed). The model is loaded by the first
    `loaded()`, in a worker thread; its calls run one at a time, in worker threads."""

    def __init__(self, load: Loader | None, *, off_reason: str | None = None) -> None:
        self._load = load
        self.state: Literal["off", "loading", "ready", "failed"] = "off" if load is None else "loading"
        self.reason = off_reason if load is None else None
        self.embedder: Embedder | None = None
        self._done = anyio.Event()
        self._started = False
        self._calls = threading.Lock()  # the Embedder runs one call at a time

    @classmethod
    def from_config(
        cls, config: Config, load: Callable[[Semantic], Embedder], installed: Callable[[Semantic], bool]
    ) -> SemanticStage:
        """The stage the settings ask for: `semantic` off, on, or auto (on when the configured
        backend is installed)."""
        setting = config.embedding.semantic
        if setting == "off":
            return cls(None, off_reason="turned off (semantic = off)")
        if setting == "auto" and not installed(config.embedding):
            return cls(None, off_reason="no embedding backend installed (pip install 'jiyi[semantic]')")
        return cls(lambda: load(config.embedding))

    @property
    def model_id(self) -> str | None:
        return self.embedder.model_id if self.embedder is not None else None

    async def loaded(self) -> Embedder | None:
        """The model, loading it on the first call; None when the stage is off or failed."""
        if self._load is None:
            return None
        if not self._started:
            self._started = True
            try:
                self.embedder = await anyio.to_thread.run_sync(self._load)
                self.state = "ready"
                log.info("semantic recall: embedding model %s loaded (%d dimensions)", self.model_id, self.embedder.dim)
            except EmbedderUnavailable as exc:
                self.fail(str(exc))
            except Exception as exc:  # a backend's own error: the stage is off, serving goes on
                self.fail(f"the embedding model failed to load: {type(exc).__name__}: {exc}")
            finally:
                self._done.set()
        await self._done.wait()
        return self.embedder

    def fail(self, reason: str) -> None:
        """Turn the stage off for good, with one log line saying why; recall stays keyword-only."""
        if self.state != "failed":  # one line, however many namespaces notice it
            log.warning("semantic recall is off, recall stays keyword-only: %s", reason)
        self.state, self.reason, self.embedder = "failed", reason, None

    async def encode_query(self, text: str) -> tuple[str, Any] | None:
        """(model id, the query's vector) for the store's vector search, or None when no model is
        ready (store.QueryEncoder). A model that fails here turns the stage off, once."""
        embedder = self.embedder
        if embedder is None:
            return None
        try:
            vectors = await anyio.to_thread.run_sync(self._call, embedder.embed_queries, [text])
        except Exception as exc:
            self.fail(f"the embedding model failed on a query: {type(exc).__name__}: {exc}")
            return None
        return embedder.model_id, vectors[0]

    async def embed_passages(
        self, embedder: Embedder, texts: Sequence[str], pause: Callable[[], Awaitable[None]] | None = None
    ) -> list[Any]:
        """Each text's vector, computed in worker threads `_SLICE` texts per model call (`pause`
        is awaited before each)."""
        out: list[Any] = []
        for start in range(0, len(texts), _SLICE):
            if pause is not None:
                await pause()
            part = texts[start : start + _SLICE]
            vectors = await anyio.to_thread.run_sync(self._call, embedder.embed_passages, part)
            if len(vectors) != len(part) or any(len(v) != embedder.dim for v in vectors):
                raise EmbedderUnavailable(f"{embedder.model_id} returned vectors of the wrong shape")
            out.extend(vectors)
        return out

    def _call(self, method: Callable[[Sequence[str]], Any], texts: Sequence[str]) -> Any:
        with self._calls:
            return method(texts)


class EmbeddingWorker:
    """Gives every memory of one namespace's store a vector of the stage's model, in the
    background (`run`), or now with progress (`catch_up`, what the CLI does after an import)."""

    def __init__(self, store: Store, stage: SemanticStage, batch: int | None = None) -> None:
        self.store = store
        self.stage = stage
        self.batch = max(1, batch if batch is not None else store.config.embedding.embedding_batch)
        self.busy = False
        self.embedded = 0  # vectors this worker wrote
        self._wake = anyio.Event()
        self._last_write = 0.0

    def _changed(self, change: Change) -> None:
        self._last_write = time.monotonic()
        self._wake.set()

    async def _quiet(self) -> None:
        """Let this process's writers go first: wait until none has written for a moment."""
        while (left := self._last_write + _QUIET_SECONDS - time.monotonic()) > 0:  # noqa: ASYNC110 (a deadline)
            await anyio.sleep(left)

    async def attach(self) -> bool:
        """Load the model and search the vectors already stored, embedding nothing now (what a
        one-off search does). False when the stage is off or its model failed."""
        return await self._ready() is not None

    async def _ready(self) -> Embedder | None:
        embedder = await self.stage.loaded()
        if embedder is not None:
            self.store.use_vectors(embedder.model_id, embedder.dim)
            self.store.encoder = self.stage
        return embedder

    async def run(self) -> None:
        """Until cancelled: embed whatever has no current vector, then wait for writes. Never
        raises: whatever goes wrong turns the stage off with one log line, and serving goes on."""
        try:
            await self._run()
        except Exception as exc:
            self.stage.fail(f"background embedding stopped: {type(exc).__name__}: {exc}")

    async def _run(self) -> None:
        embedder = await self._ready()
        if embedder is None:
            return
        self.store.on_change.append(self._changed)
        try:
            seen = -1  # nothing seen yet: a full pass first
            while self.stage.state == "ready":
                try:
                    seen = await self._follow(embedder, seen)
                except MemoryServerError as exc:  # another process held the database: try again later
                    log.warning("background embedding paused: %s", exc)
                    await anyio.sleep(_RETRY_SECONDS)
                    continue
                with anyio.move_on_after(_POLL_SECONDS):
                    await self._wake.wait()
                self._wake = anyio.Event()
        finally:
            self.store.on_change.remove(self._changed)

    async def _follow(self, embedder: Embedder, seen: int) -> int:
        """Embed what was written since change `seen` (everything pending when -1, or when the
        change log no longer reaches back that far); returns the change number now seen."""
        bounds = await self.store.vector_bounds()
        if seen >= 0 and bounds.change == seen:
            return seen
        if seen < 0 or bounds.oldest > seen + 1:
            await self._pass(embedder, None)
            return bounds.change
        changed = await self.store.changed_since(seen)
        for start in range(0, len(changed), _CHANGED_CHUNK):
            pending = await self.store.pending_vectors_of(embedder.model_id, changed[start : start + _CHANGED_CHUNK])
            for first in range(0, len(pending), self.batch):
                if not await self._embed(embedder, pending[first : first + self.batch]):
                    return seen
        return bounds.change

    async def _pass(self, embedder: Embedder, progress: Progress | None) -> None:
        """Every memory without a current vector, in seq order."""
        done, total = await self.store.vector_progress(embedder.model_id) if progress else (0, 0)
        after = 0
        while True:
            pending = await self.store.pending_vectors(embedder.model_id, after, self.batch)
            if not pending:
                break
            if not await self._embed(embedder, pending):
                return
            after = pending[-1].seq
            if progress is not None:
                done += len(pending)
                await progress(min(done, total), total)

    async def _embed(self, embedder: Embedder, pending: Sequence[PendingText]) -> bool:
        """One batch: the model in worker threads (nothing held), then one short write. False when
        the model failed (the stage is then off)."""
        self.busy = True
        try:
            try:
                vectors = await self.stage.embed_passages(embedder, [p.content for p in pending], self._quiet)
            except Exception as exc:
                self.stage.fail(f"the embedding model failed: {type(exc).__name__}: {exc}")
                return False
            self.embedded += await self.store.write_vectors(embedder.model_id, pending, vectors)
        finally:
            self.busy = False
        await anyio.lowlevel.checkpoint()  # writers waiting for the store go first
        return True

    async def catch_up(self, progress: Progress | None = None) -> bool:
        """Embed every memory that has no current vector now, telling `progress(done, total)`
        after each batch. False when the stage is off or its model failed."""
        embedder = await self._ready()
        if embedder is None:
            return False
        await self._pass(embedder, progress)
        return self.stage.state == "ready"

    async def status(self) -> SemanticStatus:
        """The stage's state for memory://stats and the dashboard."""
        stage = self.stage
        model = stage.model_id
        embedded, total = await self.store.vector_progress(model or "")
        if stage.state != "ready" or model is None:
            return SemanticStatus(state=stage.state, model=model, embedded=0, total=total, reason=stage.reason)
        state: Literal["embedding", "ready"] = "ready" if embedded >= total else "embedding"
        return SemanticStatus(state=state, model=model, embedded=embedded, total=total, reason=None)
