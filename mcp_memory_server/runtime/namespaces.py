"""The namespaces a server process serves, each opened once at start: its store, the services
over it, and its background work (search index warm-up, maintenance, whatever the server adds).

A stdio server serves one namespace (`MCP_MEMORY_NAMESPACE`, empty by default). An HTTP server
with tokens serves the namespaces its tokens name, each request in the namespace of its own
token (see runtime/access.py). Each namespace has a store of its own over the same database file: its own
connection, its own in-memory search index, and queries that never leave the namespace.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType

import anyio
import anyio.abc

from .. import __version__
from ..config.config import Config
from ..config.settings import Semantic
from ..embed.embedder import Embedder
from ..embed.loader import backend_installed, load_embedder
from ..errors import MemoryServerError, NotFound, StoreError
from ..memory import lifecycle
from ..memory.embedding import EmbeddingWorker, SemanticStage
from ..memory.service import MemoryService
from ..memory.sessions import Sessions
from ..models import Stats
from ..sieve.sieve import Sieve
from ..store.store import Store
from ..text.segmenter import Segmenter

__all__ = ["SERVING", "AppState", "Background", "Opened", "Spaces"]

log = logging.getLogger(__name__)

Background = Callable[[Store], Coroutine[object, object, None]]

# The namespace a namespace's background work runs for, so what it logs reaches only that
# namespace's clients (None: the whole process's, such as start-up and migrations).
SERVING: ContextVar[str | None] = ContextVar("mcp_memory_server_serving", default=None)


_LOADED: dict[str, Embedder] = {}
_LOADING = threading.Lock()


def _load_once(settings: Semantic) -> Embedder:
    """The configured model, loaded once per process (every `Spaces` of the process shares it:
    the dashboard beside the MCP endpoint, tests that serve many times)."""
    name = settings.embedding_model
    with _LOADING:
        if name not in _LOADED:
            _LOADED[name] = load_embedder(settings)
        return _LOADED[name]


def semantic_stage(config: Config) -> SemanticStage:
    """The semantic stage the settings ask for (not loaded yet: `SemanticStage.loaded`)."""
    return SemanticStage.from_config(config, _load_once, backend_installed)


async def _for(namespace: str, job: Background, store: Store) -> None:
    SERVING.set(namespace)  # this task's own context
    await job(store)


@dataclass(frozen=True)
class AppState:
    """One namespace's store and the services over it, which every request in it uses."""

    config: Config
    store: Store
    service: MemoryService
    sessions: Sessions
    sieve: Sieve
    behind_tokens: bool = False  # served to token holders, who share the server but not its files
    embedding: EmbeddingWorker | None = None  # the semantic stage's background worker

    @property
    def namespace(self) -> str:
        return self.store.namespace

    async def stats(self) -> Stats:
        """The namespace's statistics. Behind tokens the database is the operator's and may hold
        other namespaces: its location and its size (which grows with every namespace's writes)
        are not told; the counts are this namespace's own."""
        stats = await self.service.stats()
        if self.embedding is not None:
            stats = stats.model_copy(update={"semantic": await self.embedding.status()})
        if self.behind_tokens:
            return stats.model_copy(update={"db_path": None, "db_bytes": None})
        return stats


async def _warm(store: Store) -> None:
    try:
        await store.warm()
    except MemoryServerError as exc:  # the first recall will try again and report it
        log.warning("could not build the search index at start: %s", exc)


async def _maintain(store: Store, minutes: float) -> None:
    """Session expiry and cleanup at start, then every `minutes` (0: only at start) while serving."""
    while True:
        try:
            await lifecycle.maintain(store)
        except MemoryServerError as exc:  # another process may hold the database; try next time
            log.warning("maintenance could not run: %s", exc)
        if minutes <= 0:
            return
        await anyio.sleep(minutes * 60)


def _embed(worker: EmbeddingWorker) -> Background:
    async def embed(store: Store) -> None:
        await worker.run()

    return embed


class Spaces:
    """`async with Spaces(...) as spaces`: every namespace open until the block ends.

    `require_token`: requests are served only in the namespace a token gave them (HTTP with
    tokens); a request that reached a handler without one is refused rather than served in the
    default namespace."""

    def __init__(
        self,
        config: Config,
        segmenter: Segmenter,
        namespaces: Iterable[str] = (),
        *,
        require_token: bool = False,
        background: Iterable[Background] = (),
    ) -> None:
        self.config = config
        self.segmenter = segmenter
        self.default = config.namespace
        self.require_token = require_token
        self._names = tuple(dict.fromkeys(namespaces)) or (config.namespace,)
        self._background = tuple(background)
        self._open: dict[str, AppState] = {}
        self._stack = AsyncExitStack()
        self.stage = semantic_stage(config)

    async def __aenter__(self) -> Spaces:
        try:
            for namespace in self._names:
                store = await self._stack.enter_async_context(Store(self.config, self.segmenter, namespace))
                service = MemoryService(store)
                self._open[namespace] = AppState(
                    config=self.config,
                    store=store,
                    service=service,
                    sessions=Sessions(service),
                    sieve=Sieve(service),
                    behind_tokens=self.require_token,
                    embedding=EmbeddingWorker(store, self.stage),
                )
            # Entered after the stores, so on the way out the tasks are cancelled and awaited
            # before the stores close under them.
            tasks = await self._stack.enter_async_context(anyio.create_task_group())
            self._stack.callback(tasks.cancel_scope.cancel)
            for state in self._open.values():
                self._start(tasks, state)
        except BaseException:
            await self._stack.aclose()
            raise
        if len(self._names) > 1 or self._names[0]:
            log.info("serving namespaces: %s", ", ".join(repr(n) for n in self._names))
        for state in self._open.values():
            await self._started(state)
        return self

    @staticmethod
    async def _started(state: AppState) -> None:
        token = SERVING.set(state.namespace)
        try:
            stats = await state.service.stats()
            log.info(
                "jiyi %s started: namespace %r of %s, %d memories (%d archived), schema version %d",
                __version__,
                state.namespace,
                stats.db_path,
                stats.total,
                stats.archived,
                stats.schema_version,
            )
        except MemoryServerError as exc:  # another process may hold the database; serving goes on
            log.warning("could not count the memories at start: %s", exc)
        finally:
            SERVING.reset(token)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open.clear()
        await self._stack.__aexit__(kind, exc, tb)

    def _start(self, tasks: anyio.abc.TaskGroup, state: AppState) -> None:
        # The search index is built in the background: start-up does not wait for it, and the
        # first recall usually finds it ready. So is the embedding model loaded and run: writes
        # never wait for it, and recall is keyword-only until it is ready.
        store = state.store
        for job in (*self._background, _warm, self._maintain):
            tasks.start_soon(_for, store.namespace, job, store)
        if state.embedding is not None and self.stage.state != "off":
            tasks.start_soon(_for, store.namespace, _embed(state.embedding), store)

    async def _maintain(self, store: Store) -> None:
        await _maintain(store, self.config.lifecycle.maintenance_minutes)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return self._names

    def get(self, namespace: str | None = None) -> AppState:
        """The namespace's state (the default namespace for None)."""
        name = self.default if namespace is None else namespace
        try:
            return self._open[name]
        except KeyError:
            raise NotFound(f"namespace {name!r} is not served by this process") from None


class Opened:
    """Where a lifespan puts the `Spaces` it opened, for the parts of the process that do not
    run inside it (the dashboard beside the MCP endpoint uses the same stores and indexes)."""

    def __init__(self) -> None:
        self._spaces: Spaces | None = None

    def set(self, spaces: Spaces | None) -> None:
        self._spaces = spaces

    def get(self) -> Spaces:
        if self._spaces is None:
            raise StoreError("the server is starting or stopping; the memories are not open. Try again in a moment.")
        return self._spaces
