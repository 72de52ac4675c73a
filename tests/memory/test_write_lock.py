"""No write lock is held while text is screened or a model is waited for: every write path screens
first and writes after, so another writer on the same SQLite file (another process, another
client's server) never waits on redaction or on the client's model.

The witness is a second writer: each time a text is screened, and while the client's model is
thinking, another connection to the file takes the write lock (BEGIN IMMEDIATE, without waiting)
and lets it go. The server itself runs for real, behind the SDK's `Client`."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.http import dashboard_api
from mcp_memory_server.memory import MemoryService, lifecycle
from mcp_memory_server.runtime import Opened
from mcp_memory_server.server import build_server
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text import redaction as redact_module

from .. import rawdb
from ..calls import call

pytestmark = pytest.mark.anyio

USER = "我是后端工程师，我们决定用 PostgreSQL。my password is Tr0ub4dor&3, 记住 the deploy runs at 9."
ASSISTANT = "好的，PostgreSQL 适合这个场景。The api_key=sk-proj-" + "a1B2c3D4" * 5 + " should live in the vault."
ANSWER = {"memories": [{"content": "项目选定 PostgreSQL 作为主数据库", "category": "decision", "importance": 0.8}]}


def lock_free(path: Path) -> bool:
    """Whether another connection can take the write lock of the SQLite file at once."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        return False
    finally:
        conn.close()


@dataclass
class Witness:
    """What the second writer found each time a text was screened."""

    path: Path
    maintained: anyio.Event  # the server's start-up maintenance, which writes, has run
    found: list[tuple[bool, str]] = field(default_factory=list)
    during: Callable[[str], None] | None = None  # run once more inside the next screening

    def screening(self, text: str) -> None:
        free = lock_free(self.path)
        self.found.append((free, text[:60]))
        if self.during is not None:
            during, self.during = self.during, None
            during(text)

    def blocked(self) -> list[str]:
        return [text for free, text in self.found if not free]


@pytest.fixture
async def witness(config: Config, monkeypatch: pytest.MonkeyPatch) -> Witness:
    """Every screening (remember, apply_changes, extract, imports, profile and dashboard edits all
    go through `find_secrets`) first lets the second writer try. A server's session expiry and
    cleanup at start write in the background: tests wait for them (`maintained`) before calling,
    so that a lock found held is one taken around the screening."""
    seen = Witness(config.db_path, anyio.Event())
    screen, maintain = redact_module.find_secrets, lifecycle.maintain

    def screened(text: str) -> list[redact_module.Finding]:
        seen.screening(text)
        return screen(text)

    async def maintained(store: Store, **kwargs: Any) -> lifecycle.MaintenanceResult:
        try:
            return await maintain(store, **kwargs)
        finally:
            seen.maintained.set()

    monkeypatch.setattr(redact_module, "find_secrets", screened)
    monkeypatch.setattr(lifecycle, "maintain", maintained)
    return seen


def slow_model(config: Config, segmenter: Segmenter, checks: list[bool], seconds: float = 0.5) -> Any:
    """A client's model that thinks for a while; meanwhile a second store on the same file writes
    (it would wait out the busy timeout behind a held lock: the bound is well below that)."""

    async def sample(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        await anyio.sleep(seconds)  # the fast channel and the fallback note are written meanwhile
        checks.append(lock_free(config.db_path))
        with anyio.fail_after(config.busy_timeout_ms / 2000):
            async with Store(config, segmenter) as other:
                await MemoryService(other).remember(content="另一个客户端在模型思考时写入的记忆", category="note")
        checks.append(True)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=json.dumps(ANSWER, ensure_ascii=False)), model="t"
        )

    return sample


async def test_the_witness_sees_a_held_lock(store: Store, config: Config) -> None:
    assert lock_free(config.db_path)
    async with store.transaction():
        assert not lock_free(config.db_path)
    assert lock_free(config.db_path)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_extract_holds_no_lock_while_screening_or_waiting_for_the_model(
    config: Config, segmenter: Segmenter, witness: Witness, mode: str
) -> None:
    checks: list[bool] = []
    async with Client(
        build_server(config, segmenter), mode=mode, sampling_callback=slow_model(config, segmenter, checks)
    ) as c:
        await witness.maintained.wait()
        result = await call(c, "extract", user_message=USER, assistant_message=ASSISTANT, session_id="s1")
    assert checks == [True, True]  # the model was waited for, and another store wrote meanwhile
    assert result["deep"] == "extracted"
    assert len(witness.found) >= 4 and witness.blocked() == []  # the sentences, the note, the log's previews
    contents = [r[0] for r in rawdb.rows(config, "SELECT content FROM memories")]
    assert "另一个客户端在模型思考时写入的记忆" in contents
    (previews,) = rawdb.rows(config, "SELECT input FROM extraction_log")
    assert "Tr0ub4dor&3" not in previews[0] and "[withheld: API key (OpenAI)]" in previews[0]


async def test_a_large_screening_leaves_the_file_to_other_writers(
    config: Config, segmenter: Segmenter, witness: Witness
) -> None:
    """A message of 20,000 characters made to be slow to screen (label after label, long digit
    runs), on the paths that screen the most: extract's sentences, note and previews."""
    hostile = ("aws_secret_access_key=" + "1234567890" * 4 + "a 密码是 " + "9" * 30 + " ") * 200
    checks: list[bool] = []
    model = slow_model(config, segmenter, checks)
    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=model) as c:
        await witness.maintained.wait()
        with anyio.fail_after(60):
            result = await call(c, "extract", user_message=hostile[:20_000], assistant_message=hostile[:20_000])
    assert result["run"] and checks == [True, True]
    assert len(witness.found) >= 3 and witness.blocked() == []


async def test_every_write_path_screens_before_it_takes_the_lock(
    config: Config, segmenter: Segmenter, witness: Witness
) -> None:
    opened = Opened()
    checks: list[bool] = []
    model = slow_model(config, segmenter, checks, seconds=0.1)
    async with Client(build_server(config, segmenter, opened=opened), sampling_callback=model) as client:
        await witness.maintained.wait()
        await call(client, "remember", content="我的数据库密码是 hunter2!x，部署在杭州机房的那台主库上")
        await call(client, "remember", content="The staging host is db-2.internal, user deploy")
        ops = [
            {"key": "user.city", "action": "add", "category": "identity", "payload": "用户住在杭州", "importance": 8}
            | {"source": "用户输入"},
            {"key": "cfg", "action": "add", "category": "fact", "payload": "pwd=Zx9!kq2 for the test box at home"}
            | {"importance": 5, "source": "user"},
        ]
        await call(client, "apply_changes", ops=ops)
        markdown = "# Memory\n\n- 我喜欢喝拿铁\n- token: ghp_" + "A1b2" * 9 + " is the CI bot's\n"
        await call(client, "import_memories", data=markdown, format="markdown")
        await call(client, "edit_profile", field="domains", action="add", text="后端开发 and databases")
        state = opened.get().get()
        added = await dashboard_api.add(state, {"content": "Dashboard note: the VPN secret is Qw3rty!99z today"})
        await dashboard_api.edit(state, added.id, {"content": "Dashboard note, edited: nothing secret any more"})
        await dashboard_api.edit_profile(state, {"field": "summary", "action": "set", "text": "A backend engineer"})
        graph = {"type": "entity", "name": "李娜", "entityType": "同事", "observations": ["对咖啡过敏, pin: 4729"]}
        await dashboard_api.import_file(
            state, json.dumps(graph, ensure_ascii=False).encode(), {"format": "memory-jsonl"}
        )
    assert len(witness.found) >= 9 and witness.blocked() == []
    contents = " ".join(r[0] for r in rawdb.rows(config, "SELECT content FROM memories"))
    for secret in ("hunter2!x", "Zx9!kq2", "A1b2A1b2", "Qw3rty!99z"):
        assert secret not in contents


def in_thread(work: Callable[[], Awaitable[None]]) -> None:
    """Run `work` on an event loop of its own in another thread, and wait for it: another writer
    that does not wait for this test's event loop."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(work())  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive() and not failure, failure


async def test_an_edit_screens_again_outside_the_lock_when_the_text_changed_meanwhile(
    config: Config, segmenter: Segmenter, service: MemoryService, witness: Witness
) -> None:
    """Between the edit's screening and its write, another writer changes the memory's text: the
    edit reads it again, screens it again (no lock held) and keeps that text with its own change."""
    memory = await service.remember(content="周会在每周一上午十点开", category="event", importance=0.5)

    async def other_writer() -> None:
        async with Store(config, segmenter) as other:
            await MemoryService(other).edit(memory.id, {"content": "周会改到每周二上午十点，会议室密码 8866!ab"})

    witness.during = lambda _: in_thread(other_writer)
    edited = await service.edit(memory.id, {"importance": 0.9})
    assert edited.action == "updated" and edited.memory is not None
    assert edited.memory.importance == 0.9
    assert edited.memory.content == "周会改到每周二上午十点，会议室密码 [withheld: password]"
    assert witness.blocked() == [] and len(witness.found) >= 3  # ours, the other writer's, ours again
