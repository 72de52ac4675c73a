"""docs/seeds.md in step with the code: each of the five design documents has its table of
requirements, every place a row names (`path.py:name` under the package) exists, every test it
cites (`tests/path.py::test_name`) is defined, a requirement outside the product says why, and the
requirements still open (TODO) are counted. Nothing here starts a server."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

from .test_docs import code, sections, tables

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "seeds.md"
PACKAGE = "mcp_memory_server"
SEEDS = ("000", "001", "002", "003", "004")
HEADER = ["requirement", "where it lives", "test that proves it", "deviation (reason, figure)"]
NONE = "—"  # where and test of a requirement outside the product; a deviation that is none
OPEN = "TODO"
# Cells that still say TODO: a requirement not built or not proved yet, or a deviation whose
# reason is not written down. Lower it as rows are filled; 0 once every requirement holds.
OPEN_ROWS = 0

PLACE = re.compile(r"(?P<module>[a-z_][\w/]*)\.py:(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
TEST = re.compile(r"(?P<file>tests/[\w/]+\.py)::(?P<name>test_\w+)(?:\[[^\]]*\])?")


def seed_tables() -> dict[str, list[list[str]]]:
    """Seed number -> the body rows of its section's table."""
    found: dict[str, list[list[str]]] = {}
    for heading, body in sections(PAGE.read_text(encoding="utf-8"), 2).items():
        match = re.fullmatch(r"Seed (\d{3}): .+", heading)
        if match:
            (rows,) = [t for t in tables(body) if t[0] == HEADER] or [[]]
            found[match.group(1)] = rows[1:]
    return found


def rows() -> list[tuple[str, list[str]]]:
    return [(seed, row) for seed, body in seed_tables().items() for row in body]


def only_spans(cell: str) -> bool:
    """True when the cell is nothing but `code spans` separated by commas."""
    return re.sub(r"`[^`\n]+`", "", cell).strip(" ,") == ""


def place_problem(place: str) -> str | None:
    """Why `path.py:name` names nothing in the package, or None when it does. A setting is a
    field of a pydantic model, which the class does not carry as an attribute."""
    match = PLACE.fullmatch(place)
    if match is None:
        return f"`{place}` is not written as path.py:name"
    module_name = f"{PACKAGE}.{match['module'].replace('/', '.')}"
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return f"`{place}`: no module {module_name}"
    parts = match["name"].split(".")
    for depth, part in enumerate(parts):
        if hasattr(target, part):
            target = getattr(target, part)
        elif part in getattr(target, "model_fields", {}):
            if depth == len(parts) - 1:
                return None
            return f"`{place}`: {'.'.join(parts[: depth + 1])} is a setting, with nothing inside it"
        else:
            return f"`{place}`: {'.'.join(parts[: depth + 1])} does not exist"
    return None


@cache
def defined_tests(file: str) -> frozenset[str]:
    """The test functions a test file defines, at its top level or in its classes."""
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    nodes = [*tree.body, *(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body)]
    return frozenset(n.name for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def proof_problem(reference: str) -> str | None:
    match = TEST.fullmatch(reference)
    if match is None:
        return f"`{reference}` is not written as tests/path.py::test_name"
    if not (ROOT / match["file"]).is_file():
        return f"`{reference}`: no file {match['file']}"
    if match["name"] not in defined_tests(match["file"]):
        return f"`{reference}`: {match['file']} defines no {match['name']}"
    return None


def test_every_seed_has_its_table() -> None:
    found = seed_tables()
    assert sorted(found) == list(SEEDS), f"sections found: {sorted(found)}"
    for seed, body in found.items():
        assert body, f"seed {seed}: no table with the header {HEADER}"
        for row in body:
            assert len(row) == len(HEADER) and all(row), f"seed {seed}: a row needs 4 filled cells: {row}"
        requirements = [row[0] for row in body]
        assert len(set(requirements)) == len(requirements), f"seed {seed}: a requirement is listed twice"


def test_every_place_named_exists_in_the_package() -> None:
    problems = []
    for seed, (requirement, where, *_) in rows():
        if where in (NONE, OPEN):
            continue
        if not code(where) or not only_spans(where):
            problems.append(f"seed {seed}, {requirement!r}: write the cell as `path.py:name` spans ({where!r})")
        problems += [f"seed {seed}: {p}" for p in map(place_problem, code(where)) if p]
    assert not problems, "\n".join(problems)


def test_every_test_cited_exists() -> None:
    problems = []
    for seed, (requirement, _, proof, _) in rows():
        if proof in (NONE, OPEN):
            continue
        if not code(proof) or not only_spans(proof):
            problems.append(f"seed {seed}, {requirement!r}: write the cell as `tests/...::test_name` spans")
        problems += [f"seed {seed}: {p}" for p in map(proof_problem, code(proof)) if p]
    assert not problems, "\n".join(problems)


def test_a_requirement_outside_the_product_says_why() -> None:
    for seed, (requirement, where, proof, deviation) in rows():
        if NONE in (where, proof):
            assert where == proof == NONE, f"seed {seed}, {requirement!r}: out of scope means — in both columns"
            assert deviation not in (NONE, OPEN), f"seed {seed}, {requirement!r}: say why it is out of scope"


def test_open_requirements_are_counted() -> None:
    cells = [cell for _, row in rows() for cell in row[1:]]
    open_cells = sum(OPEN in cell for cell in cells)
    assert open_cells <= OPEN_ROWS, f"{open_cells} TODO cells, more than the {OPEN_ROWS} counted"


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("memory/lifecycle.py:cleanup", None),
        ("config/settings.py:Lifecycle.keep_importance", None),  # a pydantic field
        ("sieve/sieve.py:Sieve.finish", None),
        ("memory/lifecycle.py:no_such_function", "no_such_function does not exist"),
        ("memory/no_such_module.py:cleanup", "no module"),
        ("config/settings.py:Lifecycle.keep_importance.real", "keep_importance is a setting"),
        ("lifecycle.cleanup", "not written as"),
    ],
)
def test_the_checks_catch_a_wrong_place(reference: str, problem: str | None) -> None:
    found = place_problem(reference)
    assert found is None if problem is None else (found is not None and problem in found), found


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("tests/test_seeds_doc.py::test_every_seed_has_its_table", None),
        ("tests/sieve/test_value.py::test_decide[7.0-False-False-store]", None),
        ("tests/test_seeds_doc.py::test_nothing_of_the_kind", "defines no test_nothing_of_the_kind"),
        ("tests/no_such_file.py::test_x", "no file"),
        ("tests/sieve/test_value.py:test_decide", "not written as"),
    ],
)
def test_the_checks_catch_a_wrong_test(reference: str, problem: str | None) -> None:
    found = proof_problem(reference)
    assert found is None if problem is None else (found is not None and problem in found), found
