"""`jiyi import` and `export` on the command line: every format, guessed or named, the
one summary line on stdout, errors on stderr, and the progress bar, drawn on stderr only when it is
a terminal (a real pseudo-terminal here, the command a real subprocess)."""

from __future__ import annotations

import gzip
import json
import os
import pty
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.cli.progress import Bar
from mcp_memory_server.config import Config

DATA = Path(__file__).parent.parent / "data" / "imports"


def run(config: Config, *args: str) -> int:
    return cli.main(["--db", str(config.db_path), "--log-level", "WARNING", *args])


def test_each_format_is_guessed_and_imported_once(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {
        "memory.jsonl": "30 items, 30 created, 0 updated, 0 already present",
        "mem0_get_all.json": "5 items, 5 created, 0 updated, 0 already present",
        "openmemory_memories.json": (
            "5 items, 4 created, 0 updated, 0 already present, 2 of them archived, 1 deleted ones left out"
        ),
        "MEMORY.zh.md": "7 items, 7 created, 0 already present",
    }
    for name, line in expected.items():
        file = DATA / name
        assert run(config, "import", str(file)) == 0
        assert capsys.readouterr() == (f"{file}: {line}\n", "")  # no progress bar: stderr is not a terminal
    again = DATA / "memory.jsonl"
    assert run(config, "import", "--format", "memory-jsonl", str(again)) == 0
    assert capsys.readouterr().out == f"{again}: 30 items, 0 created, 0 updated, 30 already present\n"
    packed = tmp_path / "memories.jsonl.gz"
    packed.write_bytes(gzip.compress((DATA / "openmemory_memories.jsonl").read_bytes()))
    assert run(config, "import", str(packed)) == 0
    assert "0 created, 0 updated, 4 already present" in capsys.readouterr().out


def test_errors_go_to_stderr_and_write_nothing(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(config, "import", "--format", "mem0", str(DATA / "memory.jsonl")) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("jiyi: line 1: not a mem0 memory")
    prose = tmp_path / "notes.txt"
    prose.write_text("Nothing here is a list.", encoding="utf-8")
    assert run(config, "import", str(prose)) == 1
    assert "cannot tell the file's format" in capsys.readouterr().err
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert run(config, "import", str(broken)) == 1
    assert "is a damaged archive" in capsys.readouterr().err
    latin = tmp_path / "latin.md"
    latin.write_bytes("- caf\xe9".encode("latin-1"))
    assert run(config, "import", str(latin)) == 1
    assert "is not UTF-8 text" in capsys.readouterr().err
    db = sqlite3.connect(config.db_path)
    assert db.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    db.close()


def test_export_as_json_and_markdown(config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(config, "import", str(DATA / "MEMORY.mixed.md")) == 0
    capsys.readouterr()
    assert run(config, "export") == 0
    exported = capsys.readouterr()
    assert exported.err == "" and len(json.loads(exported.out)["memories"]) == 7
    out = tmp_path / "MEMORY.md"
    assert run(config, "export", str(out), "--format", "markdown") == 0
    text = out.read_text(encoding="utf-8")
    assert "## Important events" in text or "## 重要事件" in text
    assert "Renew the passport before August" in text and "omitted" not in text
    assert run(config, "export", "--format", "markdown") == 0
    assert capsys.readouterr().out == text


def _on_a_terminal(config: Config, *args: str) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal and stdout on a pipe: (status, stdout, what
    the terminal showed)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "MCP_MEMORY_CACHE_DIR": str(config.cache_dir)}
    command = [sys.executable, "-m", "mcp_memory_server", "--db", str(config.db_path), "--log-level", "WARNING"]
    # stdout to a file, not a pipe: an export fills a pipe long before the terminal closes.
    with tempfile.TemporaryFile() as stdout:
        process = subprocess.Popen([*command, *args], stdout=stdout, stderr=follower, env=env)
        os.close(follower)
        shown = _read_all(leader)
        process.wait(timeout=120)
        stdout.seek(0)
        out = stdout.read()
    os.close(leader)
    return process.returncode, out.decode("utf-8"), shown.decode("utf-8")


def _read_all(leader: int) -> bytes:
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the command is done
            break
        if not chunk:
            break
        shown += chunk
    return shown


@pytest.mark.timeout(300)
def test_the_progress_bar_runs_on_a_terminal_and_stdout_stays_clean(config: Config, tmp_path: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    lines = (
        json.dumps({"type": "entity", "name": f"Person {i}", "observations": [f"likes tea no. {i}"]})
        for i in range(1500)
    )
    graph.write_text("\n".join(lines), encoding="utf-8")
    status, out, shown = _on_a_terminal(config, "import", str(graph))
    assert status == 0
    assert out == f"{graph}: 1500 items, 1500 created, 0 updated, 0 already present\n"
    assert "\rimporting [" in shown and "100% 1,500/1,500" in shown and shown.endswith("\n")
    status, out, shown = _on_a_terminal(config, "export")
    assert status == 0 and len(json.loads(out)["memories"]) == 1500
    assert "exporting [" in shown and "100% 1,500/1,500" in shown


def test_the_bar_line() -> None:
    bar = Bar("importing", enabled=False)
    assert bar.line(0, 1000) == "importing [..............................]   0% 0/1,000"
    assert bar.line(500, 1000) == "importing [###############...............]  50% 500/1,000"
    assert bar.line(0, 0).startswith("importing [##############################] 100%")
