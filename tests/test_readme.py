"""The README is tested: every tool, argument, resource, prompt, command, flag, variable and module
it names exists, and everything that exists is named in it, with the defaults and bounds the code
really has. Nothing here needs the network: the server runs in-process."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import Prompt, Tool

import mcp_memory_server
from mcp_memory_server import cli
from mcp_memory_server.config import Config, default_cache_dir, default_db_path
from mcp_memory_server.segmenter import Segmenter
from mcp_memory_server.server import build_server
from mcp_memory_server.settings import ENV_VARS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PACKAGE = Path(mcp_memory_server.__file__).parent

# ---- reading the README -----------------------------------------------------------------------


def sections(text: str, level: int) -> dict[str, str]:
    """Heading text -> body, for headings of exactly `level`; fenced code is never a heading."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            if hashes <= level and line[hashes : hashes + 1] == " ":
                current = found.setdefault(line[hashes + 1 :].strip(), []) if hashes == level else None
                continue
        if current is not None:
            current.append(line)
    return {title: "\n".join(body) for title, body in found.items()}


def section(title: str) -> str:
    found = sections(README, 2)
    assert title in found, f"the README has no '## {title}' section"
    return found[title]


def named(text: str) -> dict[str, str]:
    """The `### `name`` subsections of a section: name -> body."""
    result = {}
    for heading, body in sections(text, 3).items():
        match = re.fullmatch(r"`([^`]+)`", heading)
        if match:
            result[match.group(1)] = body
    return result


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table outside fenced code, as rows of stripped cells (header first)."""
    found: list[list[list[str]]] = []
    rows: list[list[str]] = []
    fenced = False
    for line in [*text.splitlines(), ""]:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= set("-: ") for cell in cells):  # the |---|---| separator
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def table(text: str, first_header: str) -> list[list[str]]:
    """The body rows of the one table whose first header cell is `first_header`."""
    matching = [rows for rows in tables(text) if rows[0][0] == first_header]
    assert len(matching) == 1, f"expected one table starting with '{first_header}', found {len(matching)}"
    return matching[0][1:]


def code(text: str) -> list[str]:
    """The `code spans` of a table cell or a text (fenced code blocks left out)."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))


def first_code(cell: str) -> str:
    spans = code(cell)
    assert spans, f"no `name` in table cell {cell!r}"
    return spans[0]


def numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


# ---- what the server really offers ------------------------------------------------------------


@dataclass(frozen=True)
class Surface:
    tools: dict[str, Tool]
    resources: set[str]  # static URIs and URI templates
    prompts: dict[str, Prompt]


async def _every_page(fetch: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            return items


@pytest.fixture
async def surface(config: Config, segmenter: Segmenter) -> Surface:
    async with Client(build_server(config, segmenter)) as client:
        tools = await _every_page(client.list_tools, "tools")
        resources = await _every_page(client.list_resources, "resources")
        templates = await _every_page(client.list_resource_templates, "resource_templates")
        prompts = await _every_page(client.list_prompts, "prompts")
    return Surface(
        tools={t.name: t for t in tools},
        resources={str(r.uri) for r in resources} | {t.uri_template for t in templates},
        prompts={p.name: p for p in prompts},
    )


def _bounds(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> set[float]:
    """Every numeric limit in a property's JSON schema, nested ones (list items, anyOf, models
    referenced from `$defs`) included."""
    found: set[float] = set()
    for key, value in schema.items():
        if key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "maxProperties"):
            found.add(float(value))
        elif key == "$ref" and defs is not None:
            found |= _bounds(defs[value.rsplit("/", 1)[-1]], defs)
        elif isinstance(value, dict):
            found |= _bounds(value, defs)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    found |= _bounds(item, defs)
    return found


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """'' for the top-level parser, then each subcommand's parser by name."""
    parser = cli.build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **subcommands.choices}


# ---- the tests ----------------------------------------------------------------------------------


def test_quick_start_names_make_run_and_make_test() -> None:
    quick_start = section("Quick start")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert re.search(rf"\bmake {target}\b", quick_start), f"the quick start does not name make {target}"
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"the Makefile has no '{target}' target"
    assert "http://127.0.0.1:8765/mcp" in quick_start


@pytest.mark.anyio
async def test_the_tools_section_names_exactly_the_servers_tools(surface: Surface) -> None:
    assert set(named(section("Tools"))) == set(surface.tools)


@pytest.mark.anyio
async def test_every_tool_argument_is_documented_with_its_default_and_bounds(surface: Surface) -> None:
    documented = named(section("Tools"))
    for name, tool in surface.tools.items():
        properties: dict[str, Any] = tool.input_schema["properties"]
        required = set(tool.input_schema.get("required", []))
        rows = {first_code(row[0]): row for row in table(documented[name], "Argument")}
        assert set(rows) == set(properties), f"{name}: README arguments differ from the tool's"
        for arg, (_, _, default, bounds, meaning) in rows.items():
            where = f"{name}({arg})"
            if arg in required:
                assert default == "required", f"{where} is required"
            else:
                assert json.loads(first_code(default)) == properties[arg]["default"], f"{where}: wrong default"
            limits = _bounds(properties[arg], tool.input_schema.get("$defs", {}))
            assert numbers(bounds) == limits, f"{where}: bounds {bounds!r} differ from the schema"
            assert meaning, f"{where} has no meaning"


def _nested_objects(schema: dict[str, Any], path: str = "") -> list[tuple[str, set[str]]]:
    """(path, field names) of every object schema below the top level, through properties and
    array items (output schemas are inlined: no $defs)."""
    found: list[tuple[str, set[str]]] = []
    for key, sub in schema.get("properties", {}).items():
        for where, node in ((f"{path}{key}", sub), (f"{path}{key}[]", sub.get("items", {}))):
            if isinstance(node, dict) and node.get("properties"):
                found.append((where, set(node["properties"])))
                found += _nested_objects(node, where + ".")
    return found


@pytest.mark.anyio
async def test_every_tool_output_field_is_documented(surface: Surface) -> None:
    tools_section = section("Tools")
    documented = named(tools_section)
    mentioned = set(code(tools_section))
    for name, tool in surface.tools.items():
        schema = tool.output_schema
        assert schema is not None, f"{name} has no structured output"
        rows = {first_code(row[0]) for row in table(documented[name], "Field")}
        assert rows == set(schema["properties"]), f"{name}: README result fields differ from the tool's"
        # Nested objects (memory objects, hits, score breakdowns) are named somewhere in the section.
        nested = _nested_objects(schema)
        assert nested or name in ("forget", "import_memories"), f"{name}: no nested objects in its output schema"
        for path, fields in nested:
            missing = fields - mentioned
            assert not missing, f"{name}: {path} fields {sorted(missing)} are not in the README"


@pytest.mark.anyio
async def test_the_resources_section_names_exactly_the_servers_resources(surface: Surface) -> None:
    assert set(named(section("Resources"))) == surface.resources


@pytest.mark.anyio
async def test_every_memory_uri_in_the_readme_is_served(surface: Surface) -> None:
    """Example URIs (memory://memories/mem_1) must match a resource or a template; the roadmap
    may name resources that do not exist yet."""
    patterns = [re.compile("^" + re.sub(r"\\\{\w+\\\}", r"[^/]+", re.escape(uri)) + "$") for uri in surface.resources]
    for title, body in sections(README, 2).items():
        if title == "Roadmap":
            continue
        for uri in re.findall(r"memory://[^\s`)\"'|]+", body):
            assert any(p.match(uri) for p in patterns), f"{uri} (section {title}) is not served"


@pytest.mark.anyio
async def test_the_prompts_section_names_exactly_the_servers_prompts_and_arguments(surface: Surface) -> None:
    documented = named(section("Prompts"))
    assert set(documented) == set(surface.prompts)
    for name, prompt in surface.prompts.items():
        rows = {first_code(row[0]): row for row in table(documented[name], "Argument")}
        arguments = {a.name: a for a in prompt.arguments or []}
        assert set(rows) == set(arguments), f"{name}: README arguments differ from the prompt's"
        for arg, row in rows.items():
            assert (row[2] == "required") == bool(arguments[arg].required), f"{name}({arg}): required?"


@pytest.mark.anyio
async def test_inspector_examples_call_real_tools_prompts_and_arguments(surface: Surface) -> None:
    commands = [line for line in README.splitlines() if "@modelcontextprotocol/inspector" in line]
    assert any("--method tools/call" in c for c in commands)
    for command in commands:
        tool = re.search(r"--tool-name (\S+)", command)
        if tool:
            assert tool.group(1) in surface.tools, command
            properties = surface.tools[tool.group(1)].input_schema["properties"]
            for arg in re.findall(r"--tool-arg [\"']?([\w]+)=", command):
                assert arg in properties, f"{tool.group(1)} has no argument {arg}: {command}"
        prompt = re.search(r"--prompt-name (\S+)", command)
        if prompt:
            assert prompt.group(1) in surface.prompts, command
            arguments = {a.name for a in surface.prompts[prompt.group(1)].arguments or []}
            given = set(re.findall(r"[\"'](\w+)=", command.split("--prompt-args", 1)[1]))
            assert given == arguments, command


def test_every_cli_command_and_flag_is_documented() -> None:
    text = section("Command line")
    parsers = _parsers()
    synopsis = next(block for block in text.split("```")[1::2] if "mcp-memory-server" in block)
    documented_commands = {
        words[1]
        for words in (line.split() for line in synopsis.splitlines())
        if len(words) > 1 and words[0] == "mcp-memory-server" and re.fullmatch(r"[a-z][a-z-]*", words[1])
    }
    assert documented_commands == set(parsers) - {""}
    for command in documented_commands:
        assert f"`mcp-memory-server {command}" in text, f"{command} is not described"
    options = {
        option
        for parser in parsers.values()
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    for option in options:
        assert re.search(rf"`{re.escape(option)}(?![\w-])", text), f"{option} is not in the README"
    flags = {span.split()[0] for row in table(text, "Flag") for span in code(row[0])}
    assert flags <= options, f"the README documents flags that do not exist: {sorted(flags - options)}"


def test_the_configuration_table_lists_every_variable_with_its_default() -> None:
    rows = table(section("Configuration"), "Variable")
    names = [first_code(row[0]) for row in rows]
    assert sorted(names) == sorted(v.name for v in ENV_VARS), "README variables differ from config.ENV_VARS"
    defaults = {first_code(row[0]): row[1] for row in rows}
    for var in ENV_VARS:
        if var.default == "":
            assert defaults[var.name] == "empty", f"{var.name}: README default should read 'empty'"
        elif not var.default.startswith(("platform", "(")):  # paths: own section; "(none)": said in words
            assert code(defaults[var.name]) == [var.default], f"{var.name}: README default differs"


def test_where_the_data_lives_matches_the_code() -> None:
    text = section("Where the data lives")
    for spelled in (
        "~/.local/share/mcp-memory-server/memory.db",
        "$XDG_DATA_HOME",
        "~/Library/Application Support/mcp-memory-server/memory.db",
        r"%LOCALAPPDATA%\mcp-memory-server\memory.db",
        "memory.db-wal",
    ):
        assert spelled in text
    if sys.platform.startswith("linux"):
        for path in (default_db_path({}), default_cache_dir({})):
            assert "~/" + path.relative_to(Path.home()).as_posix() in text


def test_the_module_map_names_every_module() -> None:
    documented = {span for span in code(section("Development")) if re.fullmatch(r"\w+\.py", span)}
    assert documented == {path.name for path in PACKAGE.glob("*.py")}
