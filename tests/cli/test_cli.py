"""The installed command: help, stats and search on a real database file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService

COMMAND = shutil.which("jiyi", path=str(Path(sys.executable).parent))


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    assert COMMAND
    return subprocess.run(
        [COMMAND, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}, check=False
    )


def test_help_reads_well() -> None:
    result = _run("--help")
    assert result.returncode == 0
    for word in ("serve", "stats", "search", "--db", "--transport", "MCP_MEMORY_DB", "examples:"):
        assert word in result.stdout


def test_version() -> None:
    from mcp_memory_server import __version__

    result = subprocess.run(
        [sys.executable, "-m", "mcp_memory_server", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and __version__ in result.stdout


@pytest.mark.anyio
async def test_stats_and_search(service: MemoryService, config: Config) -> None:
    await service.remember(content="我每天早上喝一杯拿铁咖啡", category="preference")
    await service.remember(content="The user's cat is called Miso", category="relationship")
    await service.store.close()
    env = {"MCP_MEMORY_DB": str(config.db_path), "MCP_MEMORY_CACHE_DIR": str(config.cache_dir)}

    stats = _run("stats", env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["total"] == 2

    search = _run("search", "我喝什么咖啡", env=env)
    assert search.returncode == 0, search.stderr
    assert "mem_1" in search.stdout and "咖啡" in search.stdout and "keyword" in search.stdout
    as_json = _run("--db", str(config.db_path), "search", "cat", "--json", env=env)
    assert json.loads(as_json.stdout)["hits"][0]["content"] == "The user's cat is called Miso"
    nothing = _run("search", "zebra", env=env)
    assert "no memories match" in nothing.stdout

    # search is for debugging: it does not count as an access
    again = _run("--db", str(config.db_path), "stats")
    assert json.loads(again.stdout)["total"] == 2


def test_bad_configuration_is_one_clear_line(tmp_path: Path) -> None:
    result = _run("stats", env={"MCP_MEMORY_DB": str(tmp_path / "x.db"), "MCP_MEMORY_CANDIDATES": "lots"})
    assert result.returncode == 1
    assert "MCP_MEMORY_CANDIDATES='lots' is not valid" in result.stderr
    assert "Traceback" not in result.stderr


def test_read_commands_do_not_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "memory.db"
    for command in (["stats"], ["search", "咖啡"]):
        result = _run("--db", str(missing), *command)
        assert result.returncode == 1
        assert "there is no memory database" in result.stderr
    assert not missing.parent.exists()


def test_serving_options_given_before_the_command_are_kept() -> None:
    parser = cli.build_parser()
    assert parser.parse_args([]).port is None  # each command picks its own default port
    assert parser.parse_args(["dashboard"]).port is None
    early = parser.parse_args(["--port", "9000", "--host", "::1", "--tokens-file", "t.txt", "dashboard"])
    assert (early.port, early.host, early.tokens_file, early.command) == (9000, "::1", "t.txt", "dashboard")
    late = parser.parse_args(["--port", "9000", "dashboard", "--port", "9001", "--allow-unauthenticated"])
    assert (late.port, late.allow_unauthenticated) == (9001, True)
    assert parser.parse_args(["--port", "9002", "serve"]).port == 9002
