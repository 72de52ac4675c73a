"""Streamable HTTP mode: the installed command serving on loopback, driven by the SDK client."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path, cache_dir: Path) -> Iterator[tuple[str, Path]]:
    command = shutil.which("mcp-memory-server", path=str(Path(sys.executable).parent))
    assert command
    port = _free_port()
    log = tmp_path / "stderr.log"
    out = tmp_path / "stdout.log"
    env = {**os.environ, "MCP_MEMORY_DB": str(tmp_path / "http.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    with log.open("w") as err, out.open("w") as std:
        proc = subprocess.Popen([command, "--transport", "http", "--port", str(port)], stdout=std, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail(f"the HTTP server did not start:\n{log.read_text()}")
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert out.read_text() == "", "nothing is printed on stdout, not even access logs"


async def test_http_mode_serves_the_same_tools(http_server: tuple[str, Path], tmp_path: Path) -> None:
    url, log = http_server
    async with Client(url) as client:
        stored = await client.call_tool("remember", {"content": "我喜欢用Python写代码", "category": "preference"})
        assert not stored.is_error
        found = await client.call_tool("recall", {"query": "python"})
        assert found.structured_content and found.structured_content["hits"][0]["content"] == "我喜欢用Python写代码"
    text = log.read_text()
    assert '"POST /mcp HTTP/1.1" 200' in text, "access lines go to stderr"
    assert url in text, "the URL is printed on stderr"
    assert str(tmp_path / "http.db") in text, "the absolute database path is logged at start"


def test_http_mode_rejects_foreign_hosts(http_server: tuple[str, Path]) -> None:
    url, _ = http_server
    port = int(url.split(":")[2].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"Host": "evil.example.com", "Content-Type": "application/json", "Accept": "application/json"}
    conn.request("POST", "/mcp", body=body, headers=headers)
    status = conn.getresponse().status
    conn.close()
    assert status in (403, 421)  # DNS-rebinding protection: a page on another host cannot reach us
