"""Property-based hostile input over the whole MCP surface (every tool, resource and prompt),
through the SDK's in-memory client against a real server on a real SQLite file.

For every generated call: an answer comes within a bound (no hang); it is a result, or for a
resource or prompt a JSON-RPC error saying the parameters were invalid, never a dropped
connection or an internal error; an error is clear (see `unclear`); a success matches the tool's
output schema; and a rejected call writes nothing at all (SQLite's `data_version`, which changes
whenever another connection commits, is the same before and after; the access statistics that
recall writes later are flushed before each look). No ERROR is logged, so no crash hides behind
a generic message. The generated calls add up to more than 10,000 (`SHARES`)."""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CreateMessageRequestParams,
    CreateMessageResult,
    GetPromptRequest,
    GetPromptRequestParams,
    TextContent,
    Tool,
)

from mcp_memory_server.config import Config
from mcp_memory_server.memory.embedding import EmbeddingWorker
from mcp_memory_server.server import build_server
from mcp_memory_server.server.app import CURRENT
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from .. import hostile
from ..surface import PROMPTS, TOOLS

pytestmark = pytest.mark.anyio

# Calls each test makes at least; together over 10,000 (the requirement), checked below.
# HOSTILE_PROFILE=explore HOSTILE_SCALE=10 makes a longer hunt, with new examples each run.
SHARES = {"tools": 6_500, "resources": 1_800, "prompts": 1_300, "sampling": 600}
SCALE = int(os.environ.get("HOSTILE_SCALE", "1"))
PROFILE = hypothesis_settings.get_profile("hostile-" + os.environ.get("HOSTILE_PROFILE", "ci"))  # see conftest
READ_EVERY = 20  # the tool test reads every static resource after this many calls
# Values drawn per Hypothesis example: Hypothesis's own work for one example (its choice tree,
# mutations, the seeded PRNG) costs more than a call to the in-memory server, so an example
# carries several calls (each checked on its own; a failing one is shrunk with its batch).
BATCH = 10
BOUND_S = 10.0  # seconds for one call; a call with a million-character argument gets LONG_BOUND_S
LONG_BOUND_S = 30.0
TABLES = (
    "memories",
    "memory_history",
    "memory_archive",
    "memory_history_archive",
    "sessions",
    "extraction_log",
    "profile",
    "memory_changes",
    "memory_fts",
)
SEEDS = (
    ("我每天早上喝一杯拿铁咖啡", "preference", None),
    ("用户住在杭州", "identity", "user.city"),
    ("I keep my dotfiles in a private GitHub repo", "fact", None),
    ("我喜欢用Python写代码", "skill", None),
    ("The user's editor is vim", "preference", "user.editor"),
    ("项目 mcp-memory-server 用 SQLite FTS5 做全文检索", "project_state", None),
    ("Meeting with the design team every Tuesday", "event", None),
    ("NEAR and OR not (python) ^ * : 咖啡 '; DROP TABLE memories; --", "note", None),
)

assert sum(SHARES.values()) >= 10_000
T = TypeVar("T")


# ---- what "clear" means -----------------------------------------------------------------------

_INTERNALS = re.compile(
    r"Traceback|File \"|sqlite3|aiosqlite|Internal server error|internal error|object at 0x|"
    r"Error rendering prompt|Error reading resource|\b(?:Key|Type|Attribute|Index|Assertion|Runtime|Overflow|"
    r"Unicode\w*|Name|ZeroDivision|Lookup|OS|JSONDecode)Error\b",
    re.IGNORECASE,
)
_SCHEMA_ERROR = re.compile(r"[a-z_]+: `")  # arguments the tool's schema refused, in our words


def unclear(message: str) -> str | None:
    """Why `message` is not a clear error, or None. Clear means: not empty; no internals (a
    traceback, an exception class, SQL, "internal error") and nothing of pydantic's (its text or
    its website); not the SDK's bare "Error executing tool X", which stands for a crash whose
    text was withheld; arguments the schema refused told in one line; and short: at most 1,000
    characters, so a huge argument is never echoed back whole."""
    if not message.strip():
        return "empty message"
    if (found := _INTERNALS.search(message)) is not None:
        return f"internals in the message: {found.group(0)!r}"
    if "pydantic" in message.lower() or "validation error" in message:
        return "pydantic's text"
    if re.fullmatch(r"Error executing tool \S+", message.strip()):
        return "a crash (the SDK withheld its text)"
    if _SCHEMA_ERROR.match(message) and "\n" in message:
        return "a refused argument told in more than one line"
    if len(message) > 1_000:
        return f"{len(message):,} characters long"
    return None


# ---- the server under test --------------------------------------------------------------------


class _Errors(logging.Handler):
    """Every ERROR anywhere, and every WARNING of ours: a crash is logged even when the client
    sees only a generic message."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.name.startswith("mcp_memory_server"):
            self.records.append(record)


@dataclass
class Harness:
    client: Client
    store: Store
    db: sqlite3.Connection
    tools: dict[str, Tool]
    errors: _Errors
    embedding: EmbeddingWorker | None
    validators: dict[str, Draft202012Validator] = field(default_factory=dict)
    tally: Counter[str] = field(default_factory=Counter)

    async def _embedded(self) -> bool:
        """The background worker has nothing left to write (no stage, or every memory embedded)."""
        worker = self.embedding
        if worker is None or worker.stage.state in ("off", "failed"):
            return True
        if worker.stage.state == "loading" or worker.busy:
            return False
        progress = await self.store.vector_progress(worker.stage.model_id or "")
        return progress.embedded >= progress.total

    async def snapshot(self) -> tuple[int, dict[str, tuple[int, int]]]:
        """SQLite's data_version (changes when another connection commits) and each table's row
        count and largest rowid, after writing the access statistics recall leaves pending and
        once the semantic stage's background worker has embedded every memory (its own commits
        are not the call's)."""
        await self.store.flush()
        with anyio.fail_after(120):
            for _ in range(100_000):  # polled: the worker signals nothing a test could wait on
                if await self._embedded():
                    break
                await anyio.sleep(0.05)
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        tables = {t: self.db.execute(f"SELECT count(*), coalesce(max(rowid), 0) FROM {t}").fetchone() for t in TABLES}
        return version, tables

    @contextmanager
    def answered(self, what: str, bound: float) -> Iterator[None]:
        """The call answers within `bound` seconds and logs no error."""
        self.errors.records.clear()
        with anyio.fail_after(bound):
            yield
        logged = [f"{r.name}: {r.getMessage()[:300]}" for r in self.errors.records]
        assert not logged, f"{what} logged {logged}"

    def rejected(self, what: str, before: Any, after: Any) -> None:
        assert before == after, f"{what} was rejected but wrote to the database: {before} -> {after}"


def _config(tmp_path: Path, cache_dir: Path, semantic: str = "auto") -> Config:
    # Maintenance runs once at start (before the seeds are stored), never during the calls.
    return Config.from_env(
        {}, db_path=tmp_path / "memory.db", cache_dir=cache_dir, maintenance_minutes=0, semantic=semantic
    )


@asynccontextmanager
async def _harness(
    tmp_path: Path, cache_dir: Path, segmenter: Segmenter, semantic: str = "auto", **client_options: Any
) -> AsyncIterator[Harness]:
    """A server on a fresh database with the seeds stored, and a client to it."""
    server = build_server(_config(tmp_path, cache_dir, semantic), segmenter)
    opened: list[Any] = []

    async def capture(ctx: Any, call_next: Any) -> Any:  # the server's store (to flush it) and worker
        if not opened:
            current = CURRENT.get()
            opened.append((current.store, current.embedding))
        return await call_next(ctx)

    server.middleware.append(capture)
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    try:
        async with Client(server, **client_options) as client:
            for content, category, key in SEEDS:
                result = await client.call_tool("remember", {"content": content, "category": category, "key": key})
                assert not result.is_error, result.content
            await client.call_tool("update_session", {"session_id": "s1", "topic": "咖啡"})
            db = sqlite3.connect(f"file:{tmp_path / 'memory.db'}?mode=ro", uri=True, isolation_level=None)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            h = Harness(client=client, store=opened[0][0], db=db, tools=tools, errors=errors, embedding=opened[0][1])
            before = await h.snapshot()  # the instrument sees a write: a rejected call is not vacuous
            await client.call_tool("remember", {"content": "快照能看到写入", "category": "note"})
            assert await h.snapshot() != before
            yield h
            db.close()
    finally:
        logging.getLogger().removeHandler(errors)


@pytest.fixture
async def harness(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> AsyncIterator[Harness]:
    """The explorations' server, with the semantic stage off: each of their thousands of calls
    would wait for the background embedding before its snapshot. Hostile text reaching the model
    is the million-character test's, which runs at the defaults (`default_harness`)."""
    async with _harness(tmp_path, cache_dir, segmenter, semantic="off") as h:
        await h.client.call_tool("extract", {"user_message": "我喜欢喝拿铁", "session_id": "s1"})
        yield h


@pytest.fixture
async def default_harness(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> AsyncIterator[Harness]:
    async with _harness(tmp_path, cache_dir, segmenter) as h:
        await h.client.call_tool("extract", {"user_message": "我喜欢喝拿铁", "session_id": "s1"})
        yield h


# ---- one checked call of each kind ------------------------------------------------------------


async def _answer(h: Harness, what: str, bound: float, request: Callable[[], Awaitable[T]]) -> T | MCPError:
    """The answer to one request: within `bound` seconds, no error logged; a JSON-RPC error is
    returned, not raised."""
    with h.answered(what, bound):
        try:
            return await request()
        except MCPError as exc:
            return exc


async def _refused(h: Harness, what: str, error: MCPError, before: Any) -> str:
    """A JSON-RPC error: invalid params (never internal), clearly worded, nothing written."""
    assert error.code == INVALID_PARAMS, f"{what}: JSON-RPC error {error.code} {error}"
    assert (reason := unclear(error.message)) is None, f"{what}: {reason}: {error.message[:500]!r}"
    h.rejected(what, before, await h.snapshot())
    return _count(h, "protocol")


async def call_tool(h: Harness, name: str, args: dict[str, Any], bound: float = BOUND_S) -> str:
    """Call a tool and check its answer; returns ok, error (an isError result) or protocol."""
    what = f"{name}({_shown(args)})"
    before = await h.snapshot()
    result = await _answer(h, what, bound, lambda: h.client.call_tool(name, args))
    if isinstance(result, MCPError):
        return await _refused(h, what, result, before)
    if result.is_error:
        assert result.structured_content is None, what
        assert len(result.content) == 1 and result.content[0].type == "text", what
        message = result.content[0].text
        assert (reason := unclear(message)) is None, f"{what}: {reason}: {message[:500]!r}"
        h.rejected(what, before, await h.snapshot())
        h.tally["error: the tool's schema" if _SCHEMA_ERROR.match(message) else "error: the server's checks"] += 1
        return _count(h, "error")
    assert result.structured_content is not None, what
    validator = h.validators.get(name)
    if validator is None:
        schema = h.tools[name].output_schema
        assert schema is not None
        validator = h.validators[name] = Draft202012Validator(schema)
    problems = [e.message[:200] for e in validator.iter_errors(result.structured_content)]
    assert not problems, f"{what}: the result does not match the output schema: {problems}"
    return _count(h, "ok")


async def read_resource(h: Harness, uri: str, bound: float = BOUND_S) -> str:
    what = f"read {uri[:200]!r}"
    before = await h.snapshot()
    result = await _answer(h, what, bound, lambda: h.client.read_resource(uri, cache_mode="bypass"))
    if isinstance(result, MCPError):
        return await _refused(h, what, result, before)
    assert len(result.contents) == 1, what
    content = result.contents[0]
    text = getattr(content, "text", None)
    assert isinstance(text, str) and text, what
    if content.mime_type == "application/json":
        json.loads(text)
    return _count(h, "ok")


async def get_prompt(h: Harness, name: str, args: Mapping[str, Any], bound: float = BOUND_S) -> str:
    """Get a prompt; arguments that are not strings go out as a raw request (a client bound by
    the SDK's types cannot send them, a client speaking plain JSON-RPC can)."""
    what = f"prompt {name[:50]!r}({_shown(args)})"

    async def raw() -> dict[str, Any]:
        params = GetPromptRequestParams.model_construct(name=name, arguments=dict(args))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # pydantic: "expected str" while dumping
            return await h.client.session.send_request(GetPromptRequest(params=params), dict)

    before = await h.snapshot()
    if all(isinstance(v, str) for v in args.values()):
        result = await _answer(h, what, bound, lambda: h.client.get_prompt(name, dict(args)))
    else:
        result = await _answer(h, what, bound, raw)
        assert isinstance(result, MCPError), f"{what} was accepted"
    if isinstance(result, MCPError):
        return await _refused(h, what, result, before)
    assert result.messages, what
    return _count(h, "ok")


def _count(h: Harness, outcome: str) -> str:
    h.tally[outcome] += 1
    return outcome


def _shown(args: Mapping[str, Any]) -> str:
    text = repr(dict(args))
    return text if len(text) < 300 else text[:300] + f"... ({len(text):,} characters)"


async def _report(h: Harness, name: str, share: int | None = None) -> None:
    """The connection still serves; the calls made reach the test's share."""
    assert await call_tool(h, "list", {"limit": 1}) == "ok"
    calls = sum(h.tally[k] for k in ("ok", "error", "protocol"))
    print(f"\n{name}: {calls:,} calls: {dict(sorted(h.tally.items()))}")
    share = SHARES[name] if share is None else share
    assert calls >= share, f"only {calls} calls were generated; the share is {share}"


async def explore(calls: int, strategy: st.SearchStrategy[Any], check: Callable[[Any], Awaitable[None]]) -> None:
    """Run Hypothesis (`PROFILE`) in a worker thread until it has drawn `calls` values of
    `strategy`, BATCH to an example; each value is checked by `check`, in order, on the event loop
    that serves the client."""

    async def check_all(values: list[Any]) -> None:
        for value in values:
            await check(value)

    @hypothesis_settings(PROFILE, max_examples=-(-calls // BATCH))
    @given(values=st.lists(strategy, min_size=BATCH, max_size=BATCH))
    def run(values: list[Any]) -> None:
        anyio.from_thread.run(check_all, values)

    await anyio.to_thread.run_sync(run)


# ---- the properties -----------------------------------------------------------------------------


@pytest.mark.timeout(300)  # about 40 s on a 2-core machine; room for a loaded one
async def test_every_tool_answers_hostile_calls_clearly_and_a_rejected_call_changes_nothing(
    harness: Harness,
) -> None:
    h = harness
    for tool in h.tools.values():  # every parameter has a strategy; a new one fails here
        assert set(tool.input_schema.get("properties", {})) <= set(hostile.ARGUMENTS), tool.name
    # One strategy per tool, built once (a strategy built for every example costs more than the call).
    calls = st.one_of(
        [st.tuples(st.just(name), hostile.tool_arguments(h.tools[name].input_schema)) for name in sorted(h.tools)]
    )

    async def check(call: tuple[str, dict[str, Any]]) -> None:
        h.tally[f"tool {call[0]}"] += 1
        await call_tool(h, *call)
        if h.tally[f"tool {call[0]}"] % READ_EVERY == 0:  # whatever was stored, every view still renders
            for uri in hostile.STATIC:
                assert await read_resource(h, uri) == "ok", uri

    await explore(SHARES["tools"] * SCALE, calls, check)
    assert {f"tool {n}" for n in h.tools} <= set(h.tally), h.tally  # every tool was called
    await _report(h, "tools")


async def test_every_resource_answers_hostile_uris_clearly(harness: Harness) -> None:
    h = harness
    listed = {str(r.uri) for r in (await h.client.list_resources()).resources}
    templates = {t.uri_template for t in (await h.client.list_resource_templates()).resource_templates}
    assert listed == set(hostile.STATIC) and templates == set(hostile.TEMPLATES)

    async def check(uri: str) -> None:
        h.tally[uri.split("/")[2] if uri.startswith("memory://") and uri.count("/") >= 2 else "odd"] += 1
        await read_resource(h, uri)

    await explore(SHARES["resources"] * SCALE, hostile.resource_uris(), check)
    kinds = ("stats", "MEMORY.md", "profile", "extraction-log", "memories", "categories", "sessions", "odd")
    assert set(kinds) <= set(h.tally), h.tally
    await _report(h, "resources")


async def test_every_prompt_answers_hostile_arguments_clearly(harness: Harness) -> None:
    h = harness
    prompts = {p.name: tuple(a.name for a in p.arguments or ()) for p in (await h.client.list_prompts()).prompts}
    assert set(prompts) == PROMPTS
    wrong_types = st.dictionaries(st.sampled_from(("user_message", "information", "x")), hostile.json_values)

    def prompt_calls(names: list[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
        """Calls of each prompt in `names` (equally often), its arguments built once."""
        arguments = {name: hostile.prompt_arguments(prompts.get(name, ("information",))) for name in names}
        return st.one_of(
            [st.tuples(st.just(name), hostile.weighted((9, arguments[name]), (1, wrong_types))) for name in names]
        )

    calls = hostile.weighted((12, prompt_calls(sorted(prompts))), (1, prompt_calls(["nope", "", "Extract"])))

    async def check(call: tuple[str, dict[str, Any]]) -> None:
        h.tally[f"prompt {call[0]}"] += 1
        await get_prompt(h, *call)

    await explore(SHARES["prompts"] * SCALE, calls, check)
    assert {f"prompt {p}" for p in prompts} <= set(h.tally), h.tally
    await _report(h, "prompts")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_hostile_answers_of_the_client_s_model_never_fail_a_call(
    tmp_path: Path, cache_dir: Path, segmenter: Segmenter, mode: str
) -> None:
    """extract and refresh_profile ask the client's model when it can sample; whatever it answers
    (junk, the wrong shape, hostile memories, 100,000 characters) the call still succeeds, the
    deep channel or the synthesis falling back, and nothing is logged as an error. The semantic
    stage is off, as in the other explorations (see `harness`)."""
    answer = [""]
    asked: list[str] = []

    async def sample(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append(answer[0])
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=answer[0]), model="m")

    async with _harness(tmp_path, cache_dir, segmenter, semantic="off", mode=mode, sampling_callback=sample) as h:
        calls = st.tuples(st.sampled_from(("extract", "refresh_profile")), hostile.model_answers, hostile.user_messages)

        async def check(call: tuple[str, str, str]) -> None:
            tool, answer[0], message = call
            h.tally[f"tool {tool}"] += 1
            args = {"user_message": message, "session_id": "s1"} if tool == "extract" else {}
            assert await call_tool(h, tool, args) == "ok"

        await explore(SHARES["sampling"] // 2 * SCALE, calls, check)
        await _report(h, "sampling", SHARES["sampling"] // 2)
    assert len(asked) >= h.tally["ok"] // 2, "the model was hardly asked"


# ---- a million characters ----------------------------------------------------------------------

MILLION = "记" * 500_000 + "x" * 500_000


def _valid(tool: str) -> dict[str, Any]:
    """Arguments each tool accepts, to put one huge value into."""
    return {
        "remember": {"content": "用户喜欢喝茶"},
        "recall": {"query": "咖啡"},
        "forget": {"ids": ["mem_404"]},
        "list": {},
        "apply_changes": {"ops": [_OP]},
        "cleanup": {},
        "restore": {"ids": ["mem_404"]},
        "update_session": {"session_id": "s9"},
        "extract": {"user_message": "我喜欢喝茶"},
        "refresh_profile": {},
        "edit_profile": {"field": "domains", "action": "add", "text": "茶"},
        "import_memories": {"data": "## 偏好\n- 用户喜欢喝茶\n", "format": "auto"},
    }[tool]


_OP = {
    "key": "user.tea",
    "action": "add",
    "category": "preference",
    "payload": "用户喜欢喝茶",
    "importance": 5,
    "source": "user",
}


def _huge_variants(tool: Tool) -> Iterator[dict[str, Any]]:
    """The tool's valid arguments with one value a million characters long: each top-level
    argument in turn, and the strings inside change operations, emotions, variables and profiles."""
    base = _valid(tool.name)
    for name in tool.input_schema.get("properties", {}):
        yield base | {name: MILLION}
    nested: dict[str, list[Any]] = {
        "apply_changes": [{"ops": [_OP | {field: MILLION}]} for field in ("key", "action", "category", "payload")]
        + [{"ops": [_OP | {"source": MILLION, "tags": [MILLION]}]}, {"ops": [{MILLION: 1}]}],
        "update_session": [
            base | {"emotion": {"primary": MILLION, "confidence": 0.9}},
            base | {"emotion": {"primary": "sad", "confidence": 0.9, "indicators": [MILLION]}},
            base | {"variables": {"city": MILLION}},
            base | {"variables": {MILLION: "x"}},
        ],
        "refresh_profile": [{"profile": {"summary": {"text": MILLION}}}, {"profile": {MILLION: MILLION}}],
        "forget": [{"ids": [MILLION]}],
        "restore": [{"ids": [MILLION]}],
        "remember": [base | {"tags": [MILLION]}],
        "recall": [base | {"tags": [MILLION]}],
        "list": [{"tags": [MILLION]}],
        "import_memories": [
            {"data": "- " + MILLION, "format": "markdown"},
            {"data": json.dumps({"results": [{"memory": MILLION}]}), "format": "auto"},
            {"data": json.dumps({"type": "entity", "name": MILLION, "observations": ["x"]}), "format": "auto"},
        ],
    }
    yield from nested.get(tool.name, [])


@pytest.mark.timeout(300)
async def test_million_character_strings_in_every_argument_answer_promptly(default_harness: Harness) -> None:
    harness = default_harness
    h = harness
    for tool in h.tools.values():
        for args in _huge_variants(tool):
            await call_tool(h, tool.name, args, bound=LONG_BOUND_S)
    prompts = {p.name: [a.name for a in p.arguments or ()] for p in (await h.client.list_prompts()).prompts}
    for name, arg_names in prompts.items():
        for arg in arg_names:
            await get_prompt(h, name, {a: MILLION if a == arg else "我喜欢喝茶" for a in arg_names}, LONG_BOUND_S)
    for template in hostile.TEMPLATES:
        await read_resource(h, template.split("{")[0] + MILLION, LONG_BOUND_S)
    await read_resource(h, "memory://" + MILLION, LONG_BOUND_S)
    assert await call_tool(h, "list", {"limit": 1}) == "ok"  # the connection still serves
    print(f"\nmillion-character strings: {dict(h.tally)}")
    assert h.tally["ok"] + h.tally["error"] + h.tally["protocol"] >= 50


def test_lone_surrogates_never_reach_a_handler() -> None:
    """A lone surrogate is not valid JSON text: the SDK's JSON-RPC parser rejects the message
    itself, which is why the strategies leave surrogates out."""
    from mcp_types import jsonrpc_message_adapter

    line = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall", "arguments": %s}}'
    with pytest.raises(ValueError, match=r"json_invalid|hex escape|surrogate"):
        jsonrpc_message_adapter.validate_json(line % json.dumps({"query": "a\ud800b"}), by_name=False)
    assert jsonrpc_message_adapter.validate_json(line % json.dumps({"query": "a\U0001f600b"}), by_name=False)


# ---- regressions: what the generated calls found, one plain test each ------------------------


@pytest.fixture
async def client(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(_config(tmp_path, cache_dir), segmenter)) as connected:
        yield connected


async def _tool_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error and result.content[0].type == "text"
    return result.content[0].text


async def _protocol_error(read: Awaitable[Any]) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await read
    return caught.value


async def test_an_error_names_a_huge_argument_without_echoing_it(client: Client) -> None:
    """A million-character key in a change operation, a variable name, an id, a category or a
    URI came back whole in the error message."""
    huge = "键" * 1_000_000
    op = {"key": huge, "action": "add", "category": "fact", "payload": "x", "importance": 5, "source": "user"}
    messages = [
        await _tool_error(client, "apply_changes", {"ops": [op]}),
        await _tool_error(client, "apply_changes", {"ops": [{huge: 1, "key": "k", "action": "del"}]}),
        await _tool_error(client, "update_session", {"session_id": "s", "variables": {huge: 1}}),
    ]
    for uri in (f"memory://memories/{huge}", f"memory://categories/{huge}", f"memory://sessions/{huge}"):
        messages.append((await _protocol_error(client.read_resource(uri))).message)
        messages.append((await _protocol_error(client.read_resource(uri[:5000]))).message)
    for message in messages:
        assert len(message) < 1_000 and ("键" * 10 in message or "characters" in message), message[:300]
    assert messages[0].startswith("Error executing tool apply_changes: op 1 (add 键键键")
    assert "1,000,018 characters" in messages[3]  # the unknown-resource message of the SDK, cut


async def test_an_invalid_resource_argument_is_invalid_params_not_an_internal_error(client: Client) -> None:
    error = await _protocol_error(client.read_resource("memory://categories/NOT%20VALID!"))
    assert error.code == INVALID_PARAMS and "category 'NOT VALID!' is not valid" in error.message


async def test_a_prompt_asked_for_wrongly_is_invalid_params_naming_the_mistake(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Each was an "Internal server error" with a traceback in the server's log."""
    mistakes = {
        "no prompt is named 'nope'; the prompts are detect_memory_changes": client.get_prompt("nope", {}),
        "prompt extract_memories: missing assistant_message. It takes user_message, assistant_message": (
            client.get_prompt("extract_memories", {"user_message": "hi"})
        ),
        "prompt synthesize_profile: no argument named 'limit'. It takes no arguments": (
            client.get_prompt("synthesize_profile", {"limit": "5"})
        ),
    }
    for expected, read in mistakes.items():
        error = await _protocol_error(read)
        assert error.code == INVALID_PARAMS and error.message.startswith(expected), error.message
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("blank", ["", "   ", "\x7f", "\x00\u3000"])
async def test_a_prompt_about_blank_text_renders_without_related_memories(client: Client, blank: str) -> None:
    """The related-memory lookup refused the empty query, an internal error for the prompt."""
    await client.call_tool("remember", {"content": "我喜欢喝拿铁"})
    evaluated = await client.get_prompt("evaluate_memory", {"information": blank})
    detected = await client.get_prompt("detect_memory_changes", {"user_input": blank, "ai_output": blank})
    answered = await client.get_prompt("respond_with_memory", {"user_message": blank, "session_id": "s1"})
    for result in (evaluated, detected, answered):
        assert result.messages and "拿铁" not in result.messages[0].content.text  # type: ignore[union-attr]
