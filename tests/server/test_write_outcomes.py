"""Honest write outcomes on PostgreSQL, through the real SDK client: the connection to the database
is cut by a proxy (tests/commit_cutter.py) exactly at a write's COMMIT, either after the server
committed it or before the COMMIT reached the server. The answer must say what happened: a write
that was stored is never answered "rolled back"; with a request_id the server finds out and answers
as the write did; without one it answers "outcome unknown"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call
from ..commit_cutter import CommitCutter

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture
async def cutter(pg_db: str) -> AsyncIterator[CommitCutter]:
    async with CommitCutter(pg_db).running() as proxy:
        yield proxy


@pytest.fixture
def direct(pg_db: str) -> Config:
    """The test's database, reached without the proxy (what the test reads under the store)."""
    return Config.from_env({}, db_path=pg_db)


@pytest.fixture
async def client(cutter: CommitCutter, segmenter: Segmenter, cache_dir: Path) -> AsyncIterator[Client]:
    environ = {"MCP_MEMORY_SEMANTIC": "off"}  # no background writer to take the cut COMMIT
    config = Config.from_env(environ, db_path=cutter.url(), cache_dir=cache_dir, maintenance_minutes=0)
    async with Client(build_server(config, segmenter)) as connected:
        await call(connected, "remember", content="warm-up: the store is open and maintenance is done")
        await anyio.sleep(0.5)  # the maintenance run at start, in the background, has committed
        yield connected


def _stored(config: Config, content: str) -> int:
    return int(rawdb.value(config, "SELECT count(*) FROM memories WHERE content = ?", (content,)))


def _error(result: object) -> str:
    text: str = result.content[0].text  # type: ignore[attr-defined]
    return text


async def test_a_committed_write_whose_answer_was_lost_is_answered_as_stored(
    client: Client, cutter: CommitCutter, direct: Config
) -> None:
    content = "用户的生日是三月十二日 (birthday on 12 March)"
    cutter.arm("after")
    answer = await call(client, "remember", content=content, request_id="lost-after-1")
    assert cutter.cuts == 1  # the connection was cut after the server committed
    assert answer["action"] == "created"
    assert _stored(direct, content) == 1
    # The client's retry (it could not know) gets the same answer and stores nothing more.
    assert await call(client, "remember", content=content, request_id="lost-after-1") == answer
    assert _stored(direct, content) == 1
    assert rawdb.value(direct, "SELECT count(*) FROM write_requests") == 1


async def test_without_a_request_id_a_lost_commit_is_outcome_unknown_never_rolled_back(
    client: Client, cutter: CommitCutter, direct: Config
) -> None:
    content = "The user's passport expires in 2031"
    cutter.arm("after")
    result = await client.call_tool("remember", {"content": content})
    assert cutter.cuts == 1
    assert result.is_error
    text = _error(result)
    assert "outcome unknown" in text and "may or may not have been stored" in text, text
    assert "rolled back" not in text
    assert _stored(direct, content) == 1  # it was stored: "rolled back" would have been a lie


async def test_a_commit_cut_before_it_reached_the_server_is_rolled_back_and_the_retry_stores_once(
    client: Client, cutter: CommitCutter, direct: Config
) -> None:
    ops = [{"key": "user.tea", "action": "add", "category": "preference", "payload": "喜欢喝普洱茶",
            "importance": 6, "source": "user"}]  # fmt: skip
    cutter.arm("before")
    result = await client.call_tool("apply_changes", {"ops": ops, "request_id": "lost-before-1"})
    assert cutter.cuts == 1, result
    assert result.is_error
    text = _error(result)
    assert "rolled back" in text and "a retry is safe" in text, text
    assert _stored(direct, "喜欢喝普洱茶") == 0  # and indeed nothing was stored
    answer = await call(client, "apply_changes", ops=ops, request_id="lost-before-1")
    assert answer["applied"][0]["action"] == "created"
    assert _stored(direct, "喜欢喝普洱茶") == 1
    assert await call(client, "apply_changes", ops=ops, request_id="lost-before-1") == answer
    assert _stored(direct, "喜欢喝普洱茶") == 1


@pytest.mark.parametrize("cut", ["after", "before"])
async def test_every_write_tool_settles_a_lost_commit(
    client: Client, cutter: CommitCutter, direct: Config, cut: str
) -> None:
    """update_session counts a turn once, forget and import_memories answer as they did, whether
    the commit was cut after or before it took effect: the client retries until it has an answer."""
    kept = await call(client, "remember", content="The user's dog is called Pepper")
    calls = [
        ("update_session", {"session_id": "s-1", "topic": "周末计划 weekend plans", "request_id": f"u-{cut}"}),
        ("forget", {"ids": [kept["id"]], "request_id": f"f-{cut}"}),
        ("import_memories", {"data": "# Memory\n\n- 用户在学日语\n- The user runs 5 km on Saturdays\n",
                             "format": "markdown", "request_id": f"i-{cut}"}),
    ]  # fmt: skip
    for tool, args in calls:
        cutter.arm(cut)  # type: ignore[arg-type]
        cuts = cutter.cuts
        result = await client.call_tool(tool, args)
        assert cutter.cuts == cuts + 1, (tool, result)
        while result.is_error:  # what a client does: the same call again, until it is answered
            assert "rolled back" in _error(result) and cut == "before", _error(result)
            result = await client.call_tool(tool, args)
        first = result.structured_content
        assert first is not None
        assert await call(client, tool, **args) == first  # and any later retry answers the same
    assert rawdb.value(direct, "SELECT turn_count FROM sessions WHERE session_id = 's-1'") == 1
    assert _stored(direct, "The user's dog is called Pepper") == 0
    assert _stored(direct, "用户在学日语") == 1 and _stored(direct, "The user runs 5 km on Saturdays") == 1
