"""Shared fixtures: real SQLite files in tmp_path, one jieba load per test process, one throwaway
PostgreSQL cluster per test process (started only when a test asks for it).

Under pytest-xdist (`make unit`) every worker is a test process of its own: its own tmp_path
tree, its own cluster on a free port. Only jieba's dictionary cache is shared, built once by
whichever worker comes first."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from . import pg_server as pg_server_module
from .wire import SUITE_SEMANTIC

# Servers the tests start (in subprocesses, which inherit this) leave the semantic stage off unless
# a test turns it on: loading the embedding model in every one would cost the suite minutes of CPU.
# The outside clients (the Inspector, the conformance suite, the protocol-level peers) start the
# server at its true defaults, stage on: they use `wire.environ`, which drops this.
os.environ.setdefault("MCP_MEMORY_SEMANTIC", SUITE_SEMANTIC)

# Hypothesis profiles of tests/server/test_hostile_input.py, registered here and used only there (other
# tests keep Hypothesis's defaults). "hostile-ci" draws the same examples on every run and keeps no
# example database, so a failure in CI fails again on any machine; "hostile-explore"
# (HOSTILE_PROFILE=explore) draws new ones each run and remembers failures in .hypothesis/.
_HOSTILE = {
    "deadline": None,  # a call's bound is the test's own (anyio.fail_after), not a per-example deadline
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    "print_blob": True,
}
settings.register_profile("hostile-ci", derandomize=True, database=None, **_HOSTILE)
settings.register_profile("hostile-explore", derandomize=False, **_HOSTILE)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache directory (jieba's compiled dictionary) the tests' stores and servers read. Under
    pytest-xdist it is one for all workers, beside their own temporary trees (the parent of each
    worker's base directory is the run's): the cache is written atomically (a temporary file
    renamed), so a reader never sees half of it."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    path = base / "cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def segmenter(cache_dir: Path) -> Segmenter:
    """jieba with the dictionary cache built; the first worker builds it (about 4 s of CPU) while
    the others wait on the lock, then load what it wrote."""
    with (cache_dir.parent / "cache.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            seg = Segmenter(cache_dir)
            seg.wait_sync()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return seg


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: a test of SQLite itself, not run on PostgreSQL")
    config.addinivalue_line("markers", "fresh_database: `config` names a database with no schema at all")
    # pytest-xdist registers it too; named here so --strict-markers holds with the plugin off (-p no:xdist).
    config.addinivalue_line("markers", "xdist_group(name): tests that pytest-xdist runs on one worker")


def _declared_bound(item: pytest.Item) -> float:
    mark = item.get_closest_marker("timeout")
    return float(mark.args[0]) if mark is not None and mark.args else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the tests that declare a bound above the global timeout (the long ones:
    hostile input, the Inspector, reliability) are handed out first, the longest bound first, so
    that no worker is left running one of them alone at the end. Run in one process, the tests
    keep their files' order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: -_declared_bound(item))  # stable: the rest keep their order


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test module that sets `BACKENDS = ("sqlite", "postgresql")` runs each of its tests that
    use the `config` fixture (or one built on it) once per backend, but those marked sqlite_only."""
    backends = getattr(metafunc.module, "BACKENDS", None)
    if backends and "backend" in metafunc.fixturenames:
        if metafunc.definition.get_closest_marker("sqlite_only") is not None:
            backends = ("sqlite",)
        metafunc.parametrize("backend", backends, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """Which database the `config` fixture names: "sqlite" (a file in tmp_path) unless the module
    asks for both (see pytest_generate_tests)."""
    return str(getattr(request, "param", "sqlite"))


def _migrate(config: Config, segmenter: Segmenter) -> None:
    """Open and close a store on `config`'s database, which applies every migration. In a thread
    of its own: a session fixture can be set up while a test's event loop runs."""

    async def opened() -> None:
        async with Store(config, segmenter):
            pass

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, opened()).result()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, segmenter: Segmenter) -> Path:
    """An SQLite file with every migration applied and nothing in it, which the `config` fixture
    copies for each test (about 50 ms of migrations saved per test)."""
    path = tmp_path_factory.mktemp("migrated") / "memory.db"
    _migrate(Config.from_env({}, db_path=path, cache_dir=cache_dir), segmenter)
    return path


@pytest.fixture(scope="session")
def pg_migrated(pg_server: pg_server_module.PgServer, cache_dir: Path, segmenter: Segmenter) -> str:
    """The name of a database of the cluster with every migration applied and nothing in it: the
    template of each test's database in `config` (about 0.5 s of migrations saved per test)."""
    name = "migrated_template"
    pg_server.create(name)
    _migrate(Config.from_env({}, db_path=pg_server.url(name), cache_dir=cache_dir), segmenter)
    return name


@pytest.fixture
def config(tmp_path: Path, cache_dir: Path, backend: str, request: pytest.FixtureRequest) -> Config:
    """The database of one test: a copy of an empty database with every migration applied (as a
    server finds it after its first start), or, for a test marked `fresh_database` (one that
    builds an older schema itself), a database with nothing in it at all."""
    fresh = request.node.get_closest_marker("fresh_database") is not None
    if backend == "postgresql":  # a database of its own in the session's PostgreSQL cluster
        url = request.getfixturevalue("pg_db" if fresh else "pg_migrated_db")
        return Config.from_env({}, db_path=url, cache_dir=cache_dir)
    path = tmp_path / "memory.db"
    if not fresh:
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
    return Config.from_env({}, db_path=path, cache_dir=cache_dir)


@pytest.fixture
async def store(config: Config, segmenter: Segmenter) -> AsyncIterator[Store]:
    async with Store(config, segmenter) as opened:
        yield opened


@pytest.fixture
async def service(store: Store) -> MemoryService:
    return MemoryService(store)


def _pg_unavailable(reason: str) -> NoReturn:
    message = f"the PostgreSQL tests cannot run: {reason}; `make postgres` installs Debian's server"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pg_server_module.PgServer]:
    """One throwaway PostgreSQL cluster for this test process (tests/pg_server.py; under
    pytest-xdist one per worker that needs it: 2 s to start, and no database name or connection
    limit shared between workers), started on first use, stopped and removed at the end. Without
    the server binaries: a failure in CI (`CI` set), a skip elsewhere."""
    try:
        server = pg_server_module.start()
    except pg_server_module.PostgresMissing as missing:
        _pg_unavailable(str(missing))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url(pg_server: pg_server_module.PgServer) -> str:
    """The URL of the cluster's database (shared by every test of this process that uses it)."""
    return pg_server.url()


@pytest.fixture
def pg_db(pg_server: pg_server_module.PgServer) -> Iterator[str]:
    """A fresh empty database of the process's cluster for one test (CREATE DATABASE ... TEMPLATE
    template0), dropped afterwards; its URL."""
    with pg_server.database() as url:
        yield url


@pytest.fixture
def pg_migrated_db(pg_server: pg_server_module.PgServer, pg_migrated: str) -> Iterator[str]:
    """A database for one test copied from the migrated template, dropped afterwards; its URL."""
    with pg_server.database(template=pg_migrated) as url:
        yield url
