"""Every client snippet in the README and docs/ works as written. Each stdio snippet (Claude Desktop,
Cursor and VS Code JSON, `claude mcp add` lines, Inspector commands) names the checkout as
`/absolute/path/to/checkout`: the test puts the local command in its place (the `jiyi` installed
next to the test interpreter; `uvx --from CHECKOUT jiyi ARGS` runs the same command), starts the
server over stdio with exactly the snippet's arguments and environment, and lists its tools with
the SDK's stdio client. The first remember and recall of the README runs as written, and the HTTP
blocks of docs/http.md reach a real server with a token. Nothing is fetched: `uvx jiyi` starts
working only once the package is published, and no snippet may rely on it."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..http_server import command, http_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLIENTS = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
HTTP = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
CHECKOUT = "/absolute/path/to/checkout"
VENV_COMMAND = f"{CHECKOUT}/.venv/bin/jiyi"
TOOLS = {"remember", "recall", "forget", "list", "extract", "update_session", "import_memories"}  # a few of them


def _section(text: str, title: str) -> str:
    """The body of the heading `title` (any level) up to the next heading of that level or above."""
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.MULTILINE)
    assert match, f"no section {title!r}"
    level = len(match.group(1))
    following = re.search(rf"^#{{1,{level}}} ", text[match.end() :], re.MULTILINE)
    return text[match.end() : match.end() + following.start() if following else len(text)]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


# The stdio JSON snippets: (page, client) -> the key its client reads.
STDIO = {"Claude Desktop": "mcpServers", "Cursor": "mcpServers", "VS Code": "servers"}
PAGES = {"README.md": README, "docs/clients.md": CLIENTS}


def _stdio_entries() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for page, text in PAGES.items():
        for client, key in STDIO.items():
            (block,) = _blocks(_section(text, client), "json")
            config = json.loads(block)
            assert list(config) == [key], f"{page}, {client}: it reads {key!r}"
            found.append((page, client, config[key]["memory"]))
    return found


def _local(words: list[str]) -> list[str]:
    """The snippet's command line with the local command in place of the checkout's."""
    if words[0] == VENV_COMMAND:
        return [command(), *words[1:]]
    if words[0] == ".venv/bin/jiyi":  # relative to the root of a checkout
        return [command(), *words[1:]]
    if words[0] == "uvx":
        # `uvx --from DIR jiyi ARGS` builds DIR and runs its `jiyi` script with ARGS; the script
        # the checkout declares is the one installed here.
        assert words[1:4] == ["--from", CHECKOUT, "jiyi"], f"uvx without --from the checkout: {words}"
        return [command(), *words[4:]]
    raise AssertionError(f"a snippet runs {words[0]!r}, neither the checkout's command nor uvx --from it")


def _environment(tmp_path: Path, cache_dir: Path, given: dict[str, str]) -> dict[str, str]:
    """What a client passes: an ordinary environment (a fresh home, no XDG overrides) plus the
    snippet's `env`. The segmenter's cache is shared so that each start is quick."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MCP_MEMORY_"))}
    return {**inherited, "HOME": str(home), "MCP_MEMORY_CACHE_DIR": str(cache_dir), **given}


async def _serve_and_list(words: list[str], env: dict[str, str]) -> tuple[set[str], dict[str, Any]]:
    """Start the server as the snippet says, list its tools, read memory://stats."""
    local = _local(words)
    async with Client(StdioServerParameters(command=local[0], args=local[1:], env=env)) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        stats = json.loads((await session.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
    return tools, stats


def test_the_checkout_declares_the_jiyi_command() -> None:
    """`uvx --from CHECKOUT jiyi` and `.venv/bin/jiyi` run the console script named jiyi."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["name"] == "jiyi"
    assert project["scripts"] == {"jiyi": "mcp_memory_server.cli.commands:main"}
    assert Path(command()).name == "jiyi"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_command_table_says_what_works_before_publication(page: str) -> None:
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in PAGES[page].splitlines()
        if line.startswith("| `") and ("uvx" in line or VENV_COMMAND in line) and not line.startswith("| `MCP_")
    ]
    forms = [(row[0].strip("`"), json.loads(row[1].strip("`")), row[2]) for row in rows]
    assert [(c, a) for c, a, _ in forms] == [
        (VENV_COMMAND, []),
        ("uvx", ["--from", CHECKOUT, "jiyi"]),
        ("uvx", ["jiyi"]),
    ]
    assert forms[0][2].startswith("now") and forms[1][2].startswith("now")
    assert "only after publication" in forms[2][2] and "pip install jiyi" in forms[2][2]


@pytest.mark.parametrize(("page", "client"), [(p, c) for p in sorted(PAGES) for c in sorted(STDIO)])
def test_the_stdio_block_has_its_clients_shape(page: str, client: str) -> None:
    (entry,) = [e for p, c, e in _stdio_entries() if (p, c) == (page, client)]
    assert set(entry) <= {"type", "command", "args", "env"}
    assert (entry.get("type") == "stdio") is (client == "VS Code"), "VS Code alone needs the type"
    assert entry["command"] in (VENV_COMMAND, "uvx")
    assert all(k.startswith("MCP_MEMORY_") for k in entry.get("env", {}))


@pytest.mark.parametrize(("page", "client"), [(p, c) for p in sorted(PAGES) for c in sorted(STDIO)])
async def test_the_stdio_block_starts_a_working_server(page: str, client: str, tmp_path: Path, cache_dir: Path) -> None:
    (entry,) = [e for p, c, e in _stdio_entries() if (p, c) == (page, client)]
    env = _environment(tmp_path, cache_dir, entry.get("env", {}))
    tools, stats = await _serve_and_list([entry["command"], *entry["args"]], env)
    assert tools >= TOOLS
    home = Path(env["HOME"])
    if "MCP_MEMORY_DB" in entry.get("env", {}):
        assert entry["env"]["MCP_MEMORY_DB"].startswith("~/")
        assert stats["db_path"] == str(home / entry["env"]["MCP_MEMORY_DB"][2:]), "~ is the user's home"
    else:  # the default database, where the README says it lives (Linux)
        assert stats["db_path"] == str(home / ".local/share/mcp-memory-server/memory.db")


def _claude_lines() -> list[list[str]]:
    lines = []
    for text in (README, CLIENTS, HTTP):
        for block in _blocks(text, "bash"):
            for line in block.splitlines():
                if line.startswith("claude mcp add"):
                    lines.append(shlex.split(line.split("  #")[0]))
    return lines


# Claude Code's `mcp add`: options that take one value, and those that take every value after them.
_ONE = {"--scope", "-s", "--transport", "-t"}
_MANY = {"-e", "--env", "--header", "-H"}


def test_claude_mcp_add_lines_put_each_option_where_claude_code_takes_it() -> None:
    """A variadic option (-e, --header) swallows what follows it up to the next option or `--`:
    the server's name and URL must come before it (checked by hand with Claude Code 2.1.328,
    whose `mcp add` refuses `-e KEY=value name`)."""
    lines = _claude_lines()
    assert len(lines) >= 7
    for words in lines:
        rest = words[3 : words.index("--")] if "--" in words else words[3:]
        positional: list[str] = []
        taking = 0
        variadic = False
        for word in rest:
            if word.startswith("-"):
                taking, variadic = (1, False) if word in _ONE else (0, word in _MANY)
                assert word in _ONE | _MANY, f"unknown option {word} in {words}"
            elif taking:
                taking -= 1
            elif variadic:
                assert positional[:1] == ["memory"] and (len(positional) == 2 or "--" in words), (
                    f"{word!r} would be taken by the variadic option in: {shlex.join(words)}"
                )
            else:
                positional.append(word)
        assert positional[0] == "memory", words
        if "--transport" in words:
            assert re.fullmatch(r"https?://\S+/mcp", positional[1]), words


async def test_each_claude_mcp_add_line_starts_a_working_server(tmp_path: Path, cache_dir: Path) -> None:
    started = set()
    for words in _claude_lines():
        if "--" not in words:
            continue  # HTTP: by URL, below
        server = words[words.index("--") + 1 :]
        before = words[: words.index("--")]
        env = dict(before[i + 1].split("=", 1) for i, w in enumerate(before) if w in ("-e", "--env"))
        key = (tuple(server), tuple(sorted(env.items())))
        if key in started:
            continue
        started.add(key)
        tools, stats = await _serve_and_list(server, _environment(tmp_path, cache_dir, env))
        assert tools >= TOOLS, words
        if env:
            assert stats["db_path"] == str(tmp_path / "home" / env["MCP_MEMORY_DB"][2:])
    assert len(started) >= 3  # the checkout's command, with an env, and uvx --from the checkout


def _expand(words: list[str], variables: dict[str, str]) -> list[str]:
    """`$NAME` words replaced by the value a line of the same block set (`NAME=value`)."""
    return [variables[w[1:]] if re.fullmatch(r"\$\w+", w) else w for w in words]


def _inspector_servers(text: str) -> list[list[str]]:
    """The server command of each Inspector line: after the package and --cli, before the
    Inspector's own --method; shell variables set in the same block are expanded."""
    found = []
    for block in _blocks(text, "bash"):
        variables = dict(re.findall(r"^(\w+)=(\S+)$", block, re.MULTILINE))
        for line in block.splitlines():
            if "@modelcontextprotocol/inspector" not in line:
                continue
            words = shlex.split(line.split("  #")[0])
            words = words[words.index("@modelcontextprotocol/inspector") + 1 :]
            words = [w for w in words if w != "--cli"]
            if "--method" in words:
                words = words[: words.index("--method")]
            if words and not words[0].startswith("http"):
                found.append(_expand(words, variables))
    return found


async def test_each_inspector_command_starts_a_working_server(tmp_path: Path, cache_dir: Path) -> None:
    servers = {tuple(s) for text in (README, CLIENTS) for s in _inspector_servers(text)}
    assert len(servers) >= 3
    for server in sorted(servers):
        # A scratch database under /tmp in the docs: this test's own directory instead.
        words = [str(tmp_path / Path(w).name) if w.startswith("/tmp/") else w for w in server]
        tools, _ = await _serve_and_list(words, _environment(tmp_path, cache_dir, {}))
        assert tools >= TOOLS, server


def _tool_arguments(line: str) -> tuple[str, dict[str, Any]]:
    words = shlex.split(line)
    name = words[words.index("--tool-name") + 1]
    arguments = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--tool-arg")
    return name, arguments


async def test_the_first_remember_and_recall_work_as_written(tmp_path: Path, cache_dir: Path) -> None:
    """The README's by-hand session: the remember and recall lines, then `jiyi search`, whose output
    is the one the README shows."""
    text = _section(README, "A first remember and recall")
    block = _blocks(text, "bash")[0]
    (server,) = {tuple(s) for s in _inspector_servers(text)}
    db = tmp_path / "try.db"
    words = [str(db) if w == "/tmp/try.db" else w for w in server]
    local = _local(words)
    env = _environment(tmp_path, cache_dir, {})
    calls = [_tool_arguments(line) for line in block.splitlines() if "--tool-name" in line]
    assert [name for name, _ in calls] == ["remember", "recall"]
    async with Client(StdioServerParameters(command=local[0], args=local[1:], env=env)) as session:
        stored = await session.call_tool(*calls[0])
        assert not stored.is_error, stored.content
        found = await session.call_tool(*calls[1])
        assert found.structured_content is not None
        assert found.structured_content["hits"][0]["content"] == calls[0][1]["content"]
    (search,) = [line for line in block.splitlines() if " search " in line]
    variables = dict(re.findall(r"^(\w+)=(\S+)$", block, re.MULTILINE))
    argv = _local([str(db) if w == "/tmp/try.db" else w for w in _expand(shlex.split(search), variables)])
    done = await anyio.run_process(argv, env=env, check=True)
    printed = done.stdout.decode()
    (shown,) = re.findall(r"```console\n(.*?)```", text, re.S)
    assert printed.split() == shown.split()


def _http_entries() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(client, whole config, the memory entry) of every HTTP block."""
    found = []
    for block in _blocks(HTTP, "json"):
        config = json.loads(block)
        key = "servers" if "servers" in config else "mcpServers"
        found.append(("VS Code" if key == "servers" else "Cursor", config, config[key]["memory"]))
    return found


def test_the_http_blocks_have_their_clients_shape() -> None:
    entries = _http_entries()
    assert sorted(c for c, _, _ in entries) == ["Cursor", "Cursor", "VS Code", "VS Code"]
    for client, config, entry in entries:
        assert set(entry) <= {"type", "url", "headers"}
        assert (entry.get("type") == "http") is (client == "VS Code")
        if "headers" in entry:
            assert entry["headers"] == {"Authorization": entry["headers"]["Authorization"]}
            assert re.fullmatch(r"Bearer \$\{(input|env):[\w-]+\}", entry["headers"]["Authorization"])
        if "inputs" in config:
            (wanted,) = config["inputs"]
            assert wanted["type"] == "promptString" and wanted["password"] is True
            assert entry["headers"]["Authorization"] == f"Bearer ${{input:{wanted['id']}}}"


def _resolve(value: str, token: str) -> str:
    """What VS Code (`${input:...}`, asked once) and Cursor (`${env:...}`) substitute."""
    return re.sub(r"\$\{(input|env):[\w-]+\}", token, value)


async def test_the_http_blocks_reach_a_server_with_tokens(tmp_path: Path, cache_dir: Path) -> None:
    token = "docs-token-" + "7" * 32
    with http_server(tmp_path, cache_dir, env={"MCP_MEMORY_TOKENS": token}) as served:
        for client, _, entry in _http_entries():
            if "headers" not in entry:
                continue  # the loopback examples: the same server without tokens, below
            url = re.sub(r"^https://memory\.example\.com", f"http://127.0.0.1:{served.port}", entry["url"])
            for sent, works in ((token, True), ("not-the-token", False)):
                headers = {k: _resolve(v, sent) for k, v in entry["headers"].items()}
                async with create_mcp_http_client(headers=headers) as http:
                    if not works:
                        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401 varies by era
                            async with Client(streamable_http_client(url, http_client=http)):
                                pass
                        continue
                    async with Client(streamable_http_client(url, http_client=http)) as session:
                        content = f"{client} over HTTP: 我用雾凇拼音输入中文"
                        assert not (await session.call_tool("remember", {"content": content})).is_error
                        found = await session.call_tool("recall", {"query": "雾凇拼音"})
                        assert found.structured_content is not None
                        assert content in [h["content"] for h in found.structured_content["hits"]]


async def test_the_loopback_http_blocks_reach_a_server_without_tokens(tmp_path: Path, cache_dir: Path) -> None:
    with http_server(tmp_path, cache_dir) as served:
        for client, _, entry in _http_entries():
            if "headers" in entry:
                continue
            assert entry["url"] == "http://127.0.0.1:8765/mcp"  # the default port, replaced by a free one
            url = entry["url"].replace(":8765", f":{served.port}")
            async with create_mcp_http_client() as http, Client(streamable_http_client(url, http_client=http)) as s:
                assert not (await s.call_tool("remember", {"content": f"{client}: loopback 没有令牌"})).is_error
