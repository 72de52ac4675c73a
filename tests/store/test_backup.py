"""`jiyi backup`: a consistent copy through SQLite's backup API while a real server
process (the installed console script over stdio) keeps writing, and refusals that write nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

COMMAND = shutil.which("jiyi", path=str(Path(sys.executable).parent))
PRELOADED = 3000  # memories in the database before the server starts: the copy has something to do


def _params(db: Path, cache_dir: Path) -> StdioServerParameters:
    assert COMMAND, "the console script is installed next to the test interpreter"
    env = {**os.environ, "MCP_MEMORY_DB": str(db), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    return StdioServerParameters(command=COMMAND, args=["--log-level", "WARNING"], env=env)


def _query(path: Path, sql: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


async def _preload(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter) as store:
        items = [{"content": f"预先写入的第 {i} 条笔记 note number {i} {uuid.uuid4().hex}"} for i in range(PRELOADED)]
        await MemoryService(store).import_memories(items)


@pytest.mark.anyio
async def test_backup_while_a_server_writes(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> None:
    db, target = tmp_path / "memory.db", tmp_path / "copies" / "backup.db"
    target.parent.mkdir()
    config = Config.from_env({}, db_path=db, cache_dir=cache_dir)
    await _preload(config, segmenter)
    acked: list[tuple[str, str]] = []  # (id, content) of every write the server answered, in order
    stop = anyio.Event()
    reached: dict[int, anyio.Event] = {}  # set when that many writes have been answered

    with anyio.fail_after(90):  # a hang: under the test's own bound (the global 120 s)
        async with Client(_params(db, cache_dir)) as client:
            coffee = await client.call_tool(
                "remember", {"content": "我每天早上喝一杯拿铁咖啡", "category": "preference"}
            )
            assert coffee.structured_content is not None
            coffee_id = coffee.structured_content["id"]
            acked.append((coffee_id, "我每天早上喝一杯拿铁咖啡"))

            async def writer() -> None:
                n = 0
                while not stop.is_set():
                    content = f"写入中 {n} while the backup runs {uuid.uuid4().hex}"
                    result = await client.call_tool("remember", {"content": content, "category": "note"})
                    assert not result.is_error and result.structured_content is not None, result.content
                    assert result.structured_content["action"] == "created"
                    acked.append((result.structured_content["id"], content))
                    if (event := reached.get(len(acked))) is not None:
                        event.set()
                    n += 1

            async with anyio.create_task_group() as writing:
                writing.start_soon(writer)
                reached[20] = under_way = anyio.Event()
                await under_way.wait()
                before = list(acked)
                done = await anyio.run_process(
                    [COMMAND or "", "--db", str(db), "backup", str(target)],
                    check=False,
                    env={**os.environ, "MCP_MEMORY_CACHE_DIR": str(cache_dir)},
                )
                during = len(acked) - len(before)
                reached[len(acked) + 5] = goes_on = anyio.Event()
                await goes_on.wait()  # the server goes on writing after the backup
                stop.set()

    assert done.returncode == 0, done.stderr.decode()
    summary = done.stdout.decode()
    copied = int(_query(target, "SELECT count(*) FROM memories")[0][0])  # type: ignore[call-overload]
    assert summary.startswith(f"backed up {db} to {target}: {copied:,} memories, {target.stat().st_size:,} bytes")
    assert _query(target, "PRAGMA integrity_check") == [("ok",)]
    # FTS5's own check raises if an index entry does not match its row
    assert _query(target, "INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)") == []
    assert _query(target, "SELECT count(*) FROM memory_fts") == [(copied,)]
    rows = dict(_query(target, "SELECT 'mem_' || seq, content FROM memories"))
    assert all(rows.get(i) == content for i, content in before), "a write acknowledged before the backup is missing"
    assert PRELOADED + len(before) <= copied <= PRELOADED + len(acked)
    assert not [p for p in target.parent.iterdir() if p != target], "the backup left other files behind"
    print(f"\nbackup: {copied} memories, {target.stat().st_size} bytes; acked before {len(before)}, during {during}")

    async with Store(config.with_changes(db_path=target), segmenter) as store:
        found = await MemoryService(store).recall(query="我早上喝什么咖啡", track_access=False)
    assert found.hits and found.hits[0].id == coffee_id


@pytest.fixture
def small_db(config: Config, segmenter: Segmenter) -> Path:
    # A plain fixture: the tests using it run the command, which runs its own event loop.
    async def write() -> None:
        async with Store(config, segmenter) as store:
            await MemoryService(store).remember(content="The cat's name is Mochi 🐱", category="relationship")

    anyio.run(write)
    return config.db_path


def _backup(db: Path, *args: str) -> int:
    return cli.main(["--db", str(db), "--log-level", "WARNING", "backup", *args])


def test_backup_refuses_to_overwrite_unless_forced(
    small_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "backup.db"
    target.write_bytes(b"an older backup")
    assert _backup(small_db, str(target)) == 1
    assert "already exists" in capsys.readouterr().err
    assert target.read_bytes() == b"an older backup"

    assert _backup(small_db, str(target), "--force") == 0
    assert f"to {target}: 1 memory, " in capsys.readouterr().out
    assert _query(target, "SELECT content FROM memories") == [("The cat's name is Mochi 🐱",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db", "memory.db"]


def test_backup_of_a_missing_database_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _backup(tmp_path / "nowhere.db", str(tmp_path / "backup.db")) == 1
    assert "there is no memory database" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_refused_targets(small_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(tmp_path.iterdir())
    assert _backup(small_db, str(small_db), "--force") == 1
    assert "is the database being backed up" in capsys.readouterr().err
    assert _backup(small_db, str(tmp_path)) == 1
    assert "is a directory" in capsys.readouterr().err
    assert _backup(small_db, str(tmp_path / "missing" / "backup.db")) == 1
    assert "does not exist" in capsys.readouterr().err
    assert sorted(tmp_path.iterdir()) == before


def test_a_failed_backup_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (text)").connection.close()
    text = tmp_path / "notes.txt"
    text.write_text("这不是数据库 not a database\n" * 200, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    assert _backup(other, str(out / "backup.db")) == 1
    assert "is not a memory database" in capsys.readouterr().err
    assert _backup(text, str(out / "backup.db")) == 1
    assert "the backup of" in capsys.readouterr().err
    assert _backup(_corrupted(tmp_path / "corrupted.db"), str(out / "backup.db")) == 1
    assert "the copy failed SQLite's integrity check" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def _corrupted(path: Path) -> Path:
    """A database whose pages copy without error but do not hold together: garbage in a page
    of its table's b-tree, which only the check of the finished copy finds."""
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE memories (seq INTEGER PRIMARY KEY, content TEXT); CREATE TABLE schema_migrations (version)"
    )
    connection.executemany("INSERT INTO memories (content) VALUES (?)", [(f"内容 {i} " * 20,) for i in range(500)])
    connection.commit()
    pages, size = (
        connection.execute("PRAGMA page_count").fetchone()[0],
        connection.execute("PRAGMA page_size").fetchone()[0],
    )
    connection.close()
    with path.open("r+b") as file:
        file.seek((pages - 3) * size + 100)
        file.write(b"\xff" * 300)
    return path
