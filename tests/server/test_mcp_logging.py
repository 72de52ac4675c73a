"""MCP log messages (notifications/message): what a client hears of start-up, migrations, cleanup
and secrets withheld, how `logging/setLevel` filters it, the 2026-07-28 per-request opt-in, and
that stdio's stdout carries nothing but JSON-RPC while the server logs at DEBUG."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import LOG_LEVEL_META_KEY, LoggingMessageNotificationParams

from mcp_memory_server import __version__
from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.store.sqlite.schema import MIGRATIONS

from ..http_server import command

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

DATA = Path(__file__).parent.parent / "data"
SECRET = "我的邮箱密码是 Hunter2!xyz，用在公司的内网系统和报销平台上"


class Heard:
    """The log messages a client received, in order."""

    def __init__(self) -> None:
        self.messages: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.messages.append(params)

    def matching(self, text: str) -> list[LoggingMessageNotificationParams]:
        return [m for m in self.messages if text in str(m.data)]

    async def wait_for(
        self, test: Callable[[LoggingMessageNotificationParams], bool]
    ) -> LoggingMessageNotificationParams:
        with anyio.fail_after(30):  # a bound on waiting, not a timing assertion
            while True:
                for message in self.messages:
                    if test(message):
                        return message
                await anyio.sleep(0.02)


def _env(db: Path, cache_dir: Path) -> dict[str, str]:
    return {**os.environ, "MCP_MEMORY_DB": str(db), "MCP_MEMORY_CACHE_DIR": str(cache_dir)}


async def test_a_stdio_client_hears_how_the_server_started(tmp_path: Path, cache_dir: Path, segmenter: Any) -> None:
    db = tmp_path / "started.db"
    async with Store(Config.from_env({}, db_path=db, cache_dir=cache_dir), segmenter) as store:
        for content in ("我每天早上喝一杯拿铁咖啡", "I type Chinese with 雾凇拼音"):
            await MemoryService(store).remember(content=content)
    heard = Heard()
    params = StdioServerParameters(command=command(), args=["--log-level", "INFO"], env=_env(db, cache_dir))
    async with Client(params, mode="legacy", logging_callback=heard):
        started = await heard.wait_for(lambda m: "started" in str(m.data))
    assert started.level == "info" and started.logger == "mcp_memory_server.runtime.namespaces"
    assert started.data == (
        f"jiyi {__version__} started: namespace '' of {db}, 2 memories (0 archived), schema version {MIGRATIONS[-1][0]}"
    )


async def test_opening_a_first_release_database_tells_the_client_of_each_migration(
    tmp_path: Path, config: Config, segmenter: Any
) -> None:
    shutil.copy(DATA / "schema_v1.db", config.db_path)
    heard = Heard()
    async with Client(build_server(config, segmenter), mode="legacy", logging_callback=heard) as client:
        await heard.wait_for(lambda m: "started" in str(m.data))
        assert (await client.call_tool("recall", {"query": "咖啡"})).is_error is False
    migrated = [m.data for m in heard.messages if m.logger == "mcp_memory_server.store.store"]
    later = [f"applied database migration {v}: {name}" for v, name, _ in MIGRATIONS[1:]]
    assert [m for m in migrated if str(m).startswith("applied")] == later
    assert any(str(m).startswith("rebuilt the full-text index for ") for m in migrated)
    assert all(m.level == "info" for m in heard.messages if m.logger == "mcp_memory_server.store.store")


async def test_cleanup_tells_its_caller_what_it_archived(config: Config, segmenter: Any) -> None:
    # Fresh memories count as unused at once; start-up maintenance runs on an empty database.
    # (Zero days is no valid setting: copied unchecked, as only a test may.)
    unchecked = {"cleanup_min_memories": 0, "cleanup_unused_days": 0, "keep_recent_days": 0}
    config = config.model_copy(
        update={"log_level": "DEBUG", "lifecycle": config.lifecycle.model_copy(update=unchecked)}
    )
    heard = Heard()
    async with Client(build_server(config, segmenter), mode="legacy", logging_callback=heard) as client:
        # Start-up maintenance has been told (DEBUG: nothing to do), so it cannot race the call.
        await heard.wait_for(lambda m: m.logger == "mcp_memory_server.memory.lifecycle")
        ids = []
        for content in ("旧的临时笔记：周三下午三点开会", "old scratch note: buy printer paper"):
            stored = await client.call_tool("remember", {"content": content, "importance": 0.3})
            ids.append(stored.structured_content["id"])  # type: ignore[index]
        result = (await client.call_tool("cleanup", {"dry_run": False})).structured_content
        assert result is not None and result["archived"] == 2
        told = await heard.wait_for(lambda m: "Archived" in str(m.data))
    assert told.level == "info" and told.logger == "mcp_memory_server.memory.lifecycle"
    assert told.data == f"cleanup: {result['detail']} ({', '.join(sorted(ids))})"


async def test_set_level_chooses_what_a_client_hears(config: Config, segmenter: Any) -> None:
    heard = Heard()
    async with Client(build_server(config, segmenter), mode="legacy", logging_callback=heard) as client:
        await heard.wait_for(lambda m: "started" in str(m.data))  # INFO, the server's level: heard
        await client.set_logging_level("error")
        assert not (await client.call_tool("remember", {"content": SECRET})).is_error  # INFO: not sent
        await client.set_logging_level("info")
        assert not (await client.call_tool("remember", {"content": SECRET + "。还有 VPN"})).is_error
        await heard.wait_for(lambda m: "secrets withheld" in str(m.data))
        # Below the server's own level: the project's loggers now produce DEBUG for this client.
        await client.set_logging_level("debug")
        await client.call_tool("cleanup", {})
        await heard.wait_for(lambda m: m.level == "debug" and "cleanup" in str(m.data))
        await client.set_logging_level("warning")
        await client.call_tool("cleanup", {})  # DEBUG: not sent
        await client.set_logging_level("debug")
        await client.call_tool("cleanup", {})
        await heard.wait_for(lambda m: len(heard.matching("cleanup: ")) == 2)
    assert len(heard.matching("secrets withheld")) == 1  # the call made at "error" told nothing
    assert all(
        m.level == "debug" and m.logger == "mcp_memory_server.memory.lifecycle" for m in heard.matching("cleanup: ")
    )
    assert "Hunter2" not in json.dumps([m.data for m in heard.messages], ensure_ascii=False)


async def test_a_2026_client_hears_what_its_requests_opt_in_to(config: Config, segmenter: Any) -> None:
    heard = Heard()
    async with Client(build_server(config, segmenter), log_level="error", logging_callback=heard) as client:
        assert not (await client.call_tool("remember", {"content": SECRET})).is_error  # opted in at error only
        opted = await client.call_tool(
            "remember", {"content": SECRET + "。还有 VPN"}, meta={LOG_LEVEL_META_KEY: "info"}
        )
        assert not opted.is_error
        told = await heard.wait_for(lambda m: "secrets withheld" in str(m.data))
    assert told.level == "info" and told.logger == "mcp_memory_server.memory.validate"
    assert len(heard.matching("secrets withheld")) == 1


_TEE = """
import subprocess, sys, threading
tee = open(sys.argv[1], "wb")
server = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump():
    for line in iter(sys.stdin.buffer.readline, b""):
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()
threading.Thread(target=pump, daemon=True).start()
for line in iter(server.stdout.readline, b""):
    tee.write(line)
    tee.flush()
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(server.wait())
"""


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdout_is_only_json_rpc_while_the_server_logs_at_debug(
    tmp_path: Path, cache_dir: Path, mode: str
) -> None:
    """A full workout over stdio at DEBUG, stdout copied on its way to the client: every line is
    one JSON-RPC message, and the log messages arrived as notifications among them."""
    wire = tmp_path / "stdout.jsonl"
    args = ["-c", _TEE, str(wire), command(), "--log-level", "DEBUG"]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env(tmp_path / "w.db", cache_dir))
    heard = Heard()
    async with Client(params, mode=mode, logging_callback=heard, log_level="debug") as client:
        if mode == "legacy":
            await client.set_logging_level("debug")
        for content in ("我每天早上喝一杯拿铁咖啡", "I use VS Code with the Vim extension", "我喜欢用Python写代码"):
            assert not (await client.call_tool("remember", {"content": content, "category": "preference"})).is_error
        assert (await client.call_tool("remember", {"content": "我的密码是 Hunter2!xyz"})).is_error
        hits = (await client.call_tool("recall", {"query": "我喝什么咖啡"})).structured_content
        assert hits is not None and hits["hits"][0]["content"] == "我每天早上喝一杯拿铁咖啡"
        assert not (await client.call_tool("extract", {"user_message": "记住：我下个月搬到上海"})).is_error
        assert not (await client.call_tool("cleanup", {"dry_run": False})).is_error
        prompt = await client.get_prompt(
            "extract_memories", {"user_message": "我搬到上海了", "assistant_message": "好"}
        )
        assert "我搬到上海了" in prompt.messages[0].content.text  # type: ignore[union-attr]
        stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
        assert stats["total"] == 4
        await heard.wait_for(lambda m: m.level == "debug" and "cleanup" in str(m.data))
    lines = wire.read_bytes().splitlines()
    messages = [json.loads(line) for line in lines]  # each line whole JSON, or this fails
    assert all(m.get("jsonrpc") == "2.0" and ("method" in m or "id" in m) for m in messages)
    assert sum(m.get("method") == "notifications/message" for m in messages) == len(heard.messages)
    assert {"info", "debug"} <= {m.level for m in heard.messages}
    told = [m for m in messages if m.get("method") == "notifications/message"]
    assert heard.matching("secrets withheld") and "Hunter2" not in json.dumps(told)


def _serve_raw(db: Path, cache_dir: Path, level: str) -> tuple[list[dict[str, Any]], str]:
    """Raw JSON-RPC over pipes: initialize, setLevel debug, a cleanup call; (stdout messages, stderr)."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "cleanup", "arguments": {}}},
    ]  # fmt: skip
    # stderr goes to a file: at DEBUG a start-up logs more than a pipe holds (72 KB), and a pipe
    # nobody reads until the end would stop the server mid-answer.
    with (db.parent / f"{db.stem}.stderr").open("w+b") as stderr:
        proc = subprocess.Popen(
            [command(), "--log-level", level],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=_env(db, cache_dir),
        )
        assert proc.stdin and proc.stdout
        answers: list[dict[str, Any]] = []
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            while "id" in request and not any(a.get("id") == request["id"] for a in answers):
                answers.append(json.loads(proc.stdout.readline()))
        proc.communicate(timeout=60)
        stderr.seek(0)
        return answers, stderr.read().decode()


@pytest.mark.parametrize("level", ["WARNING", "DEBUG"])
async def test_log_level_sets_stderr_whatever_a_client_asks_for(tmp_path: Path, cache_dir: Path, level: str) -> None:
    answers, errors = await anyio.to_thread.run_sync(_serve_raw, tmp_path / "raw.db", cache_dir, level)
    told = [a["params"] for a in answers if a.get("method") == "notifications/message"]
    assert any(t["level"] == "debug" and t["data"].startswith("cleanup: ") for t in told)  # the client asked
    stderr_levels = {line.split()[2] for line in errors.splitlines() if line[:2] == "20" and len(line.split()) > 2}
    if level == "WARNING":
        assert not stderr_levels & {"DEBUG", "INFO"}, errors
    else:
        assert {"DEBUG", "INFO"} <= stderr_levels and "cleanup: " in errors


async def test_a_token_holder_hears_nothing_of_the_other_namespaces(tmp_path: Path, cache_dir: Path) -> None:
    """HTTP with tokens: records of no namespace (the names served, a dashboard call's) are the
    whole process's; only the database file's own (migrations, index rebuilds) reach clients."""
    from ..http_server import http_client, http_server

    alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
    env = {"MCP_MEMORY_TOKENS": f"alice:{alice},bob-li:{bob}", "MCP_MEMORY_LOG_LEVEL": "DEBUG"}
    with http_server(tmp_path, cache_dir, env) as served:
        heard = Heard()
        async with http_client(served.url, alice, mode="legacy", logging_callback=heard):
            await heard.wait_for(lambda m: "started: namespace 'alice'" in str(m.data))
        assert heard.matching("applied database migration 1")  # the file's own: for everyone
        assert not heard.matching("bob-li"), [m.data for m in heard.messages]


async def test_an_http_client_hears_the_start_up_with_its_initialize_answer(tmp_path: Path, cache_dir: Path) -> None:
    """Over streamable HTTP a notification outside requests is dropped while the client has no GET
    stream open (as just after `initialize`); the backlog rides on the initialize answer's stream."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    from ..http_server import http_server

    token = "alice-token-0123456789abcdef"
    with http_server(tmp_path, cache_dir, {"MCP_MEMORY_TOKENS": f"alice:{token}"}) as served:
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-http", "version": "1"},
            },
        }
        async with create_mcp_http_client() as http:
            answer = await http.post(served.url, json=initialize, headers=headers)
    assert answer.status_code == 200, answer.text
    data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
    events = [json.loads(d) for d in data if d.strip()]
    logged = [e["params"]["data"] for e in events if e.get("method") == "notifications/message"]
    assert any("started: namespace 'alice'" in str(d) for d in logged), events
    assert events[-1]["id"] == 1 and "result" in events[-1]


async def test_a_flood_of_records_never_grows_the_servers_memory(config: Config, segmenter: Any) -> None:
    """Records wait for clients in a bounded queue (the oldest go first), and one request sends at
    most PER_REQUEST of its own: stderr keeps them all."""
    import logging

    from mcp_memory_server.server.log_messages import PER_REQUEST, QUEUED

    heard = Heard()
    async with Client(build_server(config, segmenter), mode="legacy", logging_callback=heard) as client:
        await heard.wait_for(lambda m: "started" in str(m.data))
        flood = logging.getLogger("mcp_memory_server.flood")
        for i in range(QUEUED * 3):  # no await between them: the relay sees them all waiting
            flood.info("记录 %d of the flood", i)
        flood.info("the last one")
        await heard.wait_for(lambda m: m.data == "the last one")
        secrets = "\n".join(
            json.dumps(
                {
                    "type": "entity",
                    "name": f"服务器{i}",
                    "observations": [
                        f"第{i}台机器的部署机器人用 sk-{i:04d}abcdefghijklmnopqrstuvwx 登录，每周一轮换，运维组管理"
                    ],
                }
            )
            for i in range(PER_REQUEST + 50)
        )
        imported = await client.call_tool("import_memories", {"data": secrets, "format": "memory-jsonl"})
        assert imported.structured_content is not None and imported.structured_content["withheld"] == PER_REQUEST + 50
    flooded = [m for m in heard.messages if m.logger == "mcp_memory_server.flood"]
    assert len(flooded) <= QUEUED and flooded[-1].data == "the last one"
    assert flooded[-2].data == f"记录 {QUEUED * 3 - 1} of the flood"  # the newest are kept
    assert len(heard.matching("secrets withheld")) == PER_REQUEST
