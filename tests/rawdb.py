"""Direct SQL against a test's database, whichever backend its Config names (an SQLite file or a
PostgreSQL URL): what tests use to look under the store, or to set up a state it would not make."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from mcp_memory_server.config import Config
from mcp_memory_server.store.postgres.translate import translate


def rows(config: Config, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one statement (in SQLite's dialect, rewritten for PostgreSQL as the store's
    are), committed."""
    if config.db_url is not None:
        t = translate(sql)
        with psycopg.connect(config.db_url, autocommit=True) as conn:
            cur = conn.execute(t.sql, list(t.arguments(params)))  # type: ignore[arg-type]
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
        with psycopg.connect(config.db_url) as conn:  # commits at the end of the block
            for statement in statements:
                conn.execute(translate(statement).sql)  # type: ignore[arg-type]
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
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]
