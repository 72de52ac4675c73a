"""Change notifications: what each commit reports to the store's listeners, and what MCP clients
of both protocol eras hear of it (handshake-era subscriptions, 2026-07-28 listen streams)."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import Subscription
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types import ResourceListChangedNotification, ResourceUpdatedNotification
from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService, Sessions
from mcp_memory_server.server import build_server
from mcp_memory_server.server.notify import MARKDOWN, PROFILE, STATS
from mcp_memory_server.store import archive
from mcp_memory_server.store.changeset import Change, decode, encode
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio

ROOT = str(Path(__file__).resolve().parents[2])  # this checkout, whichever the venv installed
WAIT = 5  # seconds for a notification to arrive; they come at once, this only bounds a failure


def memory(n: int) -> str:
    return f"memory://memories/mem_{n}"


# ---- the store's change hook ------------------------------------------------------------------


@pytest.fixture
def changes(service: MemoryService) -> list[Change]:
    seen: list[Change] = []
    service.store.on_change.append(seen.append)
    return seen


async def test_each_commit_reports_what_it_changed(service: MemoryService, changes: list[Change]) -> None:
    first = await service.remember(content="I live in Hangzhou", category="fact", key="user.city", session_id="s1")
    assert first.id == "mem_1"
    assert changes.pop() == Change(frozenset({1}), frozenset({"fact"}), frozenset({"s1"}), listing=True, removed=False)

    # The same key with another category: both categories' views change; no memory appeared.
    await service.remember(content="I live in Shanghai", category="identity", key="user.city", session_id="s2")
    assert changes.pop() == Change(
        frozenset({1}), frozenset({"fact", "identity"}), frozenset({"s1", "s2"}), listing=False, removed=False
    )

    await service.remember(content="I live in Shanghai", category="identity", key="user.city")
    assert changes == [], "an unchanged memory is no change"

    await Sessions(service).update("s3", topic="travel")
    assert changes.pop() == Change(frozenset(), frozenset(), frozenset({"s3"}), listing=False, removed=False)

    await service.forget(["mem_1"])
    assert changes.pop() == Change(
        frozenset({1}), frozenset({"identity"}), frozenset({"s2"}), listing=True, removed=True
    )
    assert changes == []


async def test_archive_restore_and_session_expiry_are_reported(service: MemoryService, changes: list[Change]) -> None:
    await service.remember(content="Prefers tea to coffee", category="preference", session_id="s1")
    changes.clear()
    async with service.store.transaction() as tx:
        await archive.archive(tx, {1: "unused"}, "2030-01-01T00:00:00+00:00")
    assert changes.pop() == Change(
        frozenset({1}), frozenset({"preference"}), frozenset({"s1"}), listing=True, removed=True
    )
    async with service.store.transaction() as tx:
        await archive.restore(tx, [1], "2030-01-02T00:00:00+00:00")
    assert changes.pop() == Change(
        frozenset({1}), frozenset({"preference"}), frozenset({"s1"}), listing=True, removed=False
    )
    async with service.store.transaction() as tx:  # session expiry
        await archive.end_session(tx, "s1")
    assert changes.pop() == Change(frozenset(), frozenset(), frozenset({"s1"}), listing=False, removed=False)


async def test_a_rolled_back_write_reports_nothing(service: MemoryService, changes: list[Change]) -> None:
    with pytest.raises(InvalidInput):
        async with service.store.transaction() as tx:
            await tx.touch_session("s1", datetime.now(UTC))
            raise InvalidInput("changed my mind")
    assert changes == []


async def test_a_failing_listener_fails_no_write(
    service: MemoryService, changes: list[Change], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(_: Change) -> None:
        raise RuntimeError("listener bug")

    service.store.on_change.insert(0, broken)
    result = await service.remember(content="Writes survive a broken listener")
    assert result.action == "created"
    assert (await service.get(result.id)).content == "Writes survive a broken listener"
    assert len(changes) == 1, "the listeners after the broken one are still told"
    assert "a change listener failed" in caplog.text


# ---- MCP clients ------------------------------------------------------------------------------


class Inbox:
    """What a handshake-era client's message handler received."""

    def __init__(self) -> None:
        self.messages: list[IncomingMessage] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        self.messages.append(message)
        self._arrived.set()
        self._arrived = anyio.Event()

    def updated(self) -> list[str]:
        return [m.params.uri for m in self.messages if isinstance(m, ResourceUpdatedNotification)]

    def list_changes(self) -> int:
        return sum(isinstance(m, ResourceListChangedNotification) for m in self.messages)

    async def settle(self) -> None:
        """Wait for the statistics update, the last notification of a write's batch (URIs go
        out sorted, `memory://stats` last), then forget it so the next write waits again."""
        with anyio.fail_after(WAIT):
            while STATS not in self.updated():
                await self._arrived.wait()
        self.messages = [m for m in self.messages if not _is_stats(m)]

    def take(self) -> tuple[int, list[str]]:
        taken = self.list_changes(), self.updated()
        self.messages = []
        return taken


def _is_stats(message: IncomingMessage) -> bool:
    return isinstance(message, ResourceUpdatedNotification) and message.params.uri == STATS


async def subscribe(client: Client, *uris: str, unsubscribe: bool = False) -> None:
    # resources/subscribe is the handshake era's way; the SDK marks it deprecated for the new era.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        for uri in uris:
            await (client.unsubscribe_resource(uri) if unsubscribe else client.subscribe_resource(uri))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_subscriptions_and_list_changes_are_advertised(config: Config, segmenter: Segmenter, mode: str) -> None:
    async with Client(build_server(config, segmenter), mode=mode) as client:
        resources = client.server_capabilities.resources
        assert resources is not None
        assert resources.subscribe is True
        assert resources.list_changed is True


async def test_legacy_clients_hear_of_what_they_subscribed_to(config: Config, segmenter: Segmenter) -> None:
    server = build_server(config, segmenter)
    inbox, other = Inbox(), Inbox()
    async with (
        Client(server, mode="legacy", message_handler=inbox) as client,
        Client(server, mode="legacy", message_handler=other) as bystander,
    ):
        await subscribe(client, memory(1), memory(2), STATS)
        await subscribe(bystander, STATS)  # only as the end-of-batch marker

        created = await call(client, "remember", content="Prefers dark roast coffee", category="preference")
        assert created["id"] == "mem_1"
        await inbox.settle()
        assert inbox.take() == (1, [memory(1)]), "not the category, MEMORY.md or profile: not subscribed"
        await other.settle()
        assert other.take() == (1, []), "another connection's subscription is not this one's"

        await call(client, "remember", content="Works on a Rust compiler", category="project_state")
        await inbox.settle()
        assert inbox.take() == (1, [memory(2)])

        ops = [{"key": "mem_1", "action": "add", "category": "preference", "payload": "Prefers light roast"}]
        ops[0] |= {"importance": 7, "source": "user"}
        applied = await call(client, "apply_changes", ops=ops)
        assert applied["applied"][0]["action"] == "updated"
        await inbox.settle()
        assert inbox.take() == (0, [memory(1)]), "an update changes no listing"

        assert (await call(client, "forget", ids=["mem_2"]))["deleted"] == ["mem_2"]
        await inbox.settle()
        assert inbox.take() == (1, [memory(2)])

        await subscribe(client, memory(1), unsubscribe=True)
        assert (await call(client, "forget", ids=["mem_1"]))["deleted"] == ["mem_1"]
        await inbox.settle()
        assert inbox.take() == (1, []), "unsubscribed: no more updates for mem_1"


async def events_until_stats(sub: Subscription) -> set[ServerEvent]:
    """The events of one write, up to its statistics update (the last one the server sends)."""
    seen: set[ServerEvent] = set()
    with anyio.fail_after(WAIT):
        async for event in sub:
            seen.add(event)
            if event == ResourceUpdated(uri=STATS):
                return seen
    raise AssertionError(f"the stream ended after {seen}")


@pytest.fixture
async def modern(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        yield client


async def test_a_listen_stream_gets_what_its_filter_asks_for(modern: Client) -> None:
    watched = [memory(1), "memory://categories/preference", "memory://sessions/s1", PROFILE, MARKDOWN, STATS]
    async with modern.listen(resources_list_changed=True, resource_subscriptions=watched) as sub:
        await call(modern, "remember", content="Prefers dark roast coffee", category="preference", session_id="s1")
        assert await events_until_stats(sub) == {ResourcesListChanged(), *(ResourceUpdated(uri=u) for u in watched)}

        # mem_2 is not in the filter, and a fact is not about the user: no profile update.
        await call(modern, "remember", content="The office moved to building 5", category="fact")
        assert await events_until_stats(sub) == {ResourcesListChanged(), ResourceUpdated(uri=MARKDOWN), *_stats()}

        await call(modern, "update_session", session_id="s1", topic="coffee")
        assert await events_until_stats(sub) == {ResourceUpdated(uri="memory://sessions/s1"), *_stats()}

        # Any deletion updates the profile, which may cite what went away.
        await call(modern, "forget", ids=["mem_2"])
        expected = {ResourcesListChanged(), ResourceUpdated(uri=MARKDOWN), ResourceUpdated(uri=PROFILE), *_stats()}
        assert await events_until_stats(sub) == expected


def _stats() -> set[ServerEvent]:
    return {ResourceUpdated(uri=STATS)}


async def test_a_stream_without_list_changes_gets_only_its_uris(modern: Client) -> None:
    async with modern.listen(resource_subscriptions=[STATS]) as sub:
        await call(modern, "remember", content="Likes hiking in the mountains", category="preference")
        assert await events_until_stats(sub) == _stats()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_writes_succeed_when_nobody_listens(config: Config, segmenter: Segmenter, mode: str) -> None:
    async with Client(build_server(config, segmenter), mode=mode) as client:
        ids = [(await call(client, "remember", content=f"Fact number {n} about the build"))["id"] for n in range(20)]
        assert len(set(ids)) == 20
        if mode == "auto":  # a stream that came and went leaves nothing behind that a write waits for
            async with client.listen(resources_list_changed=True):
                pass
        assert (await call(client, "forget", ids=ids))["deleted"] == ids
        assert (await call(client, "list"))["total"] == 0


async def test_a_client_that_stops_reading_delays_no_write_and_no_other_client(
    config: Config, segmenter: Segmenter
) -> None:
    server = build_server(config, segmenter)
    lowlevel = server._lowlevel_server
    inbox = Inbox()
    async with create_client_server_memory_streams() as streams, anyio.create_task_group() as tasks:
        (from_server, to_server), (server_reads, server_writes) = streams
        tasks.start_soon(lambda: lowlevel.run(server_reads, server_writes, lowlevel.create_initialization_options()))
        # A handshake-era client that subscribes to the statistics and then never reads again.
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "silent", "version": "0"}}
        for message in (
            JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params=init),
            JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"),
            JSONRPCRequest(jsonrpc="2.0", id=2, method="resources/subscribe", params={"uri": STATS}),
        ):
            await to_server.send(SessionMessage(message))
        with anyio.fail_after(WAIT):
            async for received in from_server:
                if isinstance(received, SessionMessage) and getattr(received.message, "id", None) == 2:
                    break

        async with (
            Client(server, mode="legacy", message_handler=inbox) as watcher,
            Client(server, mode="legacy") as writer,
        ):
            await subscribe(watcher, STATS)
            with anyio.fail_after(3):  # the notifier gives a client 5 s before it drops its notifications
                for n in range(5):
                    await call(writer, "remember", content=f"Note {n} while a client is not reading")
                    await inbox.settle()
        await to_server.aclose()  # the silent client leaves
        await from_server.aclose()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_stdio(tmp_path: Path, cache_dir: Path, mode: str) -> None:
    """The same through a server subprocess (this checkout's code) on stdio, in either era."""
    env = {**os.environ, "MCP_MEMORY_DB": str(tmp_path / "stdio.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_memory_server"], env=env)
    inbox = Inbox()
    async with Client(params, mode=mode, message_handler=inbox) as client:
        if mode == "legacy":
            await subscribe(client, memory(1), STATS)
            await call(client, "remember", content="Prefers tabs over spaces", category="coding_style")
            await inbox.settle()
            assert inbox.take() == (1, [memory(1)])
        else:
            async with client.listen(resources_list_changed=True, resource_subscriptions=[memory(1), STATS]) as sub:
                await call(client, "remember", content="Prefers tabs over spaces", category="coding_style")
                expected = {ResourcesListChanged(), ResourceUpdated(uri=memory(1)), *_stats()}
                assert await events_until_stats(sub) == expected


async def test_on_postgresql_a_change_made_by_another_process_is_announced(
    pg_db: str, cache_dir: Path, segmenter: Segmenter
) -> None:
    """Two servers on one PostgreSQL database (two replicas): a client subscribed on one hears what
    a client of the other wrote, carried by NOTIFY at commit; a write that rolls back says nothing."""
    config = Config.from_env({}, db_path=pg_db, cache_dir=cache_dir)
    inbox = Inbox()
    async with (
        Client(build_server(config, segmenter), mode="legacy") as writer,
        Client(build_server(config, segmenter), mode="legacy", message_handler=inbox) as watcher,
    ):
        await subscribe(watcher, memory(1), STATS)
        await call(
            writer, "remember", content="我每天早上喝一杯拿铁咖啡 / a latte every morning", category="preference"
        )
        await inbox.settle()
        assert inbox.take() == (1, [memory(1)])
        refused = await writer.call_tool("forget", {"ids": []})
        assert refused.is_error
        await call(writer, "remember", content="The office moved to building 5", category="fact")
        await inbox.settle()
        assert inbox.take() == (1, [])  # mem_2: listed, but not subscribed to


def test_a_large_change_is_split_into_payloads_postgresql_accepts() -> None:
    change = Change(frozenset(range(1, 5001)), frozenset({"fact", "偏好"}), frozenset({"会话-1"}), True, False)
    payloads = encode(change, "alice", "origin-1")
    assert len(payloads) > 1 and all(len(p.encode()) < 8000 for p in payloads)
    decoded = [decode(p) for p in payloads]
    assert all(d is not None and d[:2] == ("origin-1", "alice") for d in decoded)
    assert set().union(*(d[2].numbers for d in decoded if d is not None)) == change.numbers
    assert decode("not ours") is None
