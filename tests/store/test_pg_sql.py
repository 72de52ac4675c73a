"""The SQLite-to-PostgreSQL rewrite of the store's statements (store/postgres/translate.py): each rule on its own,
the statements it must refuse, the two schemas' one migration story, and every rewritten form
accepted by a real PostgreSQL server."""

from __future__ import annotations

import psycopg
import pytest

from mcp_memory_server.store.postgres import schema as pg_schema
from mcp_memory_server.store.postgres.translate import UntranslatableSql, translate, tsquery
from mcp_memory_server.store.sqlite import schema
from mcp_memory_server.text.tokens import fts_query


def test_parameters_become_psycopgs() -> None:
    t = translate("SELECT * FROM memories WHERE namespace = ? AND seq = ?")
    assert t.sql == "SELECT * FROM memories WHERE namespace = %s AND seq = %s"
    assert t.arguments(("a", 1)) == ("a", 1)


def test_numbered_parameters_repeat_their_values() -> None:
    t = translate("SELECT ?2 WHERE ?1 = ?2 OR ?1 = 'x?1'")
    assert t.sql == "SELECT %s WHERE %s = %s OR %s = 'x?1'"  # a ? inside a literal stays
    assert t.arguments(["ns", "value"]) == ["value", "ns", "value", "ns"]


def test_named_parameters_and_casts() -> None:
    t = translate("SELECT :ns, CAST(x AS TEXT), y::text WHERE a = :low")
    assert t.sql == "SELECT %(ns)s, CAST(x AS TEXT), y::text WHERE a = %(low)s"
    assert t.arguments({"ns": 1, "low": 2}) == {"ns": 1, "low": 2}


def test_percent_signs_are_doubled_in_literals_and_out() -> None:
    assert translate("SELECT 1 WHERE content LIKE '%东京%' AND x % 2 = ?").sql == (
        "SELECT 1 WHERE content ILIKE '%%东京%%' AND x %% 2 = %s"
    )


def test_mixed_parameter_styles_are_refused() -> None:
    with pytest.raises(UntranslatableSql, match="mixes"):
        translate("SELECT ? WHERE a = :name")


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        (
            "SELECT seq FROM m WHERE +m.namespace = ? AND +namespace = ?",
            "SELECT seq FROM m WHERE (m.namespace || '') = %s AND (namespace || '') = %s",
        ),
        (
            "SELECT 1 WHERE a IS ? AND b IS NOT ? AND c IS NOT NULL",
            "SELECT 1 WHERE a IS NOT DISTINCT FROM %s AND b IS DISTINCT FROM %s AND c IS NOT NULL",
        ),
        ("UPDATE m SET n = n + ? WHERE seq = ?", "UPDATE m SET n = n + %s WHERE seq = %s"),
        (
            "SELECT a FROM (SELECT 1 AS a) AS c LEFT JOIN t ON 1",
            "SELECT a FROM (SELECT 1 AS a) AS c LEFT JOIN t ON true",
        ),
        (
            "SELECT 1 FROM m CROSS JOIN memory_fts f ON f.rowid = m.seq",
            "SELECT 1 FROM m JOIN memory_fts f ON f.rowid = m.seq",
        ),
        ("SELECT 1 WHERE seq IN () OR key NOT IN ()", "SELECT 1 WHERE seq = ANY ('{}') OR key <> ALL ('{}')"),
        (
            "SELECT max(a, b), min(c, (SELECT max(d) FROM t)), max(e)",
            "SELECT greatest(a, b), least(c, (SELECT max(d) FROM t)), max(e)",
        ),
        (
            "SELECT max(coalesce((SELECT max(seq) FROM m), 0), 1)",
            "SELECT greatest(coalesce((SELECT max(seq) FROM m), 0), 1)",
        ),
        (
            "SELECT value FROM json_each(?)",
            "SELECT value FROM json_array_elements_text(CAST(%s AS json)) AS _each (value)",
        ),
        (
            "SELECT 1 FROM json_each(?) AS want WHERE want.value NOT IN (SELECT value FROM json_each(m.tags))",
            "SELECT 1 FROM json_array_elements_text(CAST(%s AS json)) AS want (value) WHERE want.value NOT IN"
            " (SELECT value FROM json_array_elements_text(CAST(m.tags AS json)) AS _each (value))",
        ),
    ],
)
def test_rewrites(sqlite: str, postgres: str) -> None:
    assert translate(sqlite).sql == postgres


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?",
        "SELECT bm25(memory_fts) FROM memory_fts",
        "PRAGMA journal_mode",
        "SELECT seq FROM sqlite_sequence",
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        "SELECT json_extract(tags, '$[0]') FROM memories",
    ],
)
def test_sqlite_only_statements_are_refused(statement: str) -> None:
    with pytest.raises(UntranslatableSql, match="no PostgreSQL form"):
        translate(statement)


def test_fts_queries_become_tsqueries() -> None:
    assert tsquery('"咖啡"') == "'咖啡'"
    assert tsquery('"run"* OR "西湖 湖边"') == "'run':* | ('西湖' <-> '湖边')"
    assert tsquery('"it\'s ""quoted"""') == "('it''s' <-> '\"quoted\"')"
    assert tsquery("") == ""
    assert tsquery(fts_query(["咖啡", "coffee", "周末跑步"])).count("|") == 2


def test_both_backends_share_one_migration_story() -> None:
    assert [(v, n) for v, n, _ in pg_schema.MIGRATIONS] == [(v, n) for v, n, _ in schema.MIGRATIONS]


def test_postgresql_accepts_every_rewrite(pg_db: str) -> None:
    """The rewritten forms run on a real server, the schema's tables included."""
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for _, _, statements in pg_schema.MIGRATIONS:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]

        def rows(sql: str, args: tuple[object, ...] | dict[str, object] = ()) -> list[tuple[object, ...]]:
            t = translate(sql)
            cur = conn.execute(t.sql, t.arguments(args))  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []

        rows("INSERT INTO meta VALUES (?, ?)", ("a", "x"))
        assert rows("SELECT max(?, 2), min(3, ?)", (5, 1)) == [(5, 1)]
        assert rows("SELECT CAST(value AS BIGINT) FROM json_each(?) ORDER BY 1", ("[3, 1, 2]",)) == [(1,), (2,), (3,)]
        assert rows("SELECT name FROM meta WHERE name IN () OR name NOT IN ()") == [("a",)]
        assert rows("SELECT ?1 || ?2 || ?1", ("x", "y")) == [("xyx",)]
        assert rows("SELECT 1 WHERE 'Ünïcode 东京' LIKE :p", {"p": "%ünï%"}) == [(1,)]  # case folded, as ILIKE
        assert rows(
            "SELECT 1 FROM json_each(?) AS want WHERE want.value NOT IN (SELECT value FROM json_each(?))",
            ('["a", "b"]', '["a"]'),
        ) == [(1,)]
        rows(
            "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (1, '周末 跑步 西湖', '', '', 'fact')"
        )
        match = tsquery(fts_query(["跑步"]))
        assert rows("SELECT rowid FROM memory_fts WHERE terms @@ to_tsquery('simple', ?)", (match,)) == [(1,)]
