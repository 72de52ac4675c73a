"""Two stateless HTTP replicas of the installed command on one database, driven by the SDK client
in both protocol eras: what one replica writes the other reads at once (Chinese and English),
sessions and working memory live in the database, a client whose requests alternate between the
replicas (a round-robin balancer in its HTTP client) works, tokens and namespaces hold on both,
and what needs a session is refused plainly.

`replica_db` is the database both replicas are given (`--db`): a SQLite file today; a PostgreSQL
URL is one more entry in its params."""

from __future__ import annotations

import http.client
import json
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import CreateMessageRequestParams, CreateMessageResult, LoggingMessageNotificationParams, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput

from ..http_server import Served, http_client, http_server

# One worker runs this module (pytest-xdist): each replica pair starts once.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("replicas")]

ERAS = ["legacy", "auto"]  # the initialize handshake (2025-11-25), and 2026-07-28 (no handshake)
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
STATE_KEY = "replicas-share-this-key-0123456789abcdef"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def replica_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """What both replicas get as --db: a fresh database for this module."""
    if request.param == "sqlite":  # several processes on one SQLite file: WAL and busy_timeout
        yield str(tmp_path_factory.mktemp("replica-db") / "memory.db")
    else:  # "postgresql": a database of its own on the session's cluster
        with request.getfixturevalue("pg_server").database() as url:
            yield url


def replicas(
    base: Path, cache_dir: Path, db: str, *, stateless: bool = True, env: dict[str, str] | None = None
) -> ExitStack:
    """Two servers on `db`: the first told by --stateless, the second by MCP_MEMORY_STATELESS (both
    spellings, one each); `stack.served` lists them."""
    stack = ExitStack()
    served: list[Served] = []
    for name, flag, variable in (("a", ["--stateless"], {}), ("b", [], {"MCP_MEMORY_STATELESS": "1"})):
        directory = base / name
        directory.mkdir(parents=True)
        args = ["--db", db, *(flag if stateless else [])]
        environ = {**(env or {}), **(variable if stateless else {})}
        served.append(stack.enter_context(http_server(directory, cache_dir, env=environ, args=args)))
    stack.served = served  # type: ignore[attr-defined]
    return stack


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, replica_db: str) -> Iterator[tuple[Served, Served]]:
    env = {"MCP_MEMORY_STATE_KEYS": STATE_KEY}  # the same on both: a call's rounds may reach either
    with replicas(tmp_path_factory.mktemp("replicas"), cache_dir, replica_db, env=env) as stack:
        a, b = stack.served  # type: ignore[attr-defined]
        yield a, b


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer inside the client: each HTTP request goes to the next replica's port (the
    Host header stays the one the client named, as behind a real balancer)."""

    def __init__(self, ports: Sequence[int]) -> None:
        self._ports = list(ports)
        self._turn = 0
        self._inner = httpx2.AsyncHTTPTransport()
        self.served: Counter[int] = Counter()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self._ports[self._turn % len(self._ports)]
        self._turn += 1
        self.served[port] += 1
        request.url = request.url.copy_with(port=port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def balanced(url: str, balancer: RoundRobin, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(transport=balancer, headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    data: dict[str, Any] | None = result.structured_content
    assert data is not None
    return data


async def recalled(client: Client, query: str, **args: Any) -> list[str]:
    return [hit["id"] for hit in (await call(client, "recall", query=query, **args))["hits"]]


@pytest.mark.parametrize("era", ERAS)
async def test_what_one_replica_writes_the_other_reads_at_once(pair: tuple[Served, Served], era: str) -> None:
    a, b = pair
    async with http_client(a.url, mode=era) as on_a, http_client(b.url, mode=era) as on_b:
        zh = await call(on_a, "remember", content=f"用户在杭州工作，每天下午喝一杯龙井茶（{era}）", category="fact")
        en_text = f"The user deploys with Kubernetes on Fridays ({era})"
        en = await call(on_a, "remember", content=en_text, category="fact")
        mixed = await call(on_a, "remember", content=f"用户的博客用 Hugo 搭建 ({era})", category="project_state")

        assert zh["id"] in await recalled(on_b, "龙井茶")
        assert en["id"] in await recalled(on_b, "kubernetes fridays")
        assert mixed["id"] in await recalled(on_b, "hugo 博客")

        forgotten = await call(on_b, "forget", ids=[zh["id"], en["id"]])
        assert sorted(forgotten["deleted"]) == sorted([zh["id"], en["id"]])
        assert zh["id"] not in await recalled(on_a, "龙井茶")
        assert en["id"] not in await recalled(on_a, "kubernetes fridays")
        assert mixed["id"] in await recalled(on_a, "hugo 博客"), "only what was forgotten is gone"
        listed = await call(on_a, "list", category="project_state")
        assert mixed["id"] in [m["id"] for m in listed["items"]]


@pytest.mark.parametrize("era", ERAS)
async def test_sessions_and_working_memory_live_in_the_database(pair: tuple[Served, Served], era: str) -> None:
    a, b = pair
    session = f"osaka-move-{era}"
    async with http_client(a.url, mode=era) as on_a, http_client(b.url, mode=era) as on_b:
        first = await call(
            on_a,
            "update_session",
            session_id=session,
            topic="搬家到大阪",
            emotion={"primary": "anxious", "confidence": 0.9},
            variables={"city": "大阪"},
        )
        assert first["session"]["turn_count"] == 1
        note = await call(
            on_a,
            "remember",
            content=f"用户下周三去大阪看房 (viewing flats next Wednesday, {era})",
            category="event",
            tier="working",
            session_id=session,
        )
        assert note["action"] == "created"

        second = await call(on_b, "update_session", session_id=session, variables={"budget": "3000万"})
        state = second["session"]
        assert state["turn_count"] == 2, "B counts on from A's turn"
        assert state["current_topic"] == "搬家到大阪" and state["last_emotion"] == "anxious"
        assert state["context_variables"] == {"city": "大阪", "budget": "3000万"}

        assert note["id"] in await recalled(on_b, "大阪看房", session_id=session)
        view = await on_b.read_resource(f"memory://sessions/{session}")
        text = "".join(getattr(c, "text", "") for c in view.contents)
        assert "用户下周三去大阪看房" in text and "3000万" in text
        assert [m["tier"] for m in json.loads(text)["memories"] if m["id"] == note["id"]] == ["working"]


@pytest.mark.parametrize("era", ERAS)
async def test_one_client_whose_requests_alternate_between_replicas(pair: tuple[Served, Served], era: str) -> None:
    a, b = pair
    balancer = RoundRobin([a.port, b.port])
    session = f"round-robin-{era}"
    async with balanced(a.url, balancer, mode=era) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"remember", "recall", "forget", "update_session", "extract"} <= names
        stored = await call(client, "remember", content=f"我最喜欢的编辑器是 Neovim ({era})", category="preference")
        for turn in range(1, 5):
            result = await call(client, "update_session", session_id=session, variables={"turn": turn})
            assert result["session"]["turn_count"] == turn
        assert stored["id"] in await recalled(client, "neovim 编辑器")
        assert stored["id"] in await recalled(client, "最喜欢的编辑器")
        await call(client, "forget", ids=[stored["id"]])
        assert stored["id"] not in await recalled(client, "neovim")
    assert balancer.served[a.port] >= 4 and balancer.served[b.port] >= 4, balancer.served


async def test_without_stateless_a_handshake_era_client_needs_its_own_replica(tmp_path: Path, cache_dir: Path) -> None:
    """The same balanced client against two replicas in the default (session) mode: the session
    one replica opened is unknown to the other. This is what --stateless is for."""
    with replicas(tmp_path, cache_dir, str(tmp_path / "sessions.db"), stateless=False) as stack:
        a, b = stack.served  # type: ignore[attr-defined]
        balancer = RoundRobin([a.port, b.port])
        refused: list[str] = []
        try:
            async with balanced(a.url, balancer, mode="legacy") as client:
                for _ in range(4):
                    await client.list_tools()
        except* MCPError as group:  # raised alone, or with the client's other tasks' failures
            refused = [str(e) for e in leaves(group)]
        assert "Session not found" in refused


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def test_the_deep_channel_resumes_on_another_replica(pair: tuple[Served, Served]) -> None:
    """2026-07-28 sampling takes two rounds of one `extract` call; with a balancer they reach
    different replicas, and the second finds the run the first began in the database."""
    a, b = pair
    answer = {"memories": [{"content": "用户打算在梅田附近租房", "category": "project_state", "importance": 0.7}]}

    async def sample(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        text = json.dumps(answer, ensure_ascii=False)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="test")

    balancer = RoundRobin([a.port, b.port])
    async with balanced(a.url, balancer, mode="auto", sampling_callback=sample) as client:
        result = await call(
            client,
            "extract",
            user_message="我决定搬到大阪，想在梅田附近租一个1LDK。",
            assistant_message="梅田周边1LDK的月租大约12-15万日元。",
            session_id="umeda",
        )
    assert result["deep"] == "extracted", result
    assert [i["decision"] for i in result["items"] if i["channel"] == "deep"] == ["working"]
    assert result["fallback_note"] is None
    async with http_client(b.url) as on_b:
        assert await recalled(on_b, "梅田 租房", session_id="umeda")
    assert balancer.served[a.port] and balancer.served[b.port], balancer.served


async def test_a_handshake_era_client_is_told_what_needs_a_session(pair: tuple[Served, Served]) -> None:
    a, _ = pair
    heard: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    async with http_client(a.url, mode="legacy", logging_callback=on_log) as client:
        resources = client.server_capabilities.resources
        assert resources is not None and not resources.subscribe and not resources.list_changed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # the SDK's, for the handshake era's methods
            with pytest.raises(MCPError, match="stateless"):
                await client.subscribe_resource("memory://stats")
            with pytest.raises(MCPError, match="stateless"):
                await client.set_logging_level("debug")
        at_start = len(heard)
        for _ in range(3):
            await call(client, "recall", query="龙井茶")
        assert len(heard) == at_start, "the start-up backlog comes once, with initialize, not with every request"

    connection = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
    connection.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    response = connection.getresponse()
    assert (response.status, response.getheader("Allow")) == (405, "POST"), "no listen stream to hold open"
    connection.close()


async def test_tokens_and_namespaces_hold_on_every_replica(tmp_path: Path, cache_dir: Path, replica_db: str) -> None:
    env = {"MCP_MEMORY_TOKENS": f"alice:{ALICE},bob:{BOB}"}
    with replicas(tmp_path, cache_dir, replica_db, env=env) as stack:
        a, b = stack.served  # type: ignore[attr-defined]
        async with http_client(a.url, ALICE) as alice_a, http_client(b.url, ALICE) as alice_b:
            secret = await call(alice_a, "remember", content="Alice 的护照号码放在书房抽屉里", category="fact")
            assert secret["id"] in await recalled(alice_b, "护照 抽屉")
        for url in (a.url, b.url):
            async with http_client(url, BOB) as bob:
                assert await recalled(bob, "护照 抽屉") == []
                gone = await call(bob, "forget", ids=[secret["id"]])
                assert gone["deleted"] == [], "an id of another namespace is not found"
        for port in (a.port, b.port):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            connection.request("POST", "/mcp", body=body, headers=headers)
            assert connection.getresponse().status == 401
            connection.close()
        async with http_client(b.url, ALICE) as alice:
            assert secret["id"] in await recalled(alice, "护照")


def test_the_settings_of_stateless_mode_are_checked() -> None:
    assert Config.from_env({}).http.stateless_http is False
    assert Config.from_env({"MCP_MEMORY_STATELESS": "on"}).http.stateless_http is True
    assert Config.from_env({"MCP_MEMORY_STATELESS": "0"}).http.stateless_http is False
    with pytest.raises(InvalidInput, match="MCP_MEMORY_STATELESS"):
        Config.from_env({"MCP_MEMORY_STATELESS": "sometimes"})
    keys = Config.from_env({"MCP_MEMORY_STATE_KEYS": f"{STATE_KEY}, {ALICE}{BOB}"}).http.state_keys
    assert keys == (STATE_KEY, ALICE + BOB)
    with pytest.raises(InvalidInput, match="at least 32 characters") as refused:
        Config.from_env({"MCP_MEMORY_STATE_KEYS": f"{STATE_KEY},short-key-1234"})
    assert "short-key" not in str(refused.value), "a key is never repeated in a message"
    assert STATE_KEY not in repr(Config.from_env({"MCP_MEMORY_STATE_KEYS": STATE_KEY}))
