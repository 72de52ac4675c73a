"""Direct SQL against a test's database, whichever backend its Config names (an SQLite file or a
PostgreSQL URL): what tests use to look under the store, or to set up a state it would not make."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from mcp_memory_server.config import Config
from mcp_memory_server.store.postgres.backend import native_as_text


def _pg(sql: str) -> str:
    """A test's statement, written with `?` parameters and SQLite's case-blind LIKE, as the same
    statement for PostgreSQL: the tests' few simple statements only (the store's own are written
    in each dialect)."""
    return sql.replace("?", "%s").replace(" LIKE ", " ILIKE ")


def _connect(url: str, autocommit: bool = True) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection that reads times and JSON as the store's does (as the text SQLite keeps)."""
    conn = psycopg.connect(url, autocommit=autocommit)
    native_as_text(conn)
    return conn


def rows(config: Config, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one statement, committed."""
    if config.db_url is not None:
        with _connect(config.db_url) as conn:
            cur = conn.execute(_pg(sql), params or None)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []
    db = sqlite3.connect(config.db_path)
    try:
        with db:
            return db.execute(sql, params).fetchall()
    finally:
        db.close()


def value(config: Config, sql: str, params: tuple[Any, ...] = ()) -> Any:
    return rows(config, sql, params)[0][0]


def execute(config: Config, *statements: str) -> None:
    """Run statements in one transaction."""
    if config.db_url is not None:
        with _connect(config.db_url, autocommit=False) as conn:  # commits at the end of the block
            for statement in statements:
                conn.execute(_pg(statement))  # type: ignore[arg-type]
        return
    db = sqlite3.connect(config.db_path)
    try:
        with db:
            for statement in statements:
                db.execute(statement)
    finally:
        db.close()


def tables(config: Config) -> list[str]:
    """The database's tables, by name (SQLite's full-text shadow tables included)."""
    if config.db_url is not None:
        sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    with_rows = rows(config, sql) if config.db_url is None else _pg_rows(config.db_url, sql)
    return [r[0] for r in with_rows]


def _pg_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with _connect(url) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]
