"""The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, pinned in .ci/inspector and
installed there by `make inspector`, which `make test` runs) against the installed stdio server:
tools/list, tools/call remember and recall, resources/read and prompts/get, each one Inspector
process starting the server on the same database. Any non-zero exit, `isError`, output that is not
JSON or a wrong answer fails. Outside CI a machine without the Inspector installed skips, saying
why; in CI (`CI` set) that is a failure."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .http_server import command
from .surface import PROMPTS, TOOLS

ROOT = Path(__file__).resolve().parents[1]
INSPECTOR = ROOT / ".ci" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
_TIMEOUT = 90  # seconds for one Inspector run: Node's start, the server's start, one request
# The main check makes six runs, one after another: its own bound (pytest-timeout's 120 s default
# would fire first on a loaded machine, as seen once right after `make inspector` with a cold disk
# cache) covers all of them, each still bounded by _TIMEOUT.
_RUNS = 6


def _inspector() -> str:
    missing = None
    if shutil.which("node") is None:
        missing = "Node.js (`node`) is not on PATH"
    elif not INSPECTOR.exists():
        missing = f"{INSPECTOR.relative_to(ROOT)} is missing; run `make inspector` (needs npm)"
    if missing is None:
        return str(INSPECTOR)
    message = f"the MCP Inspector check cannot run: {missing}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def inspector(segmenter: Any) -> str:
    """The Inspector; jieba's dictionary cache is built first (the `segmenter` fixture, in the same
    cache directory), so no run's server spends its time building it."""
    return _inspector()


def _run(inspector: str, db: Path, cache_dir: Path, *request: str) -> dict[str, Any]:
    """One Inspector CLI run; its JSON answer. The server's log level is set through `-e`: the
    Inspector takes `--log-level` (and `--transport`) as its own options."""
    argv: Sequence[str] = [
        inspector,
        "--cli",
        "-e",
        f"MCP_MEMORY_CACHE_DIR={cache_dir}",
        "-e",
        "MCP_MEMORY_LOG_LEVEL=WARNING",
        command(),
        "--db",
        str(db),
        *request,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd=db.parent)
    shown = " ".join(request)
    assert done.returncode == 0, f"Inspector exited {done.returncode} for {shown}:\n{done.stderr[-3000:]}"
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"Inspector output for {shown} is not JSON ({exc}):\n{done.stdout[:2000]}") from exc
    assert answer.get("isError") is not True, f"{shown} answered an error: {answer}"
    return answer


def _text(content: list[dict[str, Any]]) -> str:
    return "".join(block.get("text", "") for block in content)


@pytest.mark.timeout(_RUNS * _TIMEOUT)
def test_the_inspector_cli_drives_every_kind_of_request(inspector: str, tmp_path: Path, cache_dir: Path) -> None:
    db = tmp_path / "inspector.db"

    listed = _run(inspector, db, cache_dir, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == TOOLS
    remember = next(tool for tool in listed["tools"] if tool["name"] == "remember")
    assert "content" in remember["inputSchema"]["required"]

    stored = _run(
        inspector,
        db,
        cache_dir,
        *("--method", "tools/call", "--tool-name", "remember"),
        *("--tool-arg", "content=我每天早上喝一杯拿铁咖啡", "--tool-arg", "category=preference"),
        *("--tool-arg", "importance=0.8", "--tool-arg", 'tags=["咖啡", "morning"]'),
    )
    memory = stored["structuredContent"]
    assert memory["action"] == "created"
    assert json.loads(_text(stored["content"])) == memory

    found = _run(
        inspector, db, cache_dir, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=我喝什么咖啡"
    )
    hits = found["structuredContent"]["hits"]
    assert hits and hits[0]["id"] == memory["id"], found
    assert "咖啡" in found["structuredContent"]["keywords"]

    stats = _run(inspector, db, cache_dir, "--method", "resources/read", "--uri", "memory://stats")
    (block,) = stats["contents"]
    assert block["uri"] == "memory://stats"
    counted = json.loads(block["text"])
    assert counted["total"] == 1 and counted["db_path"] == str(db)

    uri = f"memory://memories/{memory['id']}"
    read = _run(inspector, db, cache_dir, "--method", "resources/read", "--uri", uri)
    whole = json.loads(read["contents"][0]["text"])
    assert whole["content"] == "我每天早上喝一杯拿铁咖啡" and whole["importance"] == 0.8
    assert whole["tags"] == ["咖啡", "morning"] and whole["client"] == "inspector-cli"

    assert "extract_memories" in PROMPTS
    prompt = _run(
        inspector,
        db,
        cache_dir,
        *("--method", "prompts/get", "--prompt-name", "extract_memories", "--prompt-args"),
        "user_message=我下个月搬到上海，公司在浦东",
        "assistant_message=好的，祝你搬家顺利。",
    )
    text = _text([m["content"] for m in prompt["messages"]])
    assert "我下个月搬到上海，公司在浦东" in text and "好的，祝你搬家顺利。" in text


def test_a_failing_request_fails_the_check(inspector: str, tmp_path: Path, cache_dir: Path) -> None:
    """The check can fail: an unknown tool makes the Inspector exit non-zero."""
    with pytest.raises(AssertionError, match=r"Inspector exited [1-9]"):
        _run(inspector, tmp_path / "x.db", cache_dir, "--method", "tools/call", "--tool-name", "nonexistent")


def test_the_inspector_is_pinned_and_its_lockfile_names_no_download_urls() -> None:
    """Installs resolve through whatever registry npm is configured with (.npmrc:
    omit-lockfile-registry-resolved), and `npm ci` installs exactly the locked version."""
    folder = ROOT / ".ci" / "inspector"
    wanted = json.loads((folder / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
    assert wanted == {
        "@modelcontextprotocol/inspector": lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["version"]
    }
    assert all("resolved" not in entry for entry in lock["packages"].values())
    assert "omit-lockfile-registry-resolved=true" in (folder / ".npmrc").read_text(encoding="utf-8").splitlines()


def test_the_checks_own_time_limit_covers_each_of_its_runs() -> None:
    """pytest-timeout's bound on the main check is never shorter than its runs' bounds together."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    (main,) = (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("every_kind_of_request"))
    runs = sum(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "_run" for n in ast.walk(main))
    marks = [d for d in main.decorator_list if "timeout" in ast.unparse(d)]
    assert runs == _RUNS and marks, (runs, [ast.unparse(d) for d in main.decorator_list])
    assert ast.unparse(marks[0]) == "pytest.mark.timeout(_RUNS * _TIMEOUT)"
