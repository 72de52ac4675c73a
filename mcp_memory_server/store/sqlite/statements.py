"""The store's statements in SQLite's dialect (see store/statements.py for what each does).

A unary `+` before a column keeps its index out of SQLite's plan where the primary key finds the
rows (a namespace's index would otherwise be scanned). Lists of values arrive as one JSON array,
read with json_each; the full-text index is an FTS5 table ranked by bm25()."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from ..backend import Conn
from ..draft_values import DRAFT_COLUMNS, FTS_ROW, MEMORY_ROW, MEMORY_WIDTH
from ..rows import COLUMNS, HISTORY_COLUMNS, M_COLUMNS, SESSION_COLUMNS, scalar
from ..statements import Row, Statements

__all__ = ["SqliteStatements"]

_LIST = "(SELECT value FROM json_each(?))"  # the values of a JSON array parameter
_SEQS = "(SELECT CAST(value AS INTEGER) FROM json_each(?))"
BM25 = "bm25(memory_fts, 1.0, 1.0, 1.0, 0.5)"  # content, key, tags, category


@functools.lru_cache(maxsize=256)
def _search_rows(count: int, where: str) -> str:
    # Seqs as `?` each: SQLite looks each one up by its primary key (the text is cached by the
    # driver's statement cache, so one per count).
    return (
        "SELECT c.newest, c.oldest, m.* FROM (SELECT (SELECT max(change) FROM memory_changes) AS newest,"
        " (SELECT min(change) FROM memory_changes) AS oldest) AS c"
        f" LEFT JOIN (SELECT {M_COLUMNS} FROM memories m WHERE +m.namespace = ?"
        f" AND m.seq IN ({','.join('?' * count)}){where}) AS m ON 1"
    )


@functools.lru_cache(maxsize=16)
def _insert_rows(table: str, columns: str, width: int, rows: int) -> str:
    values = "(" + ", ".join("?" * width) + ")"
    return f"INSERT INTO {table} ({columns}) VALUES " + ", ".join([values] * rows)


class SqliteStatements(Statements):
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    migration_applied = "SELECT 1 FROM schema_migrations WHERE version = ?"
    migration_record = "INSERT INTO schema_migrations VALUES (?, ?, ?)"
    schema_version = "SELECT max(version) FROM schema_migrations"
    index_version = "SELECT value FROM meta WHERE name = 'index_version'"
    index_version_first = "INSERT INTO meta VALUES ('index_version', ?)"
    index_version_set = (
        "INSERT INTO meta VALUES ('index_version', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
    )

    fts_clear = "DELETE FROM memory_fts"
    fts_sources = "SELECT seq, content, key, tags, category FROM memories"
    fts_insert = "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (?, ?, ?, ?, ?)"
    fts_update = "UPDATE memory_fts SET content = ?, key = ?, tags = ?, category = ? WHERE rowid = ?"
    log_everything = "INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories"

    changes_bounds = "SELECT (SELECT max(change) FROM memory_changes), (SELECT min(change) FROM memory_changes)"
    changed_since = "SELECT DISTINCT seq FROM memory_changes WHERE change > ? AND namespace = ?"
    terms_of = (
        "SELECT m.seq, f.content, f.key, f.tags FROM memories m CROSS JOIN memory_fts f ON f.rowid = m.seq"
        f" WHERE +m.namespace = ? AND m.seq IN {_SEQS}"
    )
    # Memories in seq order, each looked up in the full-text table by rowid (CROSS JOIN fixes the
    # order): the other way round SQLite sorted every remaining row for each chunk.
    terms_after = (
        "SELECT m.seq, f.content, f.key, f.tags FROM memories m CROSS JOIN memory_fts f ON f.rowid = m.seq"
        " WHERE +m.namespace = ? AND m.seq > ? ORDER BY m.seq LIMIT ?"
    )
    log_seqs = "INSERT INTO memory_changes (namespace, seq) SELECT ?, value FROM json_each(?) RETURNING change"
    log_range = (
        "INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories WHERE seq BETWEEN ? AND ?"
    )
    log_one = "INSERT INTO memory_changes (namespace, seq) VALUES (?, ?)"
    prune_log = "DELETE FROM memory_changes WHERE change <= (SELECT max(change) FROM memory_changes) - ?"

    get = f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND number = ?"
    by_key = f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND key = ?"
    taken_keys = f"SELECT key FROM memories WHERE namespace = ? AND key IN {_LIST}"
    hashes = f"SELECT DISTINCT content_hash FROM memories WHERE namespace = ? AND content_hash IN {_LIST}"
    by_hash = f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND category = ? AND content_hash = ?"
    _insert_memory = (
        f"INSERT INTO memories (number, namespace, {DRAFT_COLUMNS}, content_hash, created_at, updated_at,"
        " last_accessed, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) RETURNING seq"
    )
    _FLOOR = "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE name = 'number_floor'), 0)"
    _take_numbers = (
        f"INSERT INTO memory_numbers (namespace, last) VALUES (?, {_FLOOR} + ?)"
        " ON CONFLICT (namespace) DO UPDATE SET last = last + ? RETURNING last"
    )
    numbers_after = (
        f"INSERT INTO memory_numbers (namespace, last) VALUES (?, max(?, {_FLOOR}))"
        " ON CONFLICT (namespace) DO UPDATE SET last = max(last, excluded.last)"
    )
    categories_of = "SELECT seq, number, category, session_id FROM memories WHERE namespace = ? AND number = ?"
    keep_history = (
        "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
        " reason, changed_at) SELECT seq, content, key, category, importance, confidence, tags, source, ?, ?"
        " FROM memories WHERE seq = ?"
    )
    profile_changed_since = (
        f"SELECT 1 FROM memories WHERE namespace = ? AND category IN {_LIST} AND updated_at > ? LIMIT 1"
    )
    profile_stale_if = (
        f"UPDATE profile SET stale = 1 WHERE namespace = ? AND stale = 0 AND (? IN {_LIST}"
        f" OR (SELECT category FROM memories WHERE seq = ?) IN {_LIST})"
    )
    update_memory = (
        "UPDATE memories SET content = ?, key = ?, category = ?, tier = ?, importance = ?, confidence = ?,"
        " source = ?, tags = ?, session_id = coalesce(?, session_id), client = coalesce(?, client),"
        " content_hash = ?, updated_at = ?, last_accessed = ?, access_count = access_count + 1"
        " WHERE seq = ? AND +namespace = ?"
    )
    _SEQ_OF = "(SELECT seq FROM memories WHERE namespace = ? AND number = ?)"
    history = f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq = {_SEQ_OF} ORDER BY seq"
    drop_history = f"DELETE FROM memory_history WHERE memory_seq = {_SEQ_OF}"
    core_lines = (
        "SELECT category, content, substr(created_at, 1, 10) AS day, number FROM memories"
        " WHERE namespace = ? AND tier = 'core' AND category != 'profile' ORDER BY created_at, seq"
    )
    live_of = f"SELECT seq, number, category, session_id FROM memories WHERE namespace = ? AND number IN {_SEQS}"
    delete_history = f"DELETE FROM memory_history WHERE memory_seq IN {_SEQS}"
    delete_fts = f"DELETE FROM memory_fts WHERE rowid IN {_SEQS}"
    delete_memories = f"DELETE FROM memories WHERE seq IN {_SEQS}"
    archived_of = f"SELECT seq, number FROM memory_archive WHERE namespace = ? AND number IN {_SEQS}"
    delete_archived_history = f"DELETE FROM memory_history_archive WHERE memory_seq IN {_SEQS}"
    delete_archived = f"DELETE FROM memory_archive WHERE seq IN {_SEQS}"
    log_rows = (
        f"SELECT number, category, session_id, 0 FROM memories WHERE seq IN {_SEQS}"
        f" UNION ALL SELECT number, category, session_id, 1 FROM memory_archive WHERE seq IN {_SEQS}"
    )
    touch = "UPDATE memories SET access_count = access_count + ?, last_accessed = ? WHERE seq = ? AND +namespace = ?"
    touch_number = (
        "UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE namespace = ? AND number = ?"
    )
    touch_sessions = (
        f"UPDATE sessions SET updated_at = max(updated_at, ?) WHERE namespace = ? AND session_id IN {_LIST}"
    )

    count_by_category = "SELECT category, count(*) FROM memories WHERE namespace = ? GROUP BY category ORDER BY 2 DESC"
    count_by_tier = "SELECT tier, count(*) FROM memories WHERE namespace = ? GROUP BY tier"
    oldest = "SELECT min(created_at) FROM memories WHERE namespace = ?"
    newest = "SELECT max(created_at) FROM memories WHERE namespace = ?"
    session_count = "SELECT count(*) FROM sessions WHERE namespace = ?"
    archive_count = "SELECT count(*) FROM memory_archive WHERE namespace = ?"
    cleaned_count = (
        "SELECT count(*) FROM memory_archive"
        " WHERE namespace = ? AND archive_reason LIKE 'cleanup:%' AND archived_at >= ?"
    )
    cleaned_latest = (
        "SELECT number, content, archived_at, archive_reason FROM memory_archive WHERE namespace = ?"
        " AND archive_reason LIKE 'cleanup:%' AND archived_at >= ? ORDER BY archived_at DESC, number DESC LIMIT ?"
    )
    session = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = ? AND session_id = ?"

    touch_session = (
        "INSERT INTO sessions (namespace, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (namespace, session_id) DO UPDATE SET updated_at = excluded.updated_at"
    )
    set_topic = "UPDATE sessions SET current_topic = ? WHERE namespace = ? AND session_id = ?"
    update_session = (
        "UPDATE sessions SET turn_count = turn_count + 1, current_topic = coalesce(?, current_topic),"
        " last_emotion = coalesce(?, last_emotion), context_variables = coalesce(?, context_variables)"
        " WHERE namespace = ? AND session_id = ?"
    )
    session_variables = "SELECT context_variables FROM sessions WHERE namespace = ? AND session_id = ?"
    add_session = (
        f"INSERT INTO sessions (namespace, {SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (namespace, session_id) DO NOTHING RETURNING 1"
    )
    idle_sessions = (
        "SELECT session_id, updated_at FROM sessions WHERE namespace = ? AND updated_at < ? ORDER BY updated_at"
    )
    end_session = "DELETE FROM sessions WHERE namespace = ? AND session_id = ?"

    profile_stale = "UPDATE profile SET stale = 1 WHERE namespace = ? AND stale = 0"

    keyed_memories = "SELECT seq, number, namespace, key, updated_at FROM memories WHERE key IS NOT NULL"
    merge_into_history = (
        "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
        " reason, changed_at) SELECT ?, content, key, category, importance, confidence, tags, source, 'merged', ?"
        " FROM memories WHERE seq = ?"
    )
    adopt_history = "UPDATE memory_history SET memory_seq = ? WHERE memory_seq = ?"
    set_key = "UPDATE memories SET key = ? WHERE seq = ?"
    keyed_archived = "SELECT seq, key FROM memory_archive WHERE key IS NOT NULL"
    set_archived_key = "UPDATE memory_archive SET key = ? WHERE seq = ?"
    profile = "SELECT data, manual, stale FROM profile WHERE namespace = ?"
    profile_data = "SELECT data FROM profile WHERE namespace = ?"
    profile_scrubbed = "UPDATE profile SET data = ?, stale = 1 WHERE namespace = ?"
    profile_manual = "SELECT manual FROM profile WHERE namespace = ?"
    profile_save = (
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (?, ?, ?, 0, ?)"
        " ON CONFLICT (namespace) DO UPDATE SET data = excluded.data, manual = excluded.manual, stale = 0,"
        " updated_at = excluded.updated_at"
    )
    profile_save_manual = (
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (?, ?, ?, 1, ?)"
        " ON CONFLICT (namespace) DO UPDATE SET manual = excluded.manual, stale = 1, updated_at = excluded.updated_at"
    )
    profile_sources = (
        f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND tier = 'core'"
        " AND category NOT IN ('profile', 'context') ORDER BY importance DESC, updated_at DESC, seq LIMIT ?"
    )
    profile_live_ids = f"SELECT 'mem_' || number FROM memories WHERE namespace = ? AND 'mem_' || number IN {_LIST}"
    key_seqs = "SELECT seq FROM memories WHERE namespace = ? AND key = ?"
    key_namespaces = "SELECT DISTINCT namespace FROM memories WHERE key = ?"

    archive_history = (
        f"INSERT INTO memory_history_archive ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history"
        f" WHERE memory_seq IN {_SEQS} ORDER BY seq"
    )
    restore_memories = (
        f"INSERT INTO memories ({MEMORY_ROW}) SELECT {MEMORY_ROW.replace('last_accessed', '?')} FROM memory_archive"
        f" WHERE seq IN {_SEQS} AND +namespace = ?"
    )
    restore_sources = (
        f"SELECT seq, content, key, tags, category FROM memory_archive WHERE seq IN {_SEQS} AND +namespace = ?"
    )
    restore_history = (
        f"INSERT INTO memory_history ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history_archive"
        f" WHERE memory_seq IN {_SEQS} ORDER BY seq"
    )
    archived_keys = f"SELECT seq, number, key FROM memory_archive WHERE number IN {_SEQS} AND namespace = ?"
    live_numbers = f"SELECT number FROM memories WHERE number IN {_SEQS} AND namespace = ?"
    key_holders = f"SELECT key, number FROM memories WHERE namespace = ? AND key IN {_LIST}"
    live_count = "SELECT count(*) FROM memories WHERE namespace = ?"
    cleanup_rows = """WITH copies AS (
               SELECT category, content_hash FROM memories WHERE namespace = :ns
               GROUP BY category, content_hash HAVING count(*) > 1
           ), keepers AS (
               SELECT m.seq, first_value(m.number) OVER (
                   PARTITION BY m.category, m.content_hash
                   ORDER BY m.importance DESC, m.access_count DESC, m.key IS NULL, m.updated_at DESC, m.seq DESC
               ) AS keeper
               FROM copies c JOIN memories m
               ON m.namespace = :ns AND m.category = c.category AND m.content_hash = c.content_hash
           )
           SELECT seq, number, content, category, importance, access_count, source, created_at, last_accessed,
               unused, low_importance, low_confidence, duplicate_of FROM (
               SELECT m.seq, m.number, m.content, m.category, m.importance, m.access_count, m.source,
                   m.created_at, m.last_accessed,
                   m.access_count < :accesses AND m.last_accessed < :unused_before
                       AND coalesce(m.arrived_at, '') < :unused_before AS unused,
                   m.importance < :low AND m.last_accessed < :stale_before
                       AND coalesce(m.arrived_at, '') < :stale_before AS low_importance,
                   m.confidence < :unsure AND m.last_accessed < :unsure_before
                       AND coalesce(m.arrived_at, '') < :unsure_before AS low_confidence,
                   CASE WHEN m.key IS NULL AND k.keeper != m.number THEN k.keeper END AS duplicate_of
               FROM memories m LEFT JOIN keepers k ON k.seq = m.seq
               WHERE m.namespace = :ns
           ) AS selected WHERE unused OR low_importance OR low_confidence OR duplicate_of IS NOT NULL
           ORDER BY last_accessed, seq"""
    working_memories = (
        "SELECT seq, number, importance, access_count FROM memories"
        " WHERE namespace = ? AND session_id = ? AND tier = 'working' ORDER BY seq"
    )
    promote = f"UPDATE memories SET tier = 'core' WHERE seq IN {_SEQS} AND +namespace = ?"
    mark_arrived = f"UPDATE memories SET arrived_at = ? WHERE seq IN {_SEQS}"

    export_memories = f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND key IS NOT ? ORDER BY number"
    export_history = (
        f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq IN"
        " (SELECT seq FROM memories WHERE namespace = ? AND key IS NOT ?) ORDER BY seq"
    )
    export_archived = (
        f"SELECT {COLUMNS}, archived_at, archive_reason FROM memory_archive"
        " WHERE namespace = ? AND key IS NOT ? ORDER BY number"
    )
    export_archived_history = (
        f"SELECT {HISTORY_COLUMNS} FROM memory_history_archive WHERE memory_seq IN"
        " (SELECT seq FROM memory_archive WHERE namespace = ? AND key IS NOT ?) ORDER BY seq"
    )
    export_sessions = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = ? ORDER BY session_id"
    present_memories = (
        "SELECT number, category, content_hash, created_at FROM memories WHERE namespace = :ns"
        " AND content_hash IN (SELECT value FROM json_each(:digests)) UNION ALL"
        " SELECT number, category, content_hash, created_at FROM memory_archive WHERE namespace = :ns"
        " AND content_hash IN (SELECT value FROM json_each(:digests))"
    )
    held_hashes = (
        "SELECT content_hash FROM memories WHERE namespace = :ns AND content_hash IN"
        " (SELECT value FROM json_each(:digests)) UNION SELECT content_hash FROM memory_archive"
        " WHERE namespace = :ns AND content_hash IN (SELECT value FROM json_each(:digests))"
    )
    key_holders_in_full = (
        "SELECT key, number, content_hash, client, updated_at, 0 AS archived, (SELECT reason FROM memory_history h"
        " WHERE h.memory_seq = m.seq ORDER BY h.seq DESC LIMIT 1) AS changed_by FROM memories m"
        " WHERE namespace = :ns AND key IN (SELECT value FROM json_each(:keys)) UNION ALL SELECT key, number,"
        " content_hash, client, updated_at, 1 AS archived, NULL AS changed_by FROM memory_archive"
        " WHERE namespace = :ns AND key IN (SELECT value FROM json_each(:keys))"
    )
    taken_numbers = (
        "SELECT number FROM memories WHERE namespace = :ns AND number IN"
        " (SELECT CAST(value AS INTEGER) FROM json_each(:numbers)) UNION SELECT number FROM memory_archive"
        " WHERE namespace = :ns AND number IN (SELECT CAST(value AS INTEGER) FROM json_each(:numbers))"
    )

    vector_bounds = (
        "SELECT (SELECT max(change) FROM memory_changes), (SELECT min(change) FROM memory_changes),"
        " (SELECT max(written) FROM memory_vectors)"
    )
    vector_written_next = "SELECT coalesce(max(written), 0) + 1 FROM memory_vectors"
    # The memory's row decides: a memory deleted or changed since it was read gets no vector.
    vector_upsert = (
        "INSERT INTO memory_vectors (seq, model, dim, content_hash, vector, written, script)"
        " SELECT seq, ?, ?, content_hash, ?, ?, ? FROM memories WHERE seq = ? AND content_hash = ?"
        " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
        " content_hash = excluded.content_hash, vector = excluded.vector, written = excluded.written,"
        " script = excluded.script"
    )
    _NO_VECTOR = (
        " AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?"
        " AND v.content_hash = m.content_hash)"
    )
    # Memories in seq order from the primary key (`+` keeps the namespace's indexes out of the plan).
    vectors_pending = (
        f"SELECT m.seq, m.content, m.content_hash FROM memories m WHERE +m.namespace = ? AND m.seq > ?{_NO_VECTOR}"
        " ORDER BY m.seq LIMIT ?"
    )
    vectors_pending_of = (
        f"SELECT m.seq, m.content, m.content_hash FROM memories m WHERE +m.namespace = ? AND m.seq IN {_SEQS}"
        f"{_NO_VECTOR} ORDER BY m.seq"
    )
    _CURRENT = (
        "SELECT v.seq, v.vector, v.script FROM memory_vectors v CROSS JOIN memories m ON m.seq = v.seq"
        " AND m.content_hash = v.content_hash WHERE +m.namespace = ? AND v.model = ?"
    )
    vectors_after = f"{_CURRENT} AND v.seq > ? ORDER BY v.seq LIMIT ?"
    vectors_of = f"{_CURRENT} AND v.seq IN {_SEQS}"
    vectors_written_since = f"{_CURRENT} AND v.written > ?"
    vectors_current = (
        "SELECT count(*) FROM memory_vectors v CROSS JOIN memories m ON m.seq = v.seq"
        " AND m.content_hash = v.content_hash WHERE +m.namespace = ? AND v.model = ?"
    )

    request_find = (
        "SELECT tool, fingerprint, answer FROM write_requests WHERE namespace = ? AND request_id = ? AND created_at > ?"
    )
    request_record = (
        "INSERT INTO write_requests (namespace, request_id, tool, fingerprint, answer, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, request_id) DO UPDATE SET"
        " tool = excluded.tool, fingerprint = excluded.fingerprint, answer = excluded.answer,"
        " created_at = excluded.created_at"
    )
    request_prune = (
        "DELETE FROM write_requests WHERE namespace = ? AND request_id IN (SELECT request_id"
        " FROM write_requests WHERE namespace = ? AND created_at < ? LIMIT ?)"
    )

    # Writers take turns (BEGIN IMMEDIATE), so the namespace's largest number is the last one.
    log_insert = (
        "INSERT INTO extraction_log (number, namespace, digest, session_id, client, status, input, fast, deep,"
        " note_seq, created_at, updated_at) VALUES ((SELECT coalesce(max(number), 0) + 1 FROM extraction_log"
        " WHERE namespace = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING number"
    )
    log_prune = "DELETE FROM extraction_log WHERE namespace = ? AND number <= ?"
    _LOG = (
        "SELECT number, digest, session_id, client, status, input, fast, deep, note_seq, created_at, updated_at"
        " FROM extraction_log"
    )
    log_pending = f"{_LOG} WHERE namespace = ? AND digest = ? AND status = 'pending' ORDER BY number DESC LIMIT 1"
    log_settle = (
        "UPDATE extraction_log SET status = 'done', deep = ?, updated_at = ? WHERE namespace = ? AND number = ?"
    )
    log_recent = f"{_LOG} WHERE namespace = ? ORDER BY number DESC LIMIT ?"
    # Every text a memory has had (its content and earlier values, live or archived): what forget
    # takes out of the extraction log.
    forgotten_texts = (
        f"SELECT m.number, m.content FROM memories m WHERE m.namespace = ? AND m.number IN {_SEQS}"
        " UNION ALL SELECT m.number, h.content FROM memory_history h JOIN memories m ON m.seq = h.memory_seq"
        f" WHERE m.namespace = ? AND m.number IN {_SEQS}"
        f" UNION ALL SELECT a.number, a.content FROM memory_archive a WHERE a.namespace = ? AND a.number IN {_SEQS}"
        " UNION ALL SELECT a.number, h.content FROM memory_history_archive h JOIN memory_archive a"
        f" ON a.seq = h.memory_seq WHERE a.namespace = ? AND a.number IN {_SEQS}"
    )
    log_runs = "SELECT number, status, input, fast, deep, note_seq FROM extraction_log WHERE namespace = ?"
    request_answers = "SELECT request_id, answer FROM write_requests WHERE namespace = ?"
    request_scrub = "UPDATE write_requests SET answer = ? WHERE namespace = ? AND request_id = ?"
    log_scrub = "UPDATE extraction_log SET input = ?, fast = ?, deep = ? WHERE namespace = ? AND number = ?"
    log_settle_abandoned = (
        "UPDATE extraction_log SET status = 'done', deep = ?, updated_at = ?"
        " WHERE namespace = ? AND status = 'pending' AND updated_at < ?"
    )

    def array(self, values: Iterable[Any]) -> Any:
        return json.dumps(list(values), ensure_ascii=False)

    def filters(self, category: str | None, tags: Sequence[str] | None) -> tuple[str, list[Any]]:
        sql, args = "", []
        if category is not None:
            sql += " AND m.category = ?"
            args.append(category)
        if tags:  # every requested tag must be present
            sql += (
                " AND NOT EXISTS (SELECT 1 FROM json_each(?) AS want"
                " WHERE want.value NOT IN (SELECT value FROM json_each(m.tags)))"
            )
            args.append(self.array(tags))
        return sql, args

    def equals(self, column: str) -> str:
        return f" AND m.{column} = ?"

    def search_rows(
        self, namespace: str, seqs: Sequence[int], where: str, args: Sequence[Any]
    ) -> tuple[str, tuple[Any, ...]]:
        return _search_rows(len(seqs), where), (namespace, *seqs, *args)

    def search_like(self, terms: int, where: str) -> str:
        # SQLite's LIKE ignores the case of ASCII letters.
        each = ["m.content LIKE ? ESCAPE '\\' OR m.key LIKE ? ESCAPE '\\'"] * terms
        hit = " + ".join(f"CASE WHEN {e} THEN 1 ELSE 0 END" for e in each)
        return (
            f"SELECT {M_COLUMNS}, {hit} AS found FROM memories m WHERE m.namespace = ?{where}"
            f" AND ({' OR '.join(each)}) ORDER BY found DESC, m.updated_at DESC LIMIT ?"
        )

    def list_count(self, where: str) -> str:
        return f"SELECT count(*) FROM memories m WHERE m.namespace = ?{where}"

    def list_rows(self, column: str, where: str, keyset: bool) -> str:
        after = f" AND (m.{column} < ? OR (m.{column} = ? AND m.number < ?))" if keyset else ""
        return (
            f"SELECT {M_COLUMNS}, m.{column} FROM memories m WHERE m.namespace = ?{where}{after}"
            f" ORDER BY m.{column} DESC, m.number DESC LIMIT ?"
        )

    def archive_move(self, at: str, reasons: Sequence[tuple[int, str]], namespace: str) -> tuple[str, list[Any]]:
        why = " ".join("WHEN ? THEN ?" for _ in reasons)
        sql = (
            f"INSERT INTO memory_archive ({MEMORY_ROW}, archived_at, archive_reason)"
            f" SELECT {MEMORY_ROW}, ?, CASE seq {why} END"
            f" FROM memories WHERE seq IN {_SEQS} AND +namespace = ? RETURNING seq, number"
        )
        args = [at, *(v for pair in reasons for v in pair), self.array(seq for seq, _ in reasons), namespace]
        return sql, args

    def insert_rows(self, table: str, columns: str, width: int, rows: int) -> str:
        return _insert_rows(table, columns, width, rows)

    async def similar(self, conn: Conn, match: str, namespace: str, category: str, limit: int) -> list[Row]:
        rows = await conn.execute_fetchall(
            f"SELECT {M_COLUMNS} FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND m.namespace = ? AND m.category = ? ORDER BY {BM25} LIMIT ?",
            (match, namespace, category, limit),
        )
        return list(rows)

    def write_batch(self, conn: Conn, memories: list[Row], fts: list[Row]) -> list[Awaitable[Any]]:
        # One multi-row INSERT per table: SQLite runs each in the connection's thread with the GIL
        # released (executemany would take it back for every row).
        return [
            conn.execute(
                self.insert_rows("memories", MEMORY_ROW, MEMORY_WIDTH, len(memories)), [v for r in memories for v in r]
            ),
            conn.execute(self.insert_rows("memory_fts", FTS_ROW, 5, len(fts)), [v for r in fts for v in r]),
        ]

    async def after_bulk(self, conn: Conn, rows: int) -> None:
        """Nothing: SQLite's planner goes by the indexes, not by statistics (none are gathered)."""

    async def insert_memory(self, conn: Conn, values: Sequence[Any]) -> tuple[int, int]:
        number = await self.take_numbers(conn, values[0], 1)
        return int(await scalar(conn, self._insert_memory, (number, *values))), number

    async def take_numbers(self, conn: Conn, namespace: str, count: int) -> int:
        last = await scalar(conn, self._take_numbers, (namespace, count, count))
        return int(last) - count + 1

    async def next_seqs(self, conn: Conn, count: int) -> int:
        # AUTOINCREMENT continues after the larger of the two; the caller holds the write lock.
        top = await scalar(
            conn,
            "SELECT max(coalesce((SELECT max(seq) FROM memories), 0),"
            " coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0))",
        )
        return int(top) + 1

    async def seqs_after(self, conn: Conn, top: int) -> None:
        await conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'memories'", (top,))
        await conn.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'memories', ? WHERE NOT EXISTS"
            " (SELECT 1 FROM sqlite_sequence WHERE name = 'memories')",
            (top,),
        )

    async def announce(self, conn: Conn, payloads: Iterable[str]) -> None:
        """Nothing to do: other processes' searches read the change log."""
