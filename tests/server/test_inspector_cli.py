"""The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, pinned in .ci/inspector and
installed there by `make inspector`, which `make test` runs), at its defaults, against the installed
server over stdio and over streamable HTTP: tools/list, a call of every tool, resources/read and
prompts/get. Over stdio each Inspector process starts `jiyi` with no argument and no
environment of the test's own: the only thing the test sets is HOME, a fresh directory, so the
server's default database and the Inspector's own files land there instead of the user's home.
Any non-zero exit, `isError`, output that is not JSON or a wrong answer fails. Outside CI a machine
without the Inspector installed skips, saying why; in CI (`CI` set) that is a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_memory_server.config import APP_NAME

from .. import wire
from ..http_server import command, http_server
from ..surface import PROMPTS, TOOLS

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / ".ci" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
_TIMEOUT = 90  # seconds for one Inspector run: a bound that only catches a hang
_TARGET_TIMEOUT = 600  # seconds for one transport's whole check (its runs go two at a time)


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
    """The Inspector; jieba's dictionary cache is built first (the `segmenter` fixture)."""
    return _inspector()


@dataclass(frozen=True)
class Target:
    """Where the Inspector finds the server: a command (stdio) or a URL (HTTP)."""

    server: tuple[str, ...]
    home: Path
    db: Path  # where the server keeps its memories


@pytest.fixture
def home(tmp_path: Path, cache_dir: Path) -> Path:
    """A fresh HOME holding a copy of jieba's dictionary cache where the server looks for it by
    default, so no server run spends its time building it."""
    home = tmp_path / "home"
    shutil.copytree(cache_dir, home / ".cache" / APP_NAME)
    return home


@pytest.fixture
def stdio_target(home: Path) -> Target:
    return Target((command(),), home, home / ".local" / "share" / APP_NAME / "memory.db")


@pytest.fixture
def http_target(home: Path, tmp_path: Path, cache_dir: Path) -> Iterator[Target]:
    with http_server(tmp_path, cache_dir) as served:
        yield Target((served.url,), home, served.db)


def _run(target: Target, *request: str) -> dict[str, Any]:
    """One Inspector CLI run at its defaults; its JSON answer."""
    environ = {**wire.environ(), "HOME": str(target.home)}
    argv = [_inspector(), "--cli", *target.server, *request]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd=target.home, env=environ
    )
    shown = " ".join(request)
    assert done.returncode == 0, f"Inspector exited {done.returncode} for {shown}:\n{done.stderr[-3000:]}"
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"Inspector output for {shown} is not JSON ({exc}):\n{done.stdout[:2000]}") from exc
    assert answer.get("isError") is not True, f"{shown} answered an error: {answer}"
    return answer


def _call(target: Target, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    request = ("--method", "tools/call", "--tool-name", tool, "--tool-args-json")
    return _run(target, *request, json.dumps(arguments, ensure_ascii=False))


def _text(content: list[dict[str, Any]]) -> str:
    return "".join(block.get("text", "") for block in content)


_IMPORT = "# 关于我\n\n- 用户住在杭州西湖区\n- Prefers dark mode in every editor\n"


def _check_everything(target: Target) -> None:
    """tools/list, then every tool, the stats and a memory's resource, and a prompt."""
    listed = _run(target, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == TOOLS
    remember = next(tool for tool in listed["tools"] if tool["name"] == "remember")
    assert "content" in remember["inputSchema"]["required"]

    stored = _run(
        target,
        *("--method", "tools/call", "--tool-name", "remember"),
        *("--tool-arg", "content=我每天早上喝一杯拿铁咖啡", "--tool-arg", "category=preference"),
        *("--tool-arg", "importance=0.8", "--tool-arg", 'tags=["咖啡", "morning"]'),
    )
    memory = stored["structuredContent"]
    assert memory["action"] == "created"
    assert json.loads(_text(stored["content"])) == memory
    uri = f"memory://memories/{memory['id']}"
    called = {"remember"}

    def found(answer: dict[str, Any]) -> None:
        hits = answer["structuredContent"]["hits"]
        assert hits and hits[0]["id"] == memory["id"], answer
        assert "咖啡" in answer["structuredContent"]["keywords"]

    def stats(answer: dict[str, Any]) -> None:
        (block,) = answer["contents"]
        assert block["uri"] == "memory://stats"
        assert json.loads(block["text"])["db_path"] == str(target.db)

    def listed_some(answer: dict[str, Any]) -> None:
        assert answer["structuredContent"]["total"] >= 1, answer

    def dry_run(answer: dict[str, Any]) -> None:
        assert answer["structuredContent"]["dry_run"] is True, answer

    def read_back(answer: dict[str, Any]) -> None:
        whole = json.loads(answer["contents"][0]["text"])
        assert whole["content"] == "我每天早上喝一杯拿铁咖啡" and whole["importance"] == 0.8
        assert whole["tags"] == ["咖啡", "morning"] and whole["client"] == "inspector-cli"

    def prompt(answer: dict[str, Any]) -> None:
        text = _text([m["content"] for m in answer["messages"]])
        assert "我下个月搬到上海，公司在浦东" in text and "好的，祝你搬家顺利。" in text

    theme = {"key": "theme", "action": "add", "category": "user_preferences", "payload": "偏好深色主题"}
    ops = [{**theme, "importance": 8, "source": "用户输入"}]
    calls: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], None] | None]] = [
        ("recall", {"query": "我喝什么咖啡"}, found),
        ("list", {"limit": 5}, listed_some),
        ("update_session", {"session_id": "inspector", "topic": "咖啡"}, None),
        ("extract", {"user_message": "我决定下个月开始学日语", "session_id": "inspector"}, None),
        ("apply_changes", {"ops": ops}, None),
        ("edit_profile", {"field": "domains", "action": "add", "text": "机器学习 and databases"}, None),
        ("refresh_profile", {}, None),
        ("import_memories", {"data": _IMPORT, "format": "markdown"}, None),
        ("cleanup", {"dry_run": True}, dry_run),
    ]
    reads: list[tuple[tuple[str, ...], Callable[[dict[str, Any]], None]]] = [
        (("--method", "resources/read", "--uri", "memory://stats"), stats),
        (("--method", "resources/read", "--uri", uri), read_back),
        (
            (
                *("--method", "prompts/get", "--prompt-name", "extract_memories", "--prompt-args"),
                *("user_message=我下个月搬到上海，公司在浦东", "assistant_message=好的，祝你搬家顺利。"),
            ),
            prompt,
        ),
    ]
    assert "extract_memories" in PROMPTS

    def one_call(step: tuple[str, dict[str, Any], Callable[[dict[str, Any]], None] | None]) -> str:
        tool, arguments, check = step
        answer = _call(target, tool, arguments)
        assert isinstance(answer.get("structuredContent"), dict), answer
        if check is not None:
            check(answer)
        return tool

    def one_read(step: tuple[tuple[str, ...], Callable[[dict[str, Any]], None]]) -> None:
        request, check = step
        check(_run(target, *request))

    # Two at a time: each run is mostly Node's and the server's start.
    with ThreadPoolExecutor(2) as pool:
        called.update(pool.map(one_call, calls))
        list(pool.map(one_read, reads))

    forgotten = _call(target, "forget", {"ids": [memory["id"]]})
    assert forgotten["structuredContent"]["deleted"] == [memory["id"]]
    restored = _call(target, "restore", {"ids": [memory["id"]]})
    assert memory["id"] not in restored["structuredContent"].get("restored", [])
    called |= {"forget", "restore"}
    assert called == TOOLS, "every tool is called"


@pytest.mark.timeout(_TARGET_TIMEOUT)
def test_the_inspector_at_its_defaults_lists_and_calls_every_tool_over_stdio(
    inspector: str, stdio_target: Target
) -> None:
    _check_everything(stdio_target)
    assert stdio_target.db.exists(), "the server used its default database, under the fresh HOME"


@pytest.mark.timeout(_TARGET_TIMEOUT)
def test_the_inspector_at_its_defaults_lists_and_calls_every_tool_over_http(
    inspector: str, http_target: Target
) -> None:
    _check_everything(http_target)


def test_a_failing_request_fails_the_check(inspector: str, stdio_target: Target) -> None:
    """The check can fail: an unknown tool makes the Inspector exit non-zero."""
    with pytest.raises(AssertionError, match=r"Inspector exited [1-9]"):
        _run(stdio_target, "--method", "tools/call", "--tool-name", "nonexistent")


def test_the_inspector_is_pinned_and_its_lockfile_names_no_download_urls() -> None:
    """Installs resolve through whatever registry npm is configured with (.npmrc:
    omit-lockfile-registry-resolved), and `npm ci` installs exactly the locked version."""
    folder = ROOT / ".ci" / "inspector"
    wanted = json.loads((folder / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
    locked = {name: lock["packages"][f"node_modules/{name}"]["version"] for name in wanted}
    assert wanted == locked and set(wanted) == {"@modelcontextprotocol/inspector", "@modelcontextprotocol/core"}
    # The schemas checked are the ones the Inspector itself applies: one copy of core, the pinned one.
    copies = [k for k in lock["packages"] if k.endswith("node_modules/@modelcontextprotocol/core")]
    assert copies == ["node_modules/@modelcontextprotocol/core"], copies
    assert all("resolved" not in entry for entry in lock["packages"].values())
    assert "omit-lockfile-registry-resolved=true" in (folder / ".npmrc").read_text(encoding="utf-8").splitlines()
