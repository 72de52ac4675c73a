"""Choosing PostgreSQL by URL, and what only PostgreSQL has: the URL's password kept out of every
message and statistic, writers on several pools taking turns, the trigram and GIN indexes in use,
and the CLI's commands on a PostgreSQL database (backup points to pg_dump)."""

from __future__ import annotations

from pathlib import Path

import anyio
import psycopg
import pytest

from mcp_memory_server.cli.commands import main
from mcp_memory_server.config import Config, redact_url
from mcp_memory_server.errors import InvalidInput, StoreError
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store.postgres import backend as pg
from mcp_memory_server.store.postgres.statements import PgStatements
from mcp_memory_server.text import Segmenter

from ..conftest import pg_server_module

pytestmark = pytest.mark.anyio
DATA = Path(__file__).parent.parent / "data" / "imports"


def test_a_postgresql_url_chooses_postgresql(tmp_path: Path) -> None:
    url = "postgresql://memory:s3cret-pw@db.internal:5432/memories?sslmode=require"
    config = Config.from_env({"MCP_MEMORY_DB": url}, cache_dir=tmp_path)
    assert config.db_url == url
    assert str(config.db_path) == "/dev/null"  # nothing on this machine is written for it
    assert config.database == "postgresql://memory:***@db.internal:5432/memories?sslmode=require"
    assert config.database_name == "memories"
    assert "s3cret" not in repr(config)
    sqlite = Config.from_env({"MCP_MEMORY_DB": str(tmp_path / "m.db")}, cache_dir=tmp_path)
    assert sqlite.db_url is None and sqlite.database == str(tmp_path / "m.db")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgres://u@h/db?password=pw&application_name=x", "postgres://u@h/db?password=***&application_name=x"),
        ("postgresql://h/db", "postgresql://h/db"),
        ("postgresql://u:pw@[::1/db", "postgresql://(withheld)"),
    ],
)
def test_passwords_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_bad_setting_never_repeats_a_password(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as refused:
        Config.from_env({"MCP_MEMORY_MAX_PAGE": "postgresql://u:pw@h/db"}, cache_dir=tmp_path)
    assert "pw" not in str(refused.value) and "***" in str(refused.value)


async def test_an_unreachable_server_is_a_clear_error_without_the_password(
    tmp_path: Path, segmenter: Segmenter
) -> None:
    port = pg_server_module._free_port()  # nothing listens there
    config = Config.from_env({}, db_path=f"postgresql://memory:pw-123@127.0.0.1:{port}/none", cache_dir=tmp_path)
    with pytest.raises(StoreError, match=r"cannot open the memory database at postgresql://memory:\*\*\*@") as failed:
        with anyio.fail_after(30):
            await Store(config, segmenter).open()
    assert "pw-123" not in str(failed.value)


async def test_writers_of_separate_processes_take_turns(pg_db: str, tmp_path: Path, segmenter: Segmenter) -> None:
    """Two stores with pools of their own (as two replicas have) write the same key slot at once:
    the advisory lock makes one update what the other created, never a second memory or an error."""
    config = Config.from_env({}, db_path=pg_db, cache_dir=tmp_path)
    async with Store(config, segmenter) as a, Store(config, segmenter) as b:
        services = [MemoryService(a), MemoryService(b)]
        actions: list[str] = []

        async def write(index: int) -> None:
            for n in range(20):
                text = f"replica {index} says the city is 城市{n}"
                result = await services[index].remember(content=text, key="user.city", category="fact")
                actions.append(result.action)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write, 0)
            tasks.start_soon(write, 1)
    assert len(actions) == 40 and actions.count("created") == 1
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE key = 'user.city'").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM memory_history").fetchone() == (39,)


async def test_the_substring_fallback_and_near_duplicates_use_their_indexes(
    pg_db: str, tmp_path: Path, segmenter: Segmenter
) -> None:
    config = Config.from_env({}, db_path=pg_db, cache_dir=tmp_path)
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        await service.import_memories([{"content": f"第 {n} 条笔记：常规内容 routine note"} for n in range(3000)])
        await service.remember(content="我最喜欢的乌龙茶是冻顶乌龙", category="preference")
        found = await store.search_like(["冻顶乌龙"], 5)
        assert [c.row.content for c in found] == ["我最喜欢的乌龙茶是冻顶乌龙"]
        again = await service.remember(content="我最喜欢的乌龙茶是冻顶乌龙茶", category="preference")
        assert again.action == "merged"  # found through the GIN index, then judged near-identical
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # as autovacuum would: moves GIN's pending entries into the index
        # Trigrams need three characters: a two-character term (冻顶) is found by scanning.
        like = conn.execute(
            "EXPLAIN SELECT seq FROM memories WHERE namespace = '' AND content ILIKE '%冻顶乌龙%'"
        ).fetchall()
        assert "memories_content_trgm" in " ".join(r[0] for r in like)
        fts = conn.execute(
            "EXPLAIN SELECT rowid FROM memory_fts WHERE terms @@ to_tsquery('simple', '''冻顶''')"
        ).fetchall()
        assert "memory_fts_terms" in " ".join(r[0] for r in fts)


async def test_rows_by_seq_use_the_primary_key_after_a_bulk_import(
    pg_db: str, tmp_path: Path, segmenter: Segmenter
) -> None:
    """Right after a bulk import PostgreSQL's statistics would be stale (the import gathers them
    again) and take the table for small: the search's candidate rows (50 seqs in one namespace)
    must still come by primary key, not by a scan (the `(namespace || '')` of PostgreSQL's
    statements, as SQLite's `+namespace`). The store's own statement is explained."""
    config = Config.from_env({}, db_path=pg_db, cache_dir=tmp_path)
    async with Store(config, segmenter) as store:
        await MemoryService(store).import_memories([{"content": f"笔记 {n}: routine note"} for n in range(5000)])
    sql, params = PgStatements().search_rows("", list(range(100, 5000, 98)), "", [])
    with psycopg.connect(pg_db, autocommit=True) as conn:
        plan = " ".join(r[0] for r in conn.execute(f"EXPLAIN {sql}", params).fetchall())
    assert "memories_pkey" in plan and "memories_category" not in plan, plan


def test_the_cli_on_postgresql(pg_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", pg_db]
    assert main([*db, "import", str(DATA / "MEMORY.zh.md")]) == 0
    assert main([*db, "search", "驾照"]) == 0
    assert "拿到了驾照" in capsys.readouterr().out
    assert main([*db, "stats"]) == 0
    assert "postgresql://" in capsys.readouterr().out
    assert main([*db, "export", str(tmp_path / "out.json")]) == 0
    assert "拿到了驾照" in (tmp_path / "out.json").read_text(encoding="utf-8")
    assert main([*db, "backup", str(tmp_path / "copy.db")]) != 0
    assert "pg_dump" in capsys.readouterr().err


def test_without_the_extra_the_error_says_what_to_install(
    tmp_path: Path, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg, "_MISSING", ImportError("No module named 'psycopg'"))
    config = Config.from_env({}, db_path="postgresql://memory@127.0.0.1/memory", cache_dir=tmp_path)
    with pytest.raises(StoreError, match=r"pip install 'jiyi\[postgres\]'"):
        Store(config, segmenter)
