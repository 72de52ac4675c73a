"""End to end: the installed `jiyi` command as a stdio subprocess, driven by the SDK's
stdio client in both protocol eras, plus start-up that does not wait for jieba."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server

from ..calls import call
from ..gated_segmenter import GatedSegmenter
from ..surface import PROMPTS, TOOLS
from ..wire import environ

pytestmark = pytest.mark.anyio


def _command() -> str:
    found = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert found, "the console script is installed next to the test interpreter"
    return found


def _params(tmp_path: Path, cache_dir: Path) -> StdioServerParameters:
    env = environ(MCP_MEMORY_DB=str(tmp_path / "e2e.db"), MCP_MEMORY_CACHE_DIR=str(cache_dir))
    return StdioServerParameters(command=_command(), args=["--log-level", "WARNING"], env=env)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_end_to_end(tmp_path: Path, cache_dir: Path, mode: str) -> None:
    async with Client(_params(tmp_path, cache_dir), mode=mode) as client:
        assert client.server_info is not None and client.server_info.name == "jiyi"
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS

        coffee = await call(client, "remember", content="我每天早上喝一杯拿铁咖啡", category="preference")
        code = await call(client, "remember", content="我喜欢用Python写代码", category="preference")
        rime = await call(client, "remember", content="I type Chinese with 雾凇拼音 on Rime", category="fact")
        assert coffee["action"] == code["action"] == rime["action"] == "created"

        assert (await call(client, "recall", query="我喝什么咖啡"))["hits"][0]["id"] == coffee["id"]
        assert (await call(client, "recall", query="python"))["hits"][0]["id"] == code["id"]
        assert (await call(client, "recall", query="雾凇"))["hits"][0]["id"] == rime["id"]
        assert (await call(client, "recall", query="拼音"))["hits"][0]["id"] == rime["id"]
        # FTS5 syntax is searched as words, never run: no error, the operators are not keywords.
        # (What comes back depends on timing: nothing on keywords alone; once the semantic stage
        # has embedded these three memories, whatever the model puts near "NEAR(".)
        injected = await call(client, "recall", query='NEAR( "*')
        assert injected["keywords"] == ["near"]

        bad = await client.call_tool("remember", {"content": "x", "category": "Bad Category!"})
        assert bad.is_error and "category" in bad.content[0].text  # type: ignore[union-attr]

        stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
        assert stats["total"] == 3 and stats["db_path"] == str(tmp_path / "e2e.db")
        prompt = await client.get_prompt("extract_memories", {"user_message": "hi", "assistant_message": "hello"})
        assert "memories" in prompt.messages[0].content.text  # type: ignore[union-attr]

        assert (await call(client, "forget", ids=[coffee["id"]]))["deleted"] == [coffee["id"]]
        assert (await call(client, "list"))["total"] == 2

        # The conversation tools over the same pipe: a turn, the sieve (no sampling here), changes.
        turn = await call(
            client, "update_session", session_id="e2e", topic="咖啡", emotion={"primary": "happy", "confidence": 0.9}
        )
        assert turn["strategy"]["tone"] == "warm" and turn["session"]["turn_count"] == 1
        sieved = await call(client, "extract", user_message="我决定下个月开始学日语", session_id="e2e")
        assert sieved["items"][0]["category"] == "decision" and sieved["deep"] == "unsupported"
        ops = [
            {
                "key": "mem_900",
                "action": "add",
                "category": "user_preferences",
                "payload": "偏好深色主题",
                "importance": 8,
                "source": "用户输入",
            }
        ]
        assert (await call(client, "apply_changes", ops=ops))["applied"][0]["action"] == "created"
        assert (await call(client, "cleanup"))["dry_run"] is True
        session = json.loads((await client.read_resource("memory://sessions/e2e")).contents[0].text)  # type: ignore[union-attr]
        assert session["memories"][0]["content"] == "我决定下个月开始学日语"
        secret = await client.call_tool("remember", {"content": "我的密码是 Hunter2!xyz"})
        assert secret.is_error and "withheld" in secret.content[0].text.lower()  # type: ignore[union-attr]
        assert (await call(client, "list"))["total"] == 4

    # A second process on the same file sees what the first one wrote.
    async with Client(_params(tmp_path, cache_dir)) as again:
        assert (await call(again, "recall", query="Python"))["hits"][0]["id"] == code["id"]


async def test_server_answers_before_jieba_has_loaded(config: Config, cache_dir: Path) -> None:
    segmenter = GatedSegmenter(cache_dir)
    async with Client(build_server(config, segmenter)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        assert {p.name for p in (await client.list_prompts()).prompts} == PROMPTS
        stored = await client.call_tool("remember", {"content": "雾凇拼音很好用"})  # needs no dictionary
        assert not stored.is_error
        assert not segmenter.ready, "initialize, tools/list and remember were answered while jieba was still loading"
        segmenter.gate.set()


_NOISY_SERVER = """
import os, sys
import anyio
from pathlib import Path
from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server, serve_stdio

server = build_server(Config.from_env())

@server.tool()
def noisy() -> str:
    print("stray print, no newline: it would corrupt the next message", end="", flush=True)
    os.system("printf 'stray child output'")
    return "still fine"

anyio.run(serve_stdio, server)
"""


async def test_stray_stdout_output_does_not_reach_the_protocol_stream(tmp_path: Path, cache_dir: Path) -> None:
    """Served on the event loop, as over the SDK's transport, fd 1 is not the wire: prints and child
    processes write to stderr instead of corrupting the JSON-RPC stream."""
    env = environ(MCP_MEMORY_DB=str(tmp_path / "noisy.db"), MCP_MEMORY_CACHE_DIR=str(cache_dir))
    params = StdioServerParameters(command=sys.executable, args=["-c", _NOISY_SERVER], env=env)
    async with Client(params) as client:
        for _ in range(2):
            with anyio.fail_after(20):  # a corrupted answer would never arrive
                result = await client.call_tool("noisy", {})
            assert not result.is_error and result.content[0].text == "still fine"  # type: ignore[union-attr]
        assert (await call(client, "recall", query="anything"))["hits"] == []


async def test_recall_over_stdio_carries_every_field_and_validates(tmp_path: Path, cache_dir: Path) -> None:
    """The SDK client validates each result against the tool's output schema; the hit carries every
    field of the contract, with the same values as the text block."""
    async with Client(_params(tmp_path, cache_dir)) as client:
        await call(client, "remember", content="我每天早上喝一杯拿铁咖啡", key="drink", tags=["饮品"])
        result = await client.call_tool("recall", {"query": "咖啡"})
        assert not result.is_error and result.structured_content is not None
        found = result.structured_content
        assert set(found) == {"keywords", "hits", "note"} and found["note"] is None
        hit = found["hits"][0]
        assert set(hit) == {"id", "content", "key", "category", "tags", "score", "updated_at"}
        assert hit["key"] == "drink" and hit["tags"] == ["饮品"]
        text = result.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == found and text == json.dumps(found, separators=(",", ":"), ensure_ascii=False)

        # A request line far longer than any pipe buffer is read whole and refused cleanly.
        with anyio.fail_after(30):
            huge = await client.call_tool("recall", {"query": "长" * 300_000})
        assert huge.is_error and "2000" in huge.content[0].text  # type: ignore[union-attr]
        assert (await call(client, "recall", query="咖啡"))["hits"][0]["id"] == hit["id"]


_RAW = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "x"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "ping"},
]  # fmt: skip


def _raw_session(env: dict[str, str], kind: str, tmp_path: Path) -> tuple[list[dict[str, Any]], int, str]:
    """Raw JSON-RPC lines to the console script over pipes, sockets (how Node starts a child) or a
    file: each request waits for its answer, then stdin closes. (answers, exit code, stderr)"""
    if kind == "file":  # only the handshake: what is in flight when the file ends may go unanswered
        feed = tmp_path / "requests.jsonl"
        feed.write_text(json.dumps(_RAW[0]) + "\n")
        with feed.open("rb") as stdin:
            done = subprocess.run([_command()], stdin=stdin, capture_output=True, env=env, timeout=60, check=False)
        return [json.loads(x) for x in done.stdout.splitlines()], done.returncode, done.stderr.decode()
    ours: list[socket.socket] = []
    if kind == "socket":
        (ours_in, theirs_in), (ours_out, theirs_out) = socket.socketpair(), socket.socketpair()
        ours = [ours_in, ours_out]
        proc = subprocess.Popen([_command()], stdin=theirs_in, stdout=theirs_out, stderr=subprocess.PIPE, env=env)
        theirs_in.close()
        theirs_out.close()
        send, receive, close = ours_in.sendall, lambda: ours_out.recv(65536), lambda: ours_in.shutdown(socket.SHUT_WR)
    else:
        proc = subprocess.Popen(
            [_command()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert proc.stdin and proc.stdout
        stdin, stdout = proc.stdin, proc.stdout

        def send(data: bytes) -> None:
            stdin.write(data)
            stdin.flush()

        receive, close = lambda: os.read(stdout.fileno(), 65536), lambda: None  # communicate() closes stdin
    received = b""
    for line in _RAW:
        send(json.dumps(line).encode() + b"\n")
        while "id" in line and received.count(b"\n") < line["id"]:
            received += receive()
    close()
    _, errors = proc.communicate(timeout=60)
    for sock in ours:
        sock.close()
    return [json.loads(x) for x in received.splitlines()], proc.returncode, errors.decode()


@pytest.mark.parametrize("kind", ["pipe", "socket", "file"])
async def test_raw_stdio_over_pipes_sockets_and_files(tmp_path: Path, cache_dir: Path, kind: str) -> None:
    """Answers in order, then a clean exit (code 0, no traceback) once stdin closes; pipes and
    sockets are served on the event loop, a file in a worker thread."""
    env = {**_params(tmp_path, cache_dir).env, "MCP_MEMORY_LOG_LEVEL": "WARNING"}  # type: ignore[dict-item]
    answers, code, errors = await anyio.to_thread.run_sync(_raw_session, env, kind, tmp_path)
    assert [a["id"] for a in answers] == ([1] if kind == "file" else [1, 2, 3])
    assert answers[0]["result"]["serverInfo"]["name"] == "jiyi"
    if kind != "file":
        assert answers[1]["result"]["structuredContent"]["hits"] == []
    assert code == 0 and "Traceback" not in errors, errors
