"""HTTP access end to end: the installed command serving on loopback with bearer tokens mapped to
namespaces, driven by the SDK's client and by raw HTTP. Every test tries to get past the gate or
across namespaces, and checks the database afterwards."""

from __future__ import annotations

import http.client
import json
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ResourceUpdatedNotification

from ..calls import call
from ..http_server import Served, command, free_port, http_client, http_server

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"
CAROL = "carol-token-not-configured-at-all"


@pytest.fixture
def served(tmp_path: Path, cache_dir: Path) -> Iterator[Served]:
    # Alice's token from the environment, Bob's from a tokens file: both sources in one server.
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"# namespace:token\nbob:{BOB}\n", encoding="utf-8")
    tokens.chmod(0o600)
    env = {"MCP_MEMORY_TOKENS": f"alice:{ALICE}", "MCP_MEMORY_TOKENS_FILE": str(tokens)}
    with http_server(tmp_path, cache_dir, env) as server:
        yield server


def _post(served: Served, body: dict[str, Any] | bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request("POST", "/mcp", body=data, headers=base | headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def _count(db: Path, namespace: str | None = None) -> int:
    """Memories written through the tools (reading memory://profile stores the profile as one more)."""
    with sqlite3.connect(db) as conn:
        sql = "SELECT count(*) FROM memories WHERE category != 'profile'"
        if namespace is None:
            return int(conn.execute(sql).fetchone()[0])
        return int(conn.execute(sql + " AND namespace = ?", (namespace,)).fetchone()[0])


async def test_requests_without_a_valid_token_are_refused(served: Served) -> None:
    for headers in (
        {},
        {"Authorization": f"Bearer {CAROL}"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {ALICE}"},
        {"Authorization": ALICE},
        {"Authorization": f"Bearer {ALICE}x"},
        {"Authorization": f"Bearer {ALICE[:-1]}"},
    ):
        status, response_headers, body = _post(served, _INITIALIZE, headers)
        assert status == 401, headers
        assert response_headers["www-authenticate"].startswith('Bearer realm="jiyi"')
        assert json.loads(body)["error"] in ("invalid_request", "invalid_token")
        assert ALICE not in body and BOB not in body
    # The SDK's client without a token fails to connect, and writes nothing.
    with pytest.raises(Exception):  # noqa: B017 - the transport's error type is the SDK's business
        async with http_client(served.url, CAROL) as client:
            await client.call_tool("remember", {"content": "不该被写入的记忆"})
    status, _, _ = _post(served, _INITIALIZE, {"Authorization": f"Bearer {ALICE}"})
    assert status == 200
    assert not served.db.exists() or _count(served.db) == 0


async def _read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    text = result.contents[0]
    assert hasattr(text, "text")
    return str(text.text)


async def test_namespaces_cannot_read_list_recall_or_delete_each_other(served: Served) -> None:
    async with http_client(served.url, ALICE) as alice, http_client(served.url, BOB) as bob:
        secret = await call(
            alice, "remember", content="爱丽丝的银行在招商银行，账户尾号 4821", category="fact", key="user.bank"
        )
        english = await call(alice, "remember", content="Alice prefers oat milk lattes", category="preference")
        await call(alice, "update_session", session_id="alice-s1", topic="咖啡")
        await call(alice, "remember", content="Alice is drafting the Q3 report", tier="working", session_id="alice-s1")
        ids = [secret["id"], english["id"]]

        # Bob looks for Alice's memories every way the surface offers.
        for query in ("招商银行", "银行 账户", "oat milk", "Alice", "爱丽丝", "Q3 report"):
            assert (await call(bob, "recall", query=query))["hits"] == [], query
        assert (await call(bob, "list"))["total"] == 0
        assert (await call(bob, "list", category="fact"))["items"] == []
        assert (await call(bob, "list", session_id="alice-s1"))["items"] == []
        for memory_id in ids:
            with pytest.raises(MCPError, match=f"no memory has the id '{memory_id}'"):
                await bob.read_resource(f"memory://memories/{memory_id}")
        assert "招商" not in await _read(bob, "memory://categories/fact")
        assert "oat" not in await _read(bob, "memory://MEMORY.md")
        stats = json.loads(await _read(bob, "memory://stats"))
        assert stats["total"] == 0
        assert stats["db_path"] is None, "token holders are not told where the server keeps its files"
        assert stats["db_bytes"] is None, "nor how much the database holds, every namespace's writes included"
        with pytest.raises(MCPError, match="no session has the id 'alice-s1'"):
            await bob.read_resource("memory://sessions/alice-s1")
        assert (await call(bob, "cleanup", dry_run=True))["candidates"] == []

        # ... and tries to delete or overwrite them.
        assert (await call(bob, "forget", ids=ids)) == {"deleted": [], "not_found": ids}
        restored = await call(bob, "restore", ids=ids)
        assert restored["restored"] == []
        changed = await bob.call_tool("apply_changes", {"ops": [{"key": ids[0], "action": "del", "category": "fact"}]})
        assert changed.is_error
        bob_own = await call(bob, "remember", content="Bob 的银行是工商银行", category="fact", key="user.bank")
        assert bob_own["action"] == "created"
        # Ids are counted per namespace: Bob's first memory has Alice's first id, and each reads his own.
        assert bob_own["id"] == secret["id"]
        assert "工商银行" in await _read(bob, f"memory://memories/{bob_own['id']}")
        assert "招商银行" in await _read(alice, f"memory://memories/{secret['id']}")
        assert "招商" not in await _read(bob, "memory://profile")

        # Alice's memories are all there, unchanged.
        assert (await call(alice, "list"))["total"] == 3
        hits = (await call(alice, "recall", query="银行"))["hits"]
        assert [h["id"] for h in hits] == [secret["id"]]
        assert hits[0]["content"] == "爱丽丝的银行在招商银行，账户尾号 4821"
        assert "Q3 report" in await _read(alice, "memory://sessions/alice-s1")
        assert (await call(bob, "recall", query="银行"))["hits"][0]["id"] == bob_own["id"]
    assert (_count(served.db, "alice"), _count(served.db, "bob"), _count(served.db, "")) == (3, 1, 0)


async def test_a_session_id_does_not_carry_its_namespace_to_another_token(served: Served) -> None:
    async with http_client(served.url, ALICE) as alice:
        await call(alice, "remember", content="只有爱丽丝知道的事：她的猫叫年糕")
    status, headers, _ = _post(served, _INITIALIZE, {"Authorization": f"Bearer {ALICE}"})
    assert status == 200
    session = headers["mcp-session-id"]
    _post(
        served,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Authorization": f"Bearer {ALICE}", "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"},
    )
    request = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "猫"}},
    }
    hijack = {"Authorization": f"Bearer {BOB}", "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
    status, _, body = _post(served, request, hijack)
    assert status in (200, 400, 403, 404), body
    assert "年糕" not in body, "Alice's session id with Bob's token is served in Bob's namespace, or not at all"
    status, _, body = _post(served, request, {**hijack, "Authorization": f"Bearer {ALICE}"})
    assert status == 200 and "年糕" in body


async def test_change_notifications_stay_in_their_namespace(served: Served) -> None:
    received: list[str] = []
    stats = anyio.Event()

    async def inbox(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            received.append(message.params.uri)
            if message.params.uri == "memory://stats":
                stats.set()

    async with (
        http_client(served.url, BOB) as bob,
        http_client(served.url, ALICE, mode="legacy", message_handler=inbox) as alice,
    ):
        # Ids are counted per namespace: Alice has a memory of the id of Bob's first one too, and
        # she watches that id; Bob's writes to his own must not reach her.
        await call(alice, "remember", content="爱丽丝的第一条记忆：喜欢乌龙茶")
        first = await call(bob, "remember", content="Bob's first memory, about sailing")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await alice.subscribe_resource(f"memory://memories/{first['id']}")
            await alice.subscribe_resource("memory://stats")
        await call(bob, "remember", content="Bob goes sailing every Sunday", key=None, category="event")
        await call(bob, "forget", ids=[first["id"]])
        await call(alice, "remember", content="爱丽丝周末去爬山")
        with anyio.fail_after(10):
            await stats.wait()
        await anyio.sleep(0.3)  # anything of Bob's that leaked would have arrived by now
    assert received == ["memory://stats"], "Alice hears of her own write only"


async def test_request_bodies_over_the_limit_are_refused(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_TOKENS": ALICE, "MCP_MEMORY_MAX_BODY": "65536"}
    with http_server(tmp_path, cache_dir, env) as server:
        auth = {"Authorization": f"Bearer {ALICE}"}
        status, _, _ = _post(server, b"{" + b" " * 70_000 + b"}", auth)
        assert status == 413
        async with http_client(server.url, ALICE) as client:
            stored = await call(client, "remember", content="请求体限制之后服务照常：" + "长" * 1500)
            assert stored["action"] == "created"
            assert (await call(client, "list"))["total"] == 1


async def test_allowed_hosts_extend_dns_rebinding_protection(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_TOKENS": ALICE, "MCP_MEMORY_ALLOWED_HOSTS": "memory.internal"}
    with http_server(tmp_path, cache_dir, env) as server:
        auth = {"Authorization": f"Bearer {ALICE}"}
        accepted = _post(server, _INITIALIZE, auth | {"Host": f"memory.internal:{server.port}"})[0]
        refused = _post(server, _INITIALIZE, auth | {"Host": f"evil.example:{server.port}"})[0]
        foreign_page = _post(server, _INITIALIZE, auth | {"Origin": "http://evil.example"})[0]
    assert (accepted, refused, foreign_page) == (200, 421, 403)


async def test_host_and_origin_are_matched_whole_not_by_prefix(tmp_path: Path, cache_dir: Path) -> None:
    """`localhost:evil` is no port and `http://localhost:8765.evil.com` is another site: both are
    refused on /mcp (421, 403), while the server's own names with their port are accepted."""
    env = {"MCP_MEMORY_TOKENS": ALICE}
    with http_server(tmp_path, cache_dir, env) as server:
        auth = {"Authorization": f"Bearer {ALICE}"}
        port = server.port
        statuses = {
            host: _post(server, _INITIALIZE, auth | {"Host": host})[0]
            for host in (
                f"localhost:{port}",
                f"127.0.0.1:{port}",
                "localhost:evil",
                f"localhost:{port}.evil.com",
                "localhost:",
            )
        }
        origins = {
            origin: _post(server, _INITIALIZE, auth | {"Origin": origin})[0]
            for origin in (f"http://localhost:{port}", f"http://localhost:{port}.evil.com", "http://localhost:evil")
        }
        dashboard = {}
        for host in (f"localhost:{port}", "localhost:evil"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", "/ui/api/stats", headers=auth | {"Host": host})
                dashboard[host] = conn.getresponse().status
            finally:
                conn.close()
    assert dashboard == {f"localhost:{port}": 200, "localhost:evil": 421}
    assert statuses == {
        f"localhost:{port}": 200,
        f"127.0.0.1:{port}": 200,
        "localhost:evil": 421,
        f"localhost:{port}.evil.com": 421,
        "localhost:": 421,
    }
    assert origins == {
        f"http://localhost:{port}": 200,
        f"http://localhost:{port}.evil.com": 403,
        "http://localhost:evil": 403,
    }


def test_a_public_address_without_tokens_is_refused(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_DB": str(tmp_path / "public.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin"}
    port = str(free_port())
    done = subprocess.run(
        [command(), "--transport", "http", "--host", "0.0.0.0", "--port", port],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert "refusing to serve 0.0.0.0 without tokens" in done.stderr
    assert "MCP_MEMORY_TOKENS" in done.stderr and done.stdout == ""
    assert not (tmp_path / "public.db").exists()


def test_bad_tokens_stop_the_server_with_a_clear_message(tmp_path: Path, cache_dir: Path) -> None:
    base = {"MCP_MEMORY_DB": str(tmp_path / "t.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin"}
    for env, message in (
        ({"MCP_MEMORY_TOKENS": "alice:short"}, "too short"),
        ({"MCP_MEMORY_TOKENS": f"Alice Smith:{ALICE}"}, "namespace 'Alice Smith' is not valid"),
        ({"MCP_MEMORY_TOKENS": f"a:{ALICE},b:{ALICE}"}, "the same token is given for two namespaces"),
        ({"MCP_MEMORY_TOKENS_FILE": str(tmp_path / "missing.txt")}, "cannot read the tokens file"),
    ):
        done = subprocess.run(
            [command(), "--transport", "http", "--port", str(free_port())],
            capture_output=True,
            text=True,
            env=base | env,
            timeout=60,
        )
        assert done.returncode == 1, env
        assert message in done.stderr, done.stderr
        assert "short" not in done.stderr or "alice:short" not in done.stderr, "the token itself is never echoed"


async def test_listen_streams_stay_in_their_namespace(served: Served) -> None:
    async with http_client(served.url, BOB) as bob, http_client(served.url, ALICE, mode="auto") as alice:
        assert alice.protocol_version == "2026-07-28"
        await call(alice, "remember", content="爱丽丝的第一条记忆：喜欢乌龙茶")  # her own memory of the same id
        first = await call(bob, "remember", content="Bob's first memory, about sailing")
        watched = [f"memory://memories/{first['id']}", "memory://stats"]
        async with alice.listen(resources_list_changed=True, resource_subscriptions=watched) as stream:
            # Had Bob's forget reached Alice, her first batch would name the memory it deleted.
            await call(bob, "forget", ids=[first["id"]])
            await call(alice, "remember", content="爱丽丝周末去爬山")
            seen = []
            with anyio.fail_after(10):
                async for event in stream:
                    seen.append(event)
                    if getattr(event, "uri", None) == "memory://stats":
                        break
    assert [getattr(e, "uri", "list changed") for e in seen] == ["list changed", "memory://stats"]
