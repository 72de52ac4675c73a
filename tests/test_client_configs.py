"""The README's client configurations work as written: each JSON block parses and has its client's
shape, and the server started with exactly its command, arguments and environment (the checkout's
executable in place of `uvx`, which would fetch the published package) answers remember and recall
through the SDK's stdio client; the HTTP blocks reach a real server with a token. The
`claude mcp add` lines put every option where Claude Code's parser takes it."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .http_server import command, http_server

pytestmark = pytest.mark.anyio

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of one `###` section of the README."""
    start = README.index(f"\n### {title}\n")
    end = README.find("\n## ", start + 1)
    following = README.find("\n### ", start + 1)
    return README[start : min(x for x in (end, following) if x != -1)]


def _blocks(title: str, language: str = "json") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(title), re.S)


def _json_blocks(title: str) -> list[dict[str, Any]]:
    return [json.loads(block) for block in _blocks(title)]


STDIO = {"Claude Desktop": "mcpServers", "Cursor": "mcpServers", "VS Code": "servers"}


@pytest.mark.parametrize("client", sorted(STDIO))
def test_the_stdio_block_has_its_clients_shape(client: str) -> None:
    (config,) = _json_blocks(client)
    assert list(config) == [STDIO[client]], f"{client} reads {STDIO[client]!r}"
    entry = config[STDIO[client]]["memory"]
    assert entry["command"] == "uvx" and entry["args"] == ["mcp-memory-server"]
    assert entry["env"] == {"MCP_MEMORY_DB": "~/memory/memory.db"}
    if client == "VS Code":
        assert entry["type"] == "stdio"
    else:
        assert "type" not in entry


@pytest.mark.parametrize("client", sorted(STDIO))
async def test_the_stdio_block_starts_a_working_server(client: str, tmp_path: Path, cache_dir: Path) -> None:
    (config,) = _json_blocks(client)
    entry = config[STDIO[client]]["memory"]
    assert entry["command"] == "uvx"  # uvx PACKAGE [ARGS]: the package's command with the rest
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "MCP_MEMORY_CACHE_DIR": str(cache_dir), **entry["env"]}
    params = StdioServerParameters(command=command(), args=entry["args"][1:], env=env)
    async with Client(params) as session:
        stored = await session.call_tool("remember", {"content": f"我在{client}里记住：我每天早上喝一杯拿铁咖啡"})
        assert not stored.is_error, stored.content
        found = await session.call_tool("recall", {"query": "我喝什么咖啡"})
        assert found.structured_content is not None
        assert found.structured_content["hits"][0]["content"] == f"我在{client}里记住：我每天早上喝一杯拿铁咖啡"
        stats = json.loads((await session.read_resource("memory://stats")).contents[0].text)  # type: ignore[union-attr]
    assert stats["db_path"] == str(home / "memory" / "memory.db"), "~ in MCP_MEMORY_DB is the user's home"


def _claude_lines() -> list[list[str]]:
    lines = []
    for title in ("Claude Code", "HTTP mode", "Exposing HTTP mode: tokens and namespaces"):
        for block in _blocks(title, "bash"):
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
    assert len(lines) >= 6
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
        else:
            assert words[words.index("--") + 1 :] == ["uvx", "mcp-memory-server"], words


def _http_entries() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(client, whole config, the memory entry) of every HTTP block."""
    found = []
    for title in ("HTTP mode", "Exposing HTTP mode: tokens and namespaces"):
        for config in _json_blocks(title):
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
    token = "readme-token-" + "7" * 32
    with http_server(tmp_path, cache_dir, env={"MCP_MEMORY_TOKENS": token}) as served:
        for client, _, entry in _http_entries():
            if "headers" not in entry:
                continue  # the loopback examples: the same server without tokens is tested elsewhere
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
