"""Every message the server sends in a scripted session, over stdio and over streamable HTTP,
checked against the Zod schemas TypeScript MCP clients apply: `@modelcontextprotocol/core`, the
version the pinned Inspector uses, through .ci/inspector/validate-messages.mjs (installed by `make
inspector`). The session covers the handshake, every list, every tool, resources, prompts, log
messages, progress, list-changed and resource-updated notifications after a subscription, and
error replies; each message is checked as a JSON-RPC message and as its method's result or
notification. Outside CI a machine without Node or the installed packages skips, saying why; in CI
(`CI` set) that is a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..http_server import command, http_server
from ..surface import PROMPTS, TOOLS
from ..wire import PROTOCOL_VERSION, HttpPeer, Peer, StdioPeer, environ

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".ci" / "inspector"
SCRIPT = FOLDER / "validate-messages.mjs"
CORE = FOLDER / "node_modules" / "@modelcontextprotocol" / "core" / "package.json"


def _node() -> str:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "Node.js (`node`) is not on PATH"
    elif not CORE.exists():
        missing = f"{CORE.relative_to(ROOT)} is missing; run `make inspector` (needs npm)"
    if missing is None:
        assert node is not None
        return node
    message = f"the schema check cannot run: {missing}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def validate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The validator's verdict on `records` ({"message", "method"} each)."""
    done = subprocess.run(
        [_node(), str(SCRIPT)],
        input=json.dumps(records, ensure_ascii=False),
        capture_output=True,
        text=True,
        cwd=FOLDER,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, 1), f"the validator failed ({done.returncode}):\n{done.stderr}"
    verdict: dict[str, Any] = json.loads(done.stdout)
    assert verdict["checked"] == len(records)
    assert (done.returncode == 1) == bool(verdict["failures"])
    return verdict


def _shown(failures: list[dict[str, Any]]) -> str:
    """The first failures, one line each: which message, which schema, the schema's complaint."""
    lines = []
    for failure in failures[:12]:
        issues = json.dumps(failure["issues"], ensure_ascii=False)
        sent = json.dumps(failure["message"], ensure_ascii=False)
        lines.append(f"#{failure['index']} {failure['schema']}: {issues[:300]} in {sent[:300]}")
    return "\n".join(lines)


# Markdown: its import reports progress once it is done, however short the text.
_IMPORT = "# 关于我\n\n- 用户住在杭州西湖区\n- Prefers dark mode in every editor\n- 每周三晚上打羽毛球 with friends\n"


def _is(method: str) -> Any:
    return lambda m: m.get("method") == method


def session(peer: Peer) -> dict[str, Any]:
    """The scripted session; what the checks after it need."""
    init = peer.request(
        "initialize",
        {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "wire-check", "version": "1"}},
    )
    assert init["result"]["protocolVersion"] == PROTOCOL_VERSION, init
    peer.notify("notifications/initialized")
    if isinstance(peer, HttpPeer):
        peer.listen()
    assert peer.request("ping")["result"] == {}
    assert peer.request("logging/setLevel", {"level": "debug"})["result"] == {}

    tools = peer.request("tools/list")["result"]["tools"]
    assert {t["name"] for t in tools} == TOOLS
    resources = peer.request("resources/list")["result"]["resources"]
    assert "memory://stats" in {r["uri"] for r in resources}
    assert peer.request("resources/templates/list")["result"]["resourceTemplates"]
    assert {p["name"] for p in peer.request("prompts/list")["result"]["prompts"]} == PROMPTS
    assert peer.request("resources/subscribe", {"uri": "memory://stats"})["result"] == {}

    called: set[str] = set()

    def call(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None, fails: bool = False) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta is not None:
            params["_meta"] = meta
        answer = peer.request("tools/call", params)
        called.add(name)
        assert answer["result"].get("isError", False) is fails, answer
        return answer["result"]

    coffee = call("remember", {"content": "我每天早上喝一杯拿铁咖啡", "category": "preference", "tags": ["咖啡"]})
    memory_id = coffee["structuredContent"]["id"]
    # A write to a subscribed resource: both kinds of change notification follow.
    peer.wait_for(_is("notifications/resources/list_changed"), "resources/list_changed after remember")
    peer.wait_for(
        lambda m: m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == "memory://stats",
        "resources/updated for memory://stats",
    )
    python = call("remember", {"content": "I write Python at work, 用 VS Code", "category": "fact", "importance": 0.7})
    assert call("recall", {"query": "我喝什么咖啡"})["structuredContent"]["hits"][0]["id"] == memory_id
    call("list", {"limit": 5})
    call("update_session", {"session_id": "wire", "topic": "咖啡", "emotion": {"primary": "happy", "confidence": 0.9}})
    call("extract", {"user_message": "我决定下个月开始学日语", "session_id": "wire"})
    theme = {"key": "theme", "action": "add", "category": "user_preferences", "payload": "偏好深色主题"}
    ops = [{**theme, "importance": 8, "source": "用户输入"}]
    call("apply_changes", {"ops": ops})
    call("edit_profile", {"field": "domains", "action": "add", "text": "机器学习 and databases"})
    call("refresh_profile", {})
    call("import_memories", {"data": _IMPORT, "format": "markdown"}, meta={"progressToken": "import-1"})
    call("cleanup", {"dry_run": True})
    call("forget", {"ids": [memory_id]})
    call("restore", {"ids": [memory_id]})
    assert called == {t["name"] for t in tools}, "every tool is called"

    stats = peer.request("resources/read", {"uri": "memory://stats"})["result"]
    assert stats["contents"][0]["uri"] == "memory://stats"
    uri = f"memory://memories/{python['structuredContent']['id']}"
    assert peer.request("resources/read", {"uri": uri})["result"]["contents"]
    turn = {"user_message": "我搬到上海了", "assistant_message": "好的, noted."}
    prompt = peer.request("prompts/get", {"name": "extract_memories", "arguments": turn})
    assert prompt["result"]["messages"]

    # Error replies: an unknown method, an unknown tool, a resource that is not there, a prompt
    # without its required argument, a tool's invalid argument (a result marked as an error).
    assert peer.request("no/such_method")["error"]["code"] == -32601
    unknown_tool = peer.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert "error" in unknown_tool or unknown_tool["result"]["isError"] is True
    assert "error" in peer.request("resources/read", {"uri": "memory://memories/mem_000000000000"})
    assert "error" in peer.request("prompts/get", {"name": "extract_memories", "arguments": {}})
    call("remember", {"content": "x", "category": "Bad Category!"}, fails=True)
    if isinstance(peer, StdioPeer):  # lines that are not messages: answered by the server's own reader
        peer.send_line(b'{"jsonrpc": "2.0", "id": 1, "meth')
        assert peer.wait_for(lambda m: m.get("error") and m["id"] is None, "-32700")["error"]["code"] == -32700
        peer.send_line(b'{"jsonrpc": "2.0", "id": "no-method"}')
        assert peer.wait_for(lambda m: m.get("id") == "no-method", "-32600")["error"]["code"] == -32600
    assert peer.request("resources/unsubscribe", {"uri": "memory://stats"})["result"] == {}
    return {"memory_id": memory_id}


def _check(peer: Peer) -> None:
    methods = peer.methods()
    for wanted in (
        "notifications/message",
        "notifications/progress",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ):
        assert wanted in methods, f"the session recorded no {wanted}: {sorted(set(methods))}"
    assert any("error" in r["message"] for r in peer.records), "the session recorded no error reply"
    verdict = validate(peer.records)
    failing = len({f["index"] for f in verdict["failures"]})
    assert not failing, f"{failing} of {len(peer.records)} messages fail the schemas:\n" + _shown(verdict["failures"])


@pytest.fixture(scope="module")
def node(segmenter: Any) -> str:
    """Node with the schemas installed; jieba's dictionary cache is built first (`segmenter`)."""
    return _node()


@pytest.fixture
def stdio_peer(tmp_path: Path, cache_dir: Path, node: str) -> Iterator[StdioPeer]:
    peer = StdioPeer([command(), "--db", str(tmp_path / "wire.db")], environ(MCP_MEMORY_CACHE_DIR=str(cache_dir)))
    try:
        yield peer
    finally:
        peer.finish()


def test_every_message_over_stdio_validates(stdio_peer: StdioPeer) -> None:
    session(stdio_peer)
    _check(stdio_peer)
    assert stdio_peer.close() == 0, stdio_peer.stderr()


def test_every_message_over_http_validates(tmp_path: Path, cache_dir: Path, node: str) -> None:
    with http_server(tmp_path, cache_dir) as served:
        peer = HttpPeer(served.url)
        try:
            session(peer)
        finally:
            peer.close()
    _check(peer)


def test_the_check_catches_a_null_where_a_field_must_be_absent(node: str) -> None:
    """The check can fail: a log message with `"_meta": null`, a result with a wrong type and an
    unknown notification are each reported; the same log message without the null passes."""
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "启动"}}
    nulled = {**log, "params": {**log["params"], "_meta": None}}
    bad_result = {"jsonrpc": "2.0", "id": 1, "result": {"tools": "none"}}
    records = [{"message": log}, {"message": nulled}, {"message": bad_result, "method": "tools/list"}]
    records.append({"message": {"jsonrpc": "2.0", "method": "notifications/unheard_of"}})
    records.append({"message": {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "x"}}})
    verdict = validate(records)
    assert sorted({f["index"] for f in verdict["failures"]}) == [1, 2, 3, 4], _shown(verdict["failures"])
