"""The installed command serving streamable HTTP on a free loopback port, for end-to-end tests,
and the SDK client connected to it with a bearer token; and the `dashboard` command likewise."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from . import wire


def command() -> str:
    found = shutil.which("jiyi", path=str(Path(sys.executable).parent))
    assert found, "the console script is installed next to the test interpreter"
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Served:
    url: str
    port: int
    db: Path
    stderr: Path
    stdout: Path


@contextmanager
def http_server(
    tmp_path: Path, cache_dir: Path, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[Served]:
    """Start `jiyi --transport http` and wait until it accepts connections; stop it
    afterwards and check that it printed nothing on stdout."""
    port = free_port()
    db = tmp_path / "http.db"
    served = Served(f"http://127.0.0.1:{port}/mcp", port, db, tmp_path / "stderr.log", tmp_path / "stdout.log")
    # At the server's defaults (the semantic stage on where installed), as a user's client starts it.
    environ = {**wire.environ(MCP_MEMORY_DB=str(db), MCP_MEMORY_CACHE_DIR=str(cache_dir)), **(env or {})}
    with served.stderr.open("w") as err, served.stdout.open("w") as out:
        proc = subprocess.Popen(
            [command(), "--transport", "http", "--port", str(port), *args], stdout=out, stderr=err, env=environ
        )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"the HTTP server exited with {proc.returncode}:\n{served.stderr.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail(f"the HTTP server did not start:\n{served.stderr.read_text()}")
        yield served
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert served.stdout.read_text() == "", "nothing is printed on stdout, not even access logs"


@contextmanager
def dashboard_server(
    tmp_path: Path, cache_dir: Path, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[Served]:
    """Start `jiyi dashboard --port 0` and wait for the URL it prints on stdout once it
    listens; `url` is that URL (ending in /ui). Stop it afterwards and check that the URL line is
    all it printed there."""
    db = tmp_path / "dashboard.db"
    stdout, stderr = tmp_path / "dashboard-stdout.log", tmp_path / "dashboard-stderr.log"
    environ = {**os.environ, "MCP_MEMORY_DB": str(db), "MCP_MEMORY_CACHE_DIR": str(cache_dir), **(env or {})}
    with stderr.open("w") as err, stdout.open("w") as out:
        proc = subprocess.Popen([command(), "dashboard", "--port", "0", *args], stdout=out, stderr=err, env=environ)
    try:
        deadline = time.monotonic() + 30
        while not stdout.read_text().endswith("\n"):
            if proc.poll() is not None:
                pytest.fail(f"the dashboard exited with {proc.returncode}:\n{stderr.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the dashboard did not start:\n{stderr.read_text()}")
            time.sleep(0.05)
        line = stdout.read_text()
        assert line.startswith("dashboard: http://127.0.0.1:") and line.endswith("/ui\n"), line
        url = line.split()[1]
        yield Served(url, int(url.rsplit(":", 1)[1].split("/")[0]), db, stderr, stdout)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert stdout.read_text() == line, "the URL is the only line on stdout; logs go to stderr"


@asynccontextmanager
async def http_client(url: str, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending `Authorization: Bearer <token>`."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client
