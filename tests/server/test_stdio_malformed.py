"""Malformed input on stdin, sent to the installed command over pipes (served on the event loop) and
from a file (read in a worker thread): each line that is not a JSON-RPC message gets the JSON-RPC
error reply (-32700 when it is not JSON, -32600 when it is JSON but not a message, with its id when
one can be read), is logged on stderr, and the next request is answered. A line over the limit is
refused without being kept."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_memory_server.server.transports import MAX_LINE

from ..http_server import command
from ..wire import PROTOCOL_VERSION, StdioPeer, environ

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_PING = b'{"jsonrpc": "2.0", "id": "after", "method": "ping"}'
_HUGE = 40 * 1024 * 1024  # bytes: a line over MAX_LINE

# (what, the line, the error code, the id the reply carries)
_DEEP = b"[" * 300 + b"]" * 300
MALFORMED: list[tuple[str, bytes, int, Any]] = [
    ("truncated JSON", b'{"jsonrpc": "2.0", "id": 7, "method": "tools/li', PARSE_ERROR, None),
    ("escaped lone surrogate", rb'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": "a\ud800"}}',
     PARSE_ERROR, None),
    ("invalid UTF-8", '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "remember", '
     '"arguments": {"content": "记住'.encode() + b"\xff\xfe\xed\xa0\x80" + b'"}}}', PARSE_ERROR, None),
    ("batch", b'[{"jsonrpc": "2.0", "id": 10, "method": "ping"}]', INVALID_REQUEST, None),
    ("nested 300 deep", b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"x": ' + _DEEP + b"}}",
     PARSE_ERROR, None),
    ("no method", b'{"jsonrpc": "2.0", "id": 12}', INVALID_REQUEST, 12),
    ("wrong version", '{"jsonrpc": "1.0", "id": "版本", "method": "ping"}'.encode(), INVALID_REQUEST, "版本"),
    ("not an object", b'"hello"', INVALID_REQUEST, None),
]  # fmt: skip


def _initialize() -> bytes:
    params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params}).encode()


@pytest.fixture
def peer(tmp_path: Path, cache_dir: Path, segmenter: Any) -> Iterator[StdioPeer]:
    started = StdioPeer([command(), "--db", str(tmp_path / "m.db")], environ(MCP_MEMORY_CACHE_DIR=str(cache_dir)))
    try:
        started.send_line(_initialize())
        started.wait_for(lambda m: m.get("id") == "init", "the answer to initialize")
        started.send_line(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield started
    finally:
        started.finish()


def _answer(peer: StdioPeer) -> dict[str, Any]:
    return peer.wait_for(lambda m: "method" not in m, "an answer")


def _check_reply(reply: dict[str, Any], code: int, request_id: Any, what: str) -> None:
    assert reply.get("error", {}).get("code") == code, (what, reply)
    assert "id" in reply and reply["id"] == request_id, (what, reply)
    assert reply["error"]["message"].startswith("Parse error" if code == PARSE_ERROR else "Invalid request"), reply


def test_each_malformed_line_is_answered_and_serving_goes_on(peer: StdioPeer) -> None:
    for what, line, code, request_id in MALFORMED:
        peer.send_line(line)
        _check_reply(_answer(peer), code, request_id, what)
        peer.send_line(_PING)
        assert _answer(peer) == {"jsonrpc": "2.0", "id": "after", "result": {}}, what
    assert peer.close() == 0
    logged = peer.stderr()
    assert logged.count("WARNING mcp_memory_server.server.transports: stdin:") == len(MALFORMED), logged
    assert "Traceback" not in logged


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory is read from /proc")
def test_a_line_over_the_limit_is_refused_without_being_kept(peer: StdioPeer) -> None:
    peer.send_line(_PING)
    assert _answer(peer)["id"] == "after"
    before = _peak_kib(peer.proc.pid)
    # A request whose text alone is over the limit, what a client sending a huge argument does;
    # then a line four times the limit: were lines kept whole, the peak would grow by its length.
    head = b'{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "remember", "arguments": '
    for size in (_HUGE, 4 * MAX_LINE):
        peer.send_line(head + b'{"content": "' + "长".encode() * (size // 3) + b'"}}}')
        reply = _answer(peer)
        _check_reply(reply, INVALID_REQUEST, None, f"a line of {size} bytes")
        assert f"over the limit of {MAX_LINE}" in reply["error"]["message"]
        peer.send_line(_PING)
        assert _answer(peer)["id"] == "after"
    grown = _peak_kib(peer.proc.pid) - before
    assert grown * 1024 < 3 * MAX_LINE, f"peak memory grew by {grown} KiB"
    assert peer.close() == 0
    assert peer.stderr().count("refused a line of") == 2 and str(MAX_LINE) in peer.stderr()


def _peak_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1])
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def test_a_file_on_stdin_gets_the_same_replies(tmp_path: Path, cache_dir: Path, segmenter: Any) -> None:
    """stdin a file (read in a worker thread, not on the event loop): the same replies, in order.
    (What is still in flight when the file ends may go unanswered, so only the handshake, whose
    answer comes first, is a request here.)"""
    feed = tmp_path / "requests.jsonl"
    feed.write_bytes(b"\n".join([_initialize(), *(line for _, line, _, _ in MALFORMED)]) + b"\n")
    with feed.open("rb") as stdin:
        done = subprocess.run(
            [command(), "--db", str(tmp_path / "f.db")],
            stdin=stdin,
            capture_output=True,
            env=environ(MCP_MEMORY_CACHE_DIR=str(cache_dir)),
            timeout=60,  # a hang, caught before the test's own bound (120 s)
            check=False,
        )
    answers = [m for m in map(json.loads, done.stdout.splitlines()) if "method" not in m]
    assert next(a for a in answers if a["id"] == "init")["result"]["protocolVersion"] == PROTOCOL_VERSION
    errors = [a for a in answers if "error" in a]
    for (what, _, code, request_id), reply in zip(MALFORMED, errors, strict=True):
        _check_reply(reply, code, request_id, what)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
