"""The PostgreSQL test harness (tests/pg_server.py and the `pg_server`, `pg_url`, `pg_db` fixtures)
against the real server `make postgres` installs: it listens on loopback only, psycopg's pool
connects, LISTEN/NOTIFY carries Chinese payloads, a GIN index over `to_tsvector('simple', ...)` on
jieba-segmented text answers `@@` with ts_rank, pg_trgm matches Chinese substrings, each test gets
its own database, and a stopped cluster leaves nothing behind."""

from __future__ import annotations

import os
import pwd
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from mcp_memory_server.text import Segmenter

from .. import pg_server as pg_server_module
from ..pg_server import PgServer

DOCS = [
    "我喜欢喝乌龙茶",
    "他每天早上喝咖啡",
    "我在杭州西湖边喝龙井茶",
    "Python 的 asyncio 很好用",
    "我喜欢喝 oolong tea, not coffee",
]


def _segmented(segmenter: Segmenter, text: str) -> str:
    """The text as the store indexes it: jieba tokens joined by single spaces."""
    return " ".join(token for token in segmenter.cut(text) if token.strip())


def _refused(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        return sock.connect_ex((host, port)) != 0


def _outbound_address() -> str | None:
    """This machine's non-loopback IPv4 address, if it has one (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the route
        except OSError:
            return None
        address: str = sock.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def _alive(pid: int) -> bool:
    """Whether a process runs: an exited one that its parent (here init, as pg_ctl daemonises the
    server) has not reaped yet is a zombie and does not count."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return state.split()[1] != "Z"


@pytest.fixture
def conn(pg_db: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_db, autocommit=True) as connection:
        yield connection


def test_listens_on_loopback_only(pg_server: PgServer, pg_url: str) -> None:
    with psycopg.connect(pg_url) as connection:
        settings = connection.execute(
            "SELECT current_setting('listen_addresses'), current_setting('unix_socket_directories'),"
            " host(inet_server_addr()), current_user, current_setting('server_encoding')"
        ).fetchone()
    assert settings == ("127.0.0.1", str(pg_server.socket_dir), "127.0.0.1", "memory", "UTF8")
    assert pg_server.socket_dir.is_relative_to(pg_server.root)
    assert not _refused("127.0.0.1", pg_server.port)
    # Bound to 127.0.0.1 itself: other loopback addresses and the machine's own address are refused.
    assert _refused("127.0.0.2", pg_server.port)
    outbound = _outbound_address()
    if outbound is not None:
        assert _refused(outbound, pg_server.port)


def test_runs_unprivileged(pg_server: PgServer) -> None:
    """As root the cluster runs as the `postgres` system user; otherwise as the current user."""
    status = Path(f"/proc/{pg_server.pid()}/status").read_text()
    uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
    expected = pwd.getpwnam(pg_server_module.RUN_AS).pw_uid if os.geteuid() == 0 else os.geteuid()
    assert uid == expected != 0
    assert pg_server.data.stat().st_uid == expected


@pytest.mark.anyio
async def test_pool_connects_and_notifies(pg_db: str) -> None:
    """psycopg's async pool hands out distinct connections; LISTEN/NOTIFY between two of them
    carries a Chinese payload (the cross-replica change signal the backend can use)."""
    async with AsyncConnectionPool(pg_db, min_size=2, max_size=4, open=False) as pool:
        async with pool.connection() as first, pool.connection() as second:
            await first.set_autocommit(True)
            await second.set_autocommit(True)
            pids = set()
            for connection in (first, second):
                row = await (await connection.execute("SELECT pg_backend_pid()")).fetchone()
                assert row is not None
                pids.add(row[0])
            assert len(pids) == 2
            await first.execute("LISTEN memory_changes")
            await second.execute("SELECT pg_notify('memory_changes', %s)", ["记忆 42 已更新 updated"])
            with anyio.fail_after(30):
                received = [n async for n in first.notifies(timeout=25, stop_after=1)]
        assert [(n.channel, n.payload) for n in received] == [("memory_changes", "记忆 42 已更新 updated")]
        assert pool.get_stats()["pool_size"] >= 2


def test_full_text_search_over_segmented_chinese(conn: psycopg.Connection, segmenter: Segmenter) -> None:
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, content text NOT NULL, seg text NOT NULL)")
    conn.execute("CREATE INDEX docs_fts ON docs USING gin (to_tsvector('simple', seg))")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO docs VALUES (%s, %s, %s)",
            [(i, text, _segmented(segmenter, text)) for i, text in enumerate(DOCS)],
        )
    assert conn.execute("SELECT seg FROM docs WHERE id = 0").fetchone() == ("我 喜欢 喝 乌龙茶",)

    def search(query: str) -> list[tuple[int, float]]:
        tsquery = " & ".join(_segmented(segmenter, query).split())
        rows = conn.execute(
            "SELECT id, ts_rank(to_tsvector('simple', seg), q) AS rank FROM docs, to_tsquery('simple', %s) q"
            " WHERE to_tsvector('simple', seg) @@ q ORDER BY rank DESC, id",
            [tsquery],
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    assert [i for i, _ in search("乌龙茶")] == [0]
    assert [i for i, _ in search("喜欢喝")] == [0, 4]
    assert [i for i, _ in search("ASYNCIO")] == [3]  # `simple` folds case
    assert [i for i, _ in search("oolong 喜欢")] == [4]
    assert search("红茶") == []
    assert all(rank > 0 for _, rank in search("喝"))
    # A token jieba never produced is not found by full text (the substring fallback's job).
    assert search("龙茶") == []
    # The GIN index answers the query (sequential scans off so the tiny table still uses it).
    conn.execute("SET enable_seqscan = off")
    plan = conn.execute(
        "EXPLAIN SELECT id FROM docs WHERE to_tsvector('simple', seg) @@ to_tsquery('simple', '乌龙茶')"
    ).fetchall()
    assert any("docs_fts" in row[0] for row in plan), plan


def test_trigram_matches_chinese(conn: psycopg.Connection) -> None:
    conn.execute("CREATE EXTENSION pg_trgm")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, content text NOT NULL)")
    conn.execute("CREATE INDEX docs_trgm ON docs USING gin (content gin_trgm_ops)")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO docs VALUES (%s, %s)", list(enumerate(DOCS)))
    # Chinese characters are word characters to pg_trgm (the cluster's C.UTF-8 locale).
    row = conn.execute("SELECT show_trgm('乌龙茶'), similarity('我喜欢喝乌龙茶', '乌龙茶')").fetchone()
    assert row is not None
    assert len(row[0]) >= 3
    assert 0 < row[1] < 1
    ilike = conn.execute("SELECT id FROM docs WHERE content ILIKE %s ORDER BY id", ["%龙茶%"]).fetchall()
    assert [r[0] for r in ilike] == [0]
    drinks = conn.execute("SELECT id FROM docs WHERE content ILIKE %s ORDER BY id", ["%喝%"]).fetchall()
    assert [r[0] for r in drinks] == [0, 1, 2, 4]
    mixed = conn.execute("SELECT id FROM docs WHERE content ILIKE %s ORDER BY id", ["%喝 OOLONG%"]).fetchall()
    assert [r[0] for r in mixed] == [4]
    ranked = conn.execute(
        "SELECT id FROM docs WHERE content %% %s ORDER BY similarity(content, %s) DESC, id", ["喜欢喝乌龙茶"] * 2
    ).fetchall()
    assert ranked[0][0] == 0
    assert 3 not in [r[0] for r in ranked]
    conn.execute("SET enable_seqscan = off")
    plan = conn.execute("EXPLAIN SELECT id FROM docs WHERE content ILIKE '%乌龙茶%'").fetchall()
    assert any("docs_trgm" in r[0] for r in plan), plan


def test_simple_config_and_pg_trgm_are_available(conn: psycopg.Connection) -> None:
    assert conn.execute("SELECT count(*) FROM pg_ts_config WHERE cfgname = 'simple'").fetchone() == (1,)
    row = conn.execute("SELECT trusted FROM pg_available_extension_versions WHERE name = 'pg_trgm'").fetchone()
    assert row is not None
    assert row[0] is True  # a database owner without superuser can create it (PostgreSQL 13+)


def test_each_test_gets_its_own_database(pg_server: PgServer, pg_db: str) -> None:
    """Two databases of one cluster do not see each other, and a finished one is dropped even with
    a connection still open to it."""
    with psycopg.connect(pg_db, autocommit=True) as mine:
        mine.execute("CREATE TABLE notes (body text)")
        mine.execute("INSERT INTO notes VALUES ('只在这里 only here')")
        with pg_server.database() as other_url:
            assert other_url != pg_db
            lingering = psycopg.connect(other_url, autocommit=True)
            try:
                missing = lingering.execute("SELECT to_regclass('notes')").fetchone()
                assert missing == (None,)
                lingering.execute("CREATE TABLE notes (body text)")
                assert lingering.execute("SELECT count(*) FROM notes").fetchone() == (0,)
            finally:
                other_name = other_url.rsplit("/", 1)[1]
        with pytest.raises(psycopg.OperationalError):
            lingering.execute("SELECT 1")
        lingering.close()
        assert mine.execute("SELECT body FROM notes").fetchall() == [("只在这里 only here",)]
        assert mine.execute("SELECT 1 FROM pg_database WHERE datname = %s", [other_name]).fetchone() is None


def test_stop_leaves_nothing_behind(pg_server: PgServer) -> None:
    """A second cluster (besides the session's, whose fixture fails in CI or skips elsewhere when
    the binaries are missing), stopped after a failure inside its block: the server process is gone,
    its port refuses connections and its directory is removed."""
    try:
        with pg_server_module.running() as server:
            pid, port, root = server.pid(), server.port, server.root
            with psycopg.connect(server.url()) as connection:
                assert connection.execute("SELECT 1").fetchone() == (1,)
            raise LookupError("a failing test")
    except LookupError:
        pass
    assert server.stopped
    assert server.port != pg_server.port
    assert not root.exists()
    assert _refused("127.0.0.1", port)
    assert not _alive(pid)
