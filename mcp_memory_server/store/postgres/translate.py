"""The store's SQL, written once in SQLite's dialect, rewritten for PostgreSQL.

The statements of store/store.py, store/tx.py and the modules that keep their own tables stay one text each;
`translate` turns one into PostgreSQL's form (and is cached, as statements repeat):

- parameters: `?` and `?N` become psycopg's `%s` (a `?N` used twice gets its value twice), `:name`
  becomes `%(name)s`; a literal `%` is doubled;
- `json_each(X)` over a JSON array becomes `json_array_elements_text(X)`, its column still `value`;
- two-argument `max(a, b)` / `min(a, b)` become `greatest` / `least`;
- `LIKE` becomes `ILIKE` (SQLite's LIKE ignores the case of ASCII letters);
- `IS ?` and `IS NOT ?` (SQLite's null-safe comparisons) become `IS [NOT] DISTINCT FROM`;
- an empty `IN ()` list becomes `= ANY ('{}')` (an empty array of the left side's type);
- SQLite's planner hints keep their meaning: a unary `+` before a (text) column, which keeps its
  index out of the plan, becomes `(column || '')`, which does the same (without it, PostgreSQL
  estimating from stale statistics after a bulk import scanned a whole namespace's index where
  the primary key finds 50 rows); CROSS JOIN ... ON becomes JOIN, `ON 1` `ON true`.

What has no faithful rewrite (FTS5's MATCH and bm25(), PRAGMA, sqlite_sequence, INSERT OR ...)
is refused with `UntranslatableSql`, so that a statement written for SQLite alone fails in the
PostgreSQL tests instead of misbehaving; those places ask `Conn.postgres` and say it both ways."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Translated", "UntranslatableSql", "translate"]


class UntranslatableSql(ValueError):
    """A statement uses SQLite-only SQL that has no rewrite here."""


@dataclass(frozen=True, slots=True)
class Translated:
    sql: str
    # For `?N` parameters: which argument goes to each `%s`, in order (None: as given).
    order: tuple[int, ...] | None
    named: bool

    def arguments(self, args: Sequence[Any] | Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        if self.named or self.order is None:
            return args
        assert not isinstance(args, Mapping)
        return [args[i] for i in self.order]


_REFUSED = re.compile(
    r"\bMATCH\b|\bbm25\s*\(|\bPRAGMA\b|\bsqlite_\w+|\bINSERT\s+OR\b|\bjson_extract\b|\bGLOB\b|\blast_insert_rowid\b",
    re.IGNORECASE,
)
_HINT = re.compile(r"(\b(?:WHERE|AND|OR|ON)\s+|[(,=]\s*)\+([A-Za-z_][\w.]*)", re.IGNORECASE)
_ON_ONE = re.compile(r"\bON 1\b")
_IS_PARAM = re.compile(r"\bIS (NOT )?(?=\?|:[A-Za-z_])")
_EMPTY_IN = re.compile(r"\b(NOT )?IN \(\)")
_CROSS_ON = re.compile(r"\bCROSS JOIN (\w+(?: AS)? \w+) ON\b")
_LIKE = re.compile(r"\bLIKE\b")
_EACH = re.compile(r"\bjson_each\(([^()]*)\)(?:\s+AS\s+(\w+))?", re.IGNORECASE)
_EXTREME = re.compile(r"\b(max|min)\(", re.IGNORECASE)
# Outside string literals: `?`, `?N`, `:name` (not `::type`), `%`.
_PARAM = re.compile(r"'(?:[^']|'')*'|\?(\d*)|(?<![:\w]):([A-Za-z_]\w*)|%")


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> Translated:
    """`sql` (SQLite's dialect) in PostgreSQL's; raises UntranslatableSql."""
    if found := _REFUSED.search(sql):
        raise UntranslatableSql(f"{found.group()!r} has no PostgreSQL form here: {sql[:200]}")
    sql = _HINT.sub(r"\1(\2 || '')", sql)
    sql = _ON_ONE.sub("ON true", sql)
    sql = _CROSS_ON.sub(r"JOIN \1 ON", sql)
    sql = _IS_PARAM.sub(lambda m: "IS DISTINCT FROM " if m.group(1) else "IS NOT DISTINCT FROM ", sql)
    sql = _EMPTY_IN.sub(lambda m: "<> ALL ('{}')" if m.group(1) else "= ANY ('{}')", sql)
    sql = _LIKE.sub("ILIKE", sql)
    sql = _EACH.sub(_each, sql)
    sql = _extremes(sql)
    order: list[int] = []
    positional = numbered = named = False

    def param(m: re.Match[str]) -> str:
        nonlocal positional, numbered, named
        text = m.group()
        if text.startswith("'"):
            return text.replace("%", "%%")
        if text == "%":
            return "%%"
        if m.group(2) is not None:
            named = True
            return f"%({m.group(2)})s"
        if m.group(1):
            numbered = True
            order.append(int(m.group(1)) - 1)
        else:
            order.append(len(order))
            positional = True
        return "%s"

    sql = _PARAM.sub(param, sql)
    if sum((positional, numbered, named)) > 1:
        raise UntranslatableSql(f"a statement mixes ?, ?N and :name parameters: {sql[:200]}")
    return Translated(sql, tuple(order) if numbered else None, named)


def _each(m: re.Match[str]) -> str:
    return f"json_array_elements_text(CAST({m.group(1)} AS json)) AS {m.group(2) or '_each'} (value)"


def _extremes(sql: str) -> str:
    """Two-argument max/min (SQLite's scalar functions) as greatest/least; the aggregates stay."""
    out: list[str] = []
    at = 0
    for m in _EXTREME.finditer(sql):
        if m.start() < at:
            continue
        depth, comma, i = 0, False, m.end()
        while i < len(sql):
            c = sql[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                comma = True
            elif c == "'":
                i = sql.index("'", i + 1)
            i += 1
        if comma:
            out.append(sql[at : m.start()])
            out.append("greatest(" if m.group(1).lower() == "max" else "least(")
            at = m.end()
    out.append(sql[at:])
    return "".join(out)


_PHRASE = re.compile(r'"((?:[^"]|"")*)"(\*?)')


def tsquery(match: str) -> str:
    """An FTS5 expression of tokens.fts_query (quoted phrases, a `*` for a prefix, joined by OR)
    as the same query in to_tsquery's syntax: a phrase's words follow each other (<->), `:*`
    marks a prefix, `|` is or. Each word is quoted, so nothing in it is tsquery syntax."""
    parts: list[str] = []
    for m in _PHRASE.finditer(match):
        words = [w.replace("\\", "\\\\").replace("'", "''") for w in m.group(1).replace('""', '"').split()]
        if not words:
            continue
        if len(words) == 1:
            parts.append(f"'{words[0]}'{':*' if m.group(2) else ''}")
        else:
            parts.append("(" + " <-> ".join(f"'{w}'" for w in words) + ")")
    return " | ".join(parts)
