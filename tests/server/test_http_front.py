"""HTTP mode's front door, through the installed command: `GET /` leads to the dashboard, the
"serving" line comes once the socket listens (it names the port actually bound), and a port in use
is one clear line on stderr and a non-zero exit, before the database is opened."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.server.transports import http_app

from ..http_server import command, dashboard_server, http_server

pytestmark = pytest.mark.anyio


def _get(port: int, path: str, method: str = "GET") -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_the_root_of_http_mode_leads_to_the_dashboard(tmp_path: Path, cache_dir: Path) -> None:
    with http_server(tmp_path, cache_dir) as served:
        for method in ("GET", "HEAD"):
            root = _get(served.port, "/", method)
            assert (root.status, root.getheader("location")) == (302, "/ui/"), method
        page = httpx.get(f"http://127.0.0.1:{served.port}/", follow_redirects=True, timeout=10)
        assert page.status_code == 200 and page.url.path == "/ui/"
        assert "text/html" in page.headers["content-type"]
        assert _get(served.port, "/elsewhere").status == 404, "only the root is redirected"


def test_the_root_of_the_dashboard_command_leads_to_it(tmp_path: Path, cache_dir: Path) -> None:
    with dashboard_server(tmp_path, cache_dir) as served:
        root = _get(served.port, "/")
        assert (root.status, root.getheader("location")) == (302, "/ui/")


async def test_without_the_dashboard_the_root_names_the_mcp_endpoint(tmp_path: Path, cache_dir: Path) -> None:
    config = Config.from_env({}, db_path=tmp_path / "m.db", cache_dir=cache_dir)
    app = http_app(build_server(config), config, None)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert "href=/mcp" in page.text


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


@pytest.mark.parametrize("mode", [["--transport", "http"], ["dashboard"]], ids=["http", "dashboard"])
def test_a_port_in_use_is_one_clear_line_and_a_failure(
    tmp_path: Path, cache_dir: Path, busy_port: int, mode: list[str]
) -> None:
    env = {**os.environ, "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    db = tmp_path / "busy.db"
    done = subprocess.run(
        [command(), *mode, "--port", str(busy_port), "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == "", done
    problems = [line for line in done.stderr.splitlines() if " INFO " not in line]
    assert problems == [
        f"jiyi: cannot listen on 127.0.0.1:{busy_port}: the address is already in use "
        "(another server on that port?); choose another with --port"
    ], done.stderr
    assert "serving" not in done.stderr and "uvicorn" not in done.stderr
    assert not db.exists(), "the database is not opened when there is nowhere to serve it"


def test_the_serving_line_comes_once_the_socket_listens(tmp_path: Path, cache_dir: Path, segmenter: Any) -> None:
    """Port 0: only a bound socket knows its port, so a line naming one was written after the bind;
    a connection to it the moment the line appears is accepted."""
    log = tmp_path / "stderr.log"
    env = {**os.environ, "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [command(), "--transport", "http", "--port", "0", "--db", str(tmp_path / "s.db")],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    try:
        deadline = time.monotonic() + 60
        while (
            found := re.search(r"serving MCP over streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp", log.read_text())
        ) is None:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        port = int(found.group(1))
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        text = log.read_text()
        assert text.index("Application startup complete") < text.index("serving MCP over streamable HTTP")
        assert f"web dashboard at http://127.0.0.1:{port}/ui" in text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
