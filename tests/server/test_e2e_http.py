"""Streamable HTTP mode: the installed command serving on loopback, driven by the SDK client."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from ..http_server import http_server as start

pytestmark = pytest.mark.anyio


@pytest.fixture
def http_server(tmp_path: Path, cache_dir: Path) -> Iterator[tuple[str, Path]]:
    with start(tmp_path, cache_dir) as served:
        yield served.url, served.stderr


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
