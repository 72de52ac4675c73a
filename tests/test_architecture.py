"""The module map stays honest: imports run one way, and a few libraries have one owner each."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_memory_server

PACKAGE = Path(mcp_memory_server.__file__).parent

# A module may import only modules of a lower rank (SPEC/STYLE: cli -> server -> services -> store
# -> {models, errors, tokens, config}).
RANKS = {
    "errors": 0,
    "arg_errors": 0,
    "stopwords": 0,
    "models": 0,
    "schema": 0,
    "segmenter": 0,
    "vocabulary": 0,
    "postings": 0,
    "keyword_query": 0,
    "lazy_pattern": 0,
    "signal_patterns": 1,
    "redact": 1,
    "access": 3,
    "bm25": 1,
    "settings": 1,
    "config": 2,
    "database": 1,
    "sqlite_backend": 2,
    "pg_sql": 0,
    "pg_schema": 1,
    "pg": 2,
    "draft_rows": 2,
    "backup": 1,
    "tracking": 3,
    "tokens": 1,
    "rows": 2,
    "validate": 3,
    "tx": 3,
    "changeset": 1,
    "live_index": 3,
    "signals": 3,
    "store": 4,
    "archive": 4,
    "value": 4,
    "retrieve": 5,
    "render": 5,
    "service": 6,
    "lifecycle": 6,
    "prompts": 6,
    "changes": 7,
    "logbook": 4,
    "sieve": 7,
    "profiles": 6,
    "profile_scrub": 2,
    "strategy": 3,
    "sessions": 7,
    "session_tools": 10,
    "profile_tools": 10,
    "__init__": 7,
    "spaces": 8,
    "views": 8,
    "app": 9,
    "notify": 8,
    "tools": 10,
    "resources": 10,
    "prompt_handlers": 10,
    "prompt_set": 1,
    "dashboard_api": 11,
    "dashboard": 12,
    "transports": 13,
    "server": 14,
    "cli": 15,
    "__main__": 16,
    "portable_format": 8,
    "portable": 9,
    "mcplog": 9,
    "foreign": 4,
    "import_limits": 3,
    "importing": 10,
    "progress": 0,
    "import_tools": 11,
}
# The MCP edge: the only modules that import the SDK.
MCP_EDGE = {
    "app",
    "tools",
    "session_tools",
    "profile_tools",
    "resources",
    "prompt_handlers",
    "transports",
    "server",
    "notify",
    "mcplog",
    "import_tools",
}
# Third-party libraries that belong to exactly one module.
OWNERS = {
    "mcp": MCP_EDGE,
    "mcp_types": MCP_EDGE,
    "aiosqlite": {"sqlite_backend", "backup"},
    "sqlite3": {"sqlite_backend"},
    "psycopg": {"pg"},
    "psycopg_pool": {"pg"},
    "jieba": {"segmenter"},
    "numpy": {"bm25", "postings", "vocabulary"},
    "snowballstemmer": {"tokens"},
    "uvicorn": {"transports"},
    "starlette": {"dashboard"},
}


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(internal modules, top-level external packages) imported by a module."""
    internal: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.module:
                    internal.add(node.module.split(".")[0])
                else:
                    internal.update("__init__" if a.name == "__version__" else a.name for a in node.names)
            elif node.module:
                external.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            external.update(a.name.split(".")[0] for a in node.names)
    return internal, external


def test_every_module_has_a_rank() -> None:
    assert {p.stem for p in PACKAGE.glob("*.py")} == set(RANKS)


def test_imports_run_one_way() -> None:
    wrong = []
    for path in PACKAGE.glob("*.py"):
        internal, _ = _imports(path)
        for target in internal:
            if RANKS[target] >= RANKS[path.stem]:
                wrong.append(f"{path.stem} imports {target}")
    assert not wrong, "imports against the layering: " + ", ".join(sorted(wrong))


def test_libraries_have_one_owner() -> None:
    wrong = []
    for path in PACKAGE.glob("*.py"):
        _, external = _imports(path)
        for library, owners in OWNERS.items():
            if library in external and path.stem not in owners:
                wrong.append(f"{path.stem} imports {library}")
    assert not wrong, ", ".join(sorted(wrong))


def test_modules_stay_small() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")}
    assert all(n <= 450 for n in sizes.values()), sizes


def test_public_names_are_complete() -> None:
    for name in mcp_memory_server.__all__:
        assert hasattr(mcp_memory_server, name), name
    exported = {n for n in dir(mcp_memory_server) if not n.startswith("_")}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert exported - modules - {"annotations"} <= set(mcp_memory_server.__all__)
