"""Fair sharing in HTTP mode, end to end: the installed command serving two namespaces, one token
flooding the server (sessions it never ends, sockets that never finish a request, connections by
the thousand) while the other token's SDK client keeps remembering and recalling. The server's
own limits are lowered where that keeps a test short (MCP_MEMORY_HTTP_*); the clients keep their
defaults. Every bound on time only catches a hang."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import random
import resource
import select
import socket
import string
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcp_memory_server.server.connections import AUTO_CAP, connection_cap
from mcp_memory_server.server.log_repeats import RepeatFilter

from .. import wire
from ..calls import call
from ..http_server import Served, command, free_port, http_client

pytestmark = pytest.mark.anyio

ALICE = "alice-floods-0123456789abcdef"  # the token that floods
BOB = "bob-keeps-working-fedcba987654"  # the token that must keep working
TOKENS = f"alice:{ALICE},bob:{BOB}"
VERSION = "2025-06-18"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}},
}


@contextlib.contextmanager
def _server(
    tmp_path: Path, cache_dir: Path, env: Mapping[str, str], open_files: int | None = None
) -> Iterator[tuple[Served, subprocess.Popen[bytes]]]:
    """`jiyi --transport http` with `env`, optionally under an open-file limit of `open_files`
    (soft and hard, so the server cannot raise it), until it accepts connections."""
    port = free_port()
    db = tmp_path / "fair.db"
    served = Served(f"http://127.0.0.1:{port}/mcp", port, db, tmp_path / "stderr.log", tmp_path / "stdout.log")
    environ = {**wire.environ(MCP_MEMORY_DB=str(db), MCP_MEMORY_CACHE_DIR=str(cache_dir)), **env}

    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    with served.stderr.open("w") as err, served.stdout.open("w") as out:
        proc = subprocess.Popen(
            [command(), "--transport", "http", "--port", str(port)],
            stdout=out,
            stderr=err,
            env=environ,
            preexec_fn=limit,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"the server exited:\n{served.stderr.read_text()}"
            assert time.monotonic() < deadline, f"the server did not start:\n{served.stderr.read_text()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.05)
        yield served, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("the server did not stop within 30 s of SIGTERM")
    assert served.stdout.read_text() == "", "nothing is printed on stdout"


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc")


def _post(port: int, token: str, message: Mapping[str, Any], session: str | None = None) -> tuple[int, str, str]:
    """(status, Mcp-Session-Id of the answer or "", body) of one raw POST to /mcp."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": VERSION}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("mcp-session-id") or "", response.read().decode()
    finally:
        conn.close()


def _ping(port: int, token: str, session: str) -> int:
    return _post(port, token, {"jsonrpc": "2.0", "id": 9, "method": "ping"}, session)[0]


async def _bob_works(url: str, label: str, mode: str = "legacy") -> None:
    """A new client of Bob's (the initialize handshake by default) remembers and recalls."""
    word = "".join(random.choices(string.ascii_lowercase, k=12))  # a word no other memory has
    async with http_client(url, BOB, mode=mode) as bob:
        stored = await call(bob, "remember", content=f"鲍勃{label}的暗号是 {word}, his password hint is {word}")
        hits = (await call(bob, "recall", query=word))["hits"]
        assert stored["id"] in [hit["id"] for hit in hits], label


async def _while(work: Callable[[], Any], bob: Callable[[int], Any]) -> Any:
    """Run the blocking `work` in a thread; meanwhile call `bob(round)` again and again. The
    result of `work`, once it and Bob's last round are done."""
    done = anyio.Event()
    result: list[Any] = []

    async def run() -> None:
        try:
            result.append(await anyio.to_thread.run_sync(work))
        finally:
            done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        rounds = 0
        while not done.is_set() or rounds == 0:
            await bob(rounds)
            rounds += 1
    return result[0]


@pytest.mark.timeout(300)
async def test_one_token_opening_sessions_it_never_ends_never_locks_out_another(
    tmp_path: Path, cache_dir: Path
) -> None:
    cap = 8
    env = {"MCP_MEMORY_TOKENS": TOKENS, "MCP_MEMORY_HTTP_SESSIONS_PER_TOKEN": str(cap)}
    with _server(tmp_path, cache_dir, env) as (served, proc):
        async with http_client(served.url, BOB, mode="legacy") as steady:  # one session held all along
            kept = await call(steady, "remember", content="鲍勃的船叫海鸥号, Bob's boat is the Seagull")
            rss_before = _rss_mib(proc.pid)

            def flood() -> list[tuple[int, str, str]]:
                with ThreadPoolExecutor(4) as pool:
                    return list(pool.map(lambda _: _post(served.port, ALICE, _INITIALIZE), range(200)))

            async def bob(round: int) -> None:
                await _bob_works(served.url, f"第{round}轮")
                assert kept["id"] in [h["id"] for h in (await call(steady, "recall", query="海鸥号 Seagull"))["hits"]]

            answers = await _while(flood, bob)
            rss_after = _rss_mib(proc.pid)

            # Four at a time, fewer than the cap: there is always an idle session of Alice's to end,
            # so each of her initialize requests is answered, as a client that forgets to end its
            # sessions would need.
            assert Counter(status for status, _, _ in answers) == {200: 200}
            opened = [session for _, session, _ in answers]
            alive = [session for session in opened if _ping(served.port, ALICE, session) == 200]
            assert 1 <= len(alive) <= cap, f"{len(alive)} of Alice's {len(opened)} sessions are still open"
            assert rss_after - rss_before < 200, (rss_before, rss_after)

            # Bob's first session was never Alice's to end, and Bob still opens new ones.
            assert kept["id"] in [h["id"] for h in (await call(steady, "recall", query="海鸥号"))["hits"]]
            await _bob_works(served.url, "之后 after")
            # A session answers only to the token that opened it.
            assert _ping(served.port, BOB, alive[0]) == 404
            assert _ping(served.port, ALICE, alive[0]) == 200


def _listen_stream(port: int, token: str, session: str) -> socket.socket:
    """An open GET stream of the session: the request is in progress for as long as it stays open."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: {VERSION}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed the stream"
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


@pytest.mark.timeout(180)
async def test_a_token_whose_sessions_are_all_busy_is_told_why_with_429(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_TOKENS": TOKENS, "MCP_MEMORY_HTTP_SESSIONS_PER_TOKEN": "2"}
    with _server(tmp_path, cache_dir, env) as (served, _):
        port = served.port
        first, second = (_post(port, ALICE, _INITIALIZE)[1] for _ in range(2))
        streams = [_listen_stream(port, ALICE, first), _listen_stream(port, ALICE, second)]
        try:
            status, _, body = _post(port, ALICE, _INITIALIZE)
            assert status == 429, body
            error = json.loads(body)["error"]
            assert "holds 2 open MCP sessions" in error["message"] and "DELETE" in error["message"], error
            # Bob is not Alice: his initialize is answered, and his SDK client works.
            assert _post(port, BOB, _INITIALIZE)[0] == 200
            await _bob_works(served.url, "Alice 满了")

            streams.pop(0).close()  # the first session is idle from now on
            deadline = time.monotonic() + 30
            while (status := _post(port, ALICE, _INITIALIZE)[0]) == 429:
                assert time.monotonic() < deadline, "the idle session was never ended for a new one"
                await anyio.sleep(0.2)
            assert status == 200
            assert (_ping(port, ALICE, first), _ping(port, ALICE, second)) == (404, 200)
        finally:
            for stream in streams:
                stream.close()


def _closed_by_server(socks: list[socket.socket], within: float) -> dict[socket.socket, bytes]:
    """What each socket received until the server closed it (end of stream or reset); fails
    naming how many were still open after `within` seconds."""
    received = dict.fromkeys(socks, b"")
    by_fd = {sock.fileno(): sock for sock in socks}
    poll = select.poll()
    for fd in by_fd:
        poll.register(fd, select.POLLIN)
    deadline = time.monotonic() + within
    while by_fd:
        left = deadline - time.monotonic()
        assert left > 0, f"{len(by_fd)} of {len(socks)} half-open connections still open after {within:g} s"
        for fd, _ in poll.poll(min(left, 1.0) * 1000):
            sock = by_fd[fd]
            try:
                chunk = sock.recv(65536)
            except OSError:  # reset
                chunk = b""
            if chunk:
                received[sock] += chunk
            else:
                poll.unregister(fd)
                del by_fd[fd]
    return received


def _trickle(sock: socket.socket, prefix: bytes, every: float, stop: threading.Event) -> None:
    """Send `prefix`, then a byte every `every` seconds, until the server closes the connection."""
    with contextlib.suppress(OSError):
        sock.sendall(prefix)
        while not stop.wait(every):
            sock.sendall(b"x")


@pytest.mark.timeout(300)
async def test_half_open_connections_are_closed_while_another_token_works(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_TOKENS": TOKENS, "MCP_MEMORY_HTTP_READ_TIMEOUT": "2", "MCP_MEMORY_HTTP_BODY_TIMEOUT": "6"}
    with _server(tmp_path, cache_dir, env) as (served, _):
        port = served.port
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n".encode()
        with_token = head + f"Authorization: Bearer {ALICE}\r\n".encode()
        whole = with_token + b"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n"
        groups: dict[str, list[socket.socket]] = {}
        stop = threading.Event()
        trickling: list[threading.Thread] = []
        try:
            for name, prefix, count in (("head", head, 100), ("head+token", with_token, 100), ("body", whole, 100)):
                groups[name] = []
                for _ in range(count):
                    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                    sock.sendall(prefix + (b'{"jsonrpc": "2.0", ' if name == "body" else b""))
                    groups[name].append(sock)
            # Slower than the deadlines allow in all, each byte sooner than the read timeout.
            for name, prefix, every in (("head, a byte at a time", head, 0.5), ("body, a byte at a time", whole, 1.0)):
                groups[name] = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(10)]
                for sock in groups[name]:
                    thread = threading.Thread(target=_trickle, args=(sock, prefix, every, stop), daemon=True)
                    thread.start()
                    trickling.append(thread)

            everything = [sock for socks in groups.values() for sock in socks]
            received = await _while(
                lambda: _closed_by_server(everything, within=90),
                lambda round: _bob_works(served.url, f"第{round}轮", mode="legacy" if round % 2 else "auto"),
            )
            for sock in groups["head"] + groups["head+token"] + groups["head, a byte at a time"]:
                assert received[sock].startswith(b"HTTP/1.1 408 Request Timeout"), received[sock][:80]
            await _bob_works(served.url, "之后 after")
        finally:
            stop.set()
            for socks in groups.values():
                for sock in socks:
                    sock.close()
            for thread in trickling:
                thread.join(timeout=10)


@contextlib.contextmanager
def _open_files_at_least(count: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= count:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < count:
        pytest.skip(f"the test needs {count} open files; this machine allows {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _lines(path: Path) -> int:
    with path.open("rb") as log:
        return sum(1 for _ in log)


@pytest.mark.timeout(300)
async def test_a_connection_flood_is_logged_in_a_few_lines(tmp_path: Path, cache_dir: Path) -> None:
    # The server as it ran when it was attacked had 1,024 open files, which 1,030 sockets exhaust;
    # the suite uses 256 and 262 (FAIR_OPEN_FILES=1024 for the attack's own figures): the same
    # exhaustion, in a quarter of the time.
    files = int(os.environ.get("FAIR_OPEN_FILES", "256"))
    env = {
        "MCP_MEMORY_TOKENS": TOKENS,
        "MCP_MEMORY_HTTP_MAX_CONNECTIONS": "100",
        "MCP_MEMORY_HTTP_READ_TIMEOUT": "2",
    }
    with _open_files_at_least(4096), _server(tmp_path, cache_dir, env, open_files=files) as (served, proc):
        port = served.port
        await _bob_works(served.url, "之前 before")
        before = _lines(served.stderr)
        flood: list[socket.socket] = []
        try:
            for _ in range(files + 6):
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                flood.append(sock)
            for _ in range(files // 2):  # and connections that leave at once
                socket.create_connection(("127.0.0.1", port), timeout=30).close()
            try:
                await anyio.to_thread.run_sync(lambda: _closed_by_server(flood, within=150))
                still_open = ""
            except AssertionError as failure:  # reported after the log's size, which says more
                still_open = str(failure)
        finally:
            for sock in flood:
                sock.close()
        logged = _lines(served.stderr) - before
        with served.stderr.open("rb") as log:
            tail = log.read()[-3000:].decode(errors="replace")
        assert logged <= 60, f"{logged} lines logged for the flood, ending:\n{tail}"
        assert not still_open, still_open
        await _bob_works(served.url, "之后 after")
        assert proc.poll() is None


# ---- the parts on their own -----------------------------------------------------------------


def test_a_repeated_record_is_written_once_per_interval_with_the_count_left_out() -> None:
    now = [0.0]
    repeats = RepeatFilter(interval=10, clock=lambda: now[0])
    logger = logging.getLogger("tests.fair_sharing.repeats")

    def record(message: str, *args: object) -> logging.LogRecord:
        return logger.makeRecord(logger.name, logging.ERROR, __file__, 1, message, args, None)

    written = []
    for second in range(25):  # the same error 10 times a second for 25 s, and another beside it
        now[0] = float(second)
        for _ in range(10):
            first = record("socket.accept() out of system resource: %s", "Too many open files")
            if repeats.filter(first):
                written.append(first.getMessage())
        other = record("连接 %d 已关闭", second % 2)  # two messages by their arguments: each its own allowance
        if repeats.filter(other):
            written.append(other.getMessage())
    assert written == [
        "socket.accept() out of system resource: Too many open files",
        "连接 0 已关闭",
        "连接 1 已关闭",
        "socket.accept() out of system resource: Too many open files (and 99 more like it in the last 10 s)",
        "连接 0 已关闭 (and 4 more like it in the last 10 s)",
        "连接 1 已关闭 (and 4 more like it in the last 10 s)",
        "socket.accept() out of system resource: Too many open files (and 99 more like it in the last 10 s)",
        "连接 0 已关闭 (and 4 more like it in the last 10 s)",
        "连接 1 已关闭 (and 4 more like it in the last 10 s)",
    ]


def test_the_connection_cap_leaves_room_for_the_rest_of_the_process() -> None:
    assert connection_cap(0, 1024) == 512
    assert connection_cap(0, 1_048_576) == AUTO_CAP
    assert connection_cap(0, None) == AUTO_CAP
    assert connection_cap(100, 1024) == 100
    assert connection_cap(5000, 1024) == 1024 - 128  # lowered, with a warning
    assert connection_cap(0, 100) == 50
