"""The store's statements in PostgreSQL's dialect (see store/statements.py for what each does),
over the native schema of store/postgres/schema.py: times are `timestamptz`, JSON is `jsonb`, the
profile's flag a `boolean`. Times and JSON are sent as text (psycopg sends a `str` untyped, so
the server reads it as the column's type) and read back as the same text SQLite keeps (the
connection's loaders, postgres/backend.py), so rows are alike on both backends.

Lists of values are arrays (`= ANY(%s)`); `(m.namespace || '')` keeps the namespace's index out
of a plan where the primary key finds the rows (PostgreSQL, estimating from stale statistics
after a bulk import, would otherwise scan a whole namespace's index to find 50 rows). The
full-text index is a tsvector column ranked by ts_rank; bulk rows arrive by COPY; seqs come from
an identity column's sequence."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, cast

from ..backend import CHANGES_CHANNEL, Conn
from ..draft_values import DRAFT_COLUMNS, FTS_ROW, MEMORY_ROW
from ..rows import COLUMNS, HISTORY_COLUMNS, M_COLUMNS, SESSION_COLUMNS, scalar
from ..statements import Row, Statements

__all__ = ["PgStatements", "tsquery"]

_SEQS = "ANY(%s::bigint[])"
_TEXTS = "ANY(%s::text[])"
_NS = "(namespace || '') = %s"  # see the module's docstring
_M_NS = "(m.namespace || '') = %s"
_SEQUENCE = "pg_get_serial_sequence('memories', 'seq')"
_ANALYZE_AFTER = 1000  # rows of a bulk insert after which the statistics are gathered again
_M_MEMORY_ROW = ", ".join("m." + name for name in MEMORY_ROW.split(", "))


@functools.lru_cache(maxsize=64)
def _marks(width: int, rows: int) -> str:
    return ", ".join(["(" + ", ".join(["%s"] * width) + ")"] * rows)


class PgStatements(Statements):
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at timestamptz NOT NULL)"
    )
    migration_applied = "SELECT 1 FROM schema_migrations WHERE version = %s"
    migration_record = "INSERT INTO schema_migrations VALUES (%s, %s, %s)"
    schema_version = "SELECT max(version) FROM schema_migrations"
    index_version = "SELECT value FROM meta WHERE name = 'index_version'"
    index_version_first = "INSERT INTO meta VALUES ('index_version', %s)"
    index_version_set = (
        "INSERT INTO meta VALUES ('index_version', %s) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
    )

    fts_clear = "DELETE FROM memory_fts"
    fts_sources = "SELECT seq, content, key, tags, category FROM memories"
    fts_insert = "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES (%s, %s, %s, %s, %s)"
    fts_update = "UPDATE memory_fts SET content = %s, key = %s, tags = %s, category = %s WHERE rowid = %s"
    log_everything = "INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories"

    changes_bounds = "SELECT (SELECT max(change) FROM memory_changes), (SELECT min(change) FROM memory_changes)"
    changed_since = "SELECT DISTINCT seq FROM memory_changes WHERE change > %s AND namespace = %s"
    terms_of = (
        "SELECT m.seq, f.content, f.key, f.tags FROM memories m JOIN memory_fts f ON f.rowid = m.seq"
        f" WHERE {_M_NS} AND m.seq = {_SEQS}"
    )
    terms_after = (
        "SELECT m.seq, f.content, f.key, f.tags FROM memories m JOIN memory_fts f ON f.rowid = m.seq"
        f" WHERE {_M_NS} AND m.seq > %s ORDER BY m.seq LIMIT %s"
    )
    log_seqs = "INSERT INTO memory_changes (namespace, seq) SELECT %s, unnest(%s::bigint[]) RETURNING change"
    log_range = (
        "INSERT INTO memory_changes (namespace, seq) SELECT namespace, seq FROM memories WHERE seq BETWEEN %s AND %s"
    )
    log_one = "INSERT INTO memory_changes (namespace, seq) VALUES (%s, %s)"
    prune_log = "DELETE FROM memory_changes WHERE change <= (SELECT max(change) FROM memory_changes) - %s"

    get = f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND number = %s"
    by_key = f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND key = %s"
    taken_keys = f"SELECT key FROM memories WHERE namespace = %s AND key = {_TEXTS}"
    hashes = f"SELECT DISTINCT content_hash FROM memories WHERE namespace = %s AND content_hash = {_TEXTS}"
    by_hash = f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND category = %s AND content_hash = %s"
    _FLOOR = "coalesce((SELECT value::bigint FROM meta WHERE name = 'number_floor'), 0)"
    _TAKE = (
        f"INSERT INTO memory_numbers (namespace, last) VALUES (%s, {_FLOOR} + %s)"
        " ON CONFLICT (namespace) DO UPDATE SET last = memory_numbers.last + %s RETURNING last"
    )
    # One round trip: the namespace's next number is taken in the statement that uses it.
    _insert_memory = (
        f"WITH n AS ({_TAKE}) INSERT INTO memories (number, namespace, {DRAFT_COLUMNS}, content_hash,"
        f" created_at, updated_at, last_accessed, access_count) SELECT n.last, {', '.join(['%s'] * 15)}, 0 FROM n"
        " RETURNING seq, number"
    )
    numbers_after = (
        f"INSERT INTO memory_numbers (namespace, last) VALUES (%s, greatest(%s, {_FLOOR}))"
        " ON CONFLICT (namespace) DO UPDATE SET last = greatest(memory_numbers.last, excluded.last)"
    )
    categories_of = "SELECT seq, number, category, session_id FROM memories WHERE namespace = %s AND number = %s"
    keep_history = (
        "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
        " reason, changed_at) SELECT seq, content, key, category, importance, confidence, tags, source, %s, %s"
        " FROM memories WHERE seq = %s"
    )
    profile_changed_since = (
        f"SELECT 1 FROM memories WHERE namespace = %s AND category = {_TEXTS} AND updated_at > %s LIMIT 1"
    )
    profile_stale_if = (
        f"UPDATE profile SET stale = true WHERE namespace = %s AND NOT stale AND (%s = {_TEXTS}"
        f" OR (SELECT category FROM memories WHERE seq = %s) = {_TEXTS})"
    )
    update_memory = (
        "UPDATE memories SET content = %s, key = %s, category = %s, tier = %s, importance = %s, confidence = %s,"
        " source = %s, tags = %s, session_id = coalesce(%s, session_id), client = coalesce(%s, client),"
        " content_hash = %s, updated_at = %s, last_accessed = %s, access_count = access_count + 1"
        f" WHERE seq = %s AND {_NS}"
    )
    _SEQ_OF = "(SELECT seq FROM memories WHERE namespace = %s AND number = %s)"
    history = f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq = {_SEQ_OF} ORDER BY seq"
    drop_history = f"DELETE FROM memory_history WHERE memory_seq = {_SEQ_OF}"
    core_lines = (
        "SELECT category, content, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, number FROM memories"
        " WHERE namespace = %s AND tier = 'core' AND category <> 'profile' ORDER BY created_at, seq"
    )
    live_of = f"SELECT seq, number, category, session_id FROM memories WHERE namespace = %s AND number = {_SEQS}"
    delete_history = f"DELETE FROM memory_history WHERE memory_seq = {_SEQS}"
    delete_fts = f"DELETE FROM memory_fts WHERE rowid = {_SEQS}"
    delete_memories = f"DELETE FROM memories WHERE seq = {_SEQS}"
    archived_of = f"SELECT seq, number FROM memory_archive WHERE namespace = %s AND number = {_SEQS}"
    delete_archived_history = f"DELETE FROM memory_history_archive WHERE memory_seq = {_SEQS}"
    delete_archived = f"DELETE FROM memory_archive WHERE seq = {_SEQS}"
    log_rows = (
        f"SELECT number, category, session_id, false FROM memories WHERE seq = {_SEQS}"
        f" UNION ALL SELECT number, category, session_id, true FROM memory_archive WHERE seq = {_SEQS}"
    )
    touch = f"UPDATE memories SET access_count = access_count + %s, last_accessed = %s WHERE seq = %s AND {_NS}"
    touch_number = (
        "UPDATE memories SET access_count = access_count + 1, last_accessed = %s WHERE namespace = %s AND number = %s"
    )
    touch_sessions = (
        f"UPDATE sessions SET updated_at = greatest(updated_at, %s) WHERE namespace = %s AND session_id = {_TEXTS}"
    )

    count_by_category = "SELECT category, count(*) FROM memories WHERE namespace = %s GROUP BY category ORDER BY 2 DESC"
    count_by_tier = "SELECT tier, count(*) FROM memories WHERE namespace = %s GROUP BY tier"
    oldest = "SELECT min(created_at) FROM memories WHERE namespace = %s"
    newest = "SELECT max(created_at) FROM memories WHERE namespace = %s"
    session_count = "SELECT count(*) FROM sessions WHERE namespace = %s"
    archive_count = "SELECT count(*) FROM memory_archive WHERE namespace = %s"
    cleaned_count = (
        "SELECT count(*) FROM memory_archive WHERE namespace = %s AND archive_reason LIKE 'cleanup:%%'"
        " AND archived_at >= %s"
    )
    cleaned_latest = (
        "SELECT number, content, archived_at, archive_reason FROM memory_archive WHERE namespace = %s"
        " AND archive_reason LIKE 'cleanup:%%' AND archived_at >= %s ORDER BY archived_at DESC, number DESC LIMIT %s"
    )
    session = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = %s AND session_id = %s"

    touch_session = (
        "INSERT INTO sessions (namespace, session_id, created_at, updated_at) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (namespace, session_id) DO UPDATE SET updated_at = excluded.updated_at"
    )
    set_topic = "UPDATE sessions SET current_topic = %s WHERE namespace = %s AND session_id = %s"
    update_session = (
        "UPDATE sessions SET turn_count = turn_count + 1, current_topic = coalesce(%s, current_topic),"
        " last_emotion = coalesce(%s, last_emotion), context_variables = coalesce(%s, context_variables)"
        " WHERE namespace = %s AND session_id = %s"
    )
    session_variables = "SELECT context_variables FROM sessions WHERE namespace = %s AND session_id = %s"
    add_session = (
        f"INSERT INTO sessions (namespace, {SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (namespace, session_id) DO NOTHING RETURNING 1"
    )
    idle_sessions = (
        "SELECT session_id, updated_at FROM sessions WHERE namespace = %s AND updated_at < %s ORDER BY updated_at"
    )
    end_session = "DELETE FROM sessions WHERE namespace = %s AND session_id = %s"

    profile_stale = "UPDATE profile SET stale = true WHERE namespace = %s AND NOT stale"

    keyed_memories = "SELECT seq, number, namespace, key, updated_at FROM memories WHERE key IS NOT NULL"
    merge_into_history = (
        "INSERT INTO memory_history (memory_seq, content, key, category, importance, confidence, tags, source,"
        " reason, changed_at) SELECT %s, content, key, category, importance, confidence, tags, source, 'merged', %s"
        " FROM memories WHERE seq = %s"
    )
    adopt_history = "UPDATE memory_history SET memory_seq = %s WHERE memory_seq = %s"
    set_key = "UPDATE memories SET key = %s WHERE seq = %s"
    keyed_archived = "SELECT seq, key FROM memory_archive WHERE key IS NOT NULL"
    set_archived_key = "UPDATE memory_archive SET key = %s WHERE seq = %s"
    profile = "SELECT data, manual, stale FROM profile WHERE namespace = %s"
    profile_data = "SELECT data FROM profile WHERE namespace = %s"
    profile_scrubbed = "UPDATE profile SET data = %s, stale = true WHERE namespace = %s"
    profile_manual = "SELECT manual FROM profile WHERE namespace = %s"
    profile_save = (
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (%s, %s, %s, false, %s)"
        " ON CONFLICT (namespace) DO UPDATE SET data = excluded.data, manual = excluded.manual, stale = false,"
        " updated_at = excluded.updated_at"
    )
    profile_save_manual = (
        "INSERT INTO profile (namespace, data, manual, stale, updated_at) VALUES (%s, %s, %s, true, %s)"
        " ON CONFLICT (namespace) DO UPDATE SET manual = excluded.manual, stale = true,"
        " updated_at = excluded.updated_at"
    )
    profile_sources = (
        f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND tier = 'core'"
        " AND category NOT IN ('profile', 'context') ORDER BY importance DESC, updated_at DESC, seq LIMIT %s"
    )
    profile_live_ids = f"SELECT 'mem_' || number FROM memories WHERE namespace = %s AND 'mem_' || number = {_TEXTS}"
    key_seqs = "SELECT seq FROM memories WHERE namespace = %s AND key = %s"
    key_namespaces = "SELECT DISTINCT namespace FROM memories WHERE key = %s"

    archive_history = (
        f"INSERT INTO memory_history_archive ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history"
        f" WHERE memory_seq = {_SEQS} ORDER BY seq"
    )
    restore_memories = (
        f"INSERT INTO memories ({MEMORY_ROW}) SELECT {MEMORY_ROW.replace('last_accessed', '%s')} FROM memory_archive"
        f" WHERE seq = {_SEQS} AND {_NS}"
    )
    restore_sources = f"SELECT seq, content, key, tags, category FROM memory_archive WHERE seq = {_SEQS} AND {_NS}"
    restore_history = (
        f"INSERT INTO memory_history ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM memory_history_archive"
        f" WHERE memory_seq = {_SEQS} ORDER BY seq"
    )
    archived_keys = f"SELECT seq, number, key FROM memory_archive WHERE number = {_SEQS} AND namespace = %s"
    live_numbers = f"SELECT number FROM memories WHERE number = {_SEQS} AND namespace = %s"
    key_holders = f"SELECT key, number FROM memories WHERE namespace = %s AND key = {_TEXTS}"
    live_count = "SELECT count(*) FROM memories WHERE namespace = %s"
    cleanup_rows = """WITH copies AS (
               SELECT category, content_hash FROM memories WHERE namespace = %(ns)s
               GROUP BY category, content_hash HAVING count(*) > 1
           ), keepers AS (
               SELECT m.seq, first_value(m.number) OVER (
                   PARTITION BY m.category, m.content_hash
                   ORDER BY m.importance DESC, m.access_count DESC, m.key IS NULL, m.updated_at DESC, m.seq DESC
               ) AS keeper
               FROM copies c JOIN memories m
               ON m.namespace = %(ns)s AND m.category = c.category AND m.content_hash = c.content_hash
           )
           SELECT seq, number, content, category, importance, access_count, source, created_at, last_accessed,
               unused, low_importance, low_confidence, duplicate_of FROM (
               SELECT m.seq, m.number, m.content, m.category, m.importance, m.access_count, m.source,
                   m.created_at, m.last_accessed,
                   m.access_count < %(accesses)s AND m.last_accessed < %(unused_before)s
                       AND (m.arrived_at IS NULL OR m.arrived_at < %(unused_before)s) AS unused,
                   m.importance < %(low)s AND m.last_accessed < %(stale_before)s
                       AND (m.arrived_at IS NULL OR m.arrived_at < %(stale_before)s) AS low_importance,
                   m.confidence < %(unsure)s AND m.last_accessed < %(unsure_before)s
                       AND (m.arrived_at IS NULL OR m.arrived_at < %(unsure_before)s) AS low_confidence,
                   CASE WHEN m.key IS NULL AND k.keeper <> m.number THEN k.keeper END AS duplicate_of
               FROM memories m LEFT JOIN keepers k ON k.seq = m.seq
               WHERE m.namespace = %(ns)s
           ) AS selected WHERE unused OR low_importance OR low_confidence OR duplicate_of IS NOT NULL
           ORDER BY last_accessed, seq"""
    working_memories = (
        "SELECT seq, number, importance, access_count FROM memories"
        " WHERE namespace = %s AND session_id = %s AND tier = 'working' ORDER BY seq"
    )
    promote = f"UPDATE memories SET tier = 'core' WHERE seq = {_SEQS} AND {_NS}"
    mark_arrived = f"UPDATE memories SET arrived_at = %s WHERE seq = {_SEQS}"

    export_memories = f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND key IS DISTINCT FROM %s ORDER BY number"
    export_history = (
        f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq IN"
        " (SELECT seq FROM memories WHERE namespace = %s AND key IS DISTINCT FROM %s) ORDER BY seq"
    )
    export_archived = (
        f"SELECT {COLUMNS}, archived_at, archive_reason FROM memory_archive"
        " WHERE namespace = %s AND key IS DISTINCT FROM %s ORDER BY number"
    )
    export_archived_history = (
        f"SELECT {HISTORY_COLUMNS} FROM memory_history_archive WHERE memory_seq IN"
        " (SELECT seq FROM memory_archive WHERE namespace = %s AND key IS DISTINCT FROM %s) ORDER BY seq"
    )
    export_sessions = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = %s ORDER BY session_id"
    present_memories = (
        "SELECT number, category, content_hash, created_at FROM memories WHERE namespace = %(ns)s"
        " AND content_hash = ANY(%(digests)s::text[]) UNION ALL"
        " SELECT number, category, content_hash, created_at FROM memory_archive WHERE namespace = %(ns)s"
        " AND content_hash = ANY(%(digests)s::text[])"
    )
    held_hashes = (
        "SELECT content_hash FROM memories WHERE namespace = %(ns)s AND content_hash = ANY(%(digests)s::text[])"
        " UNION SELECT content_hash FROM memory_archive"
        " WHERE namespace = %(ns)s AND content_hash = ANY(%(digests)s::text[])"
    )
    key_holders_in_full = (
        "SELECT key, number, content_hash, client, updated_at, false AS archived, (SELECT reason"
        " FROM memory_history h WHERE h.memory_seq = m.seq ORDER BY h.seq DESC LIMIT 1) AS changed_by FROM memories m"
        " WHERE namespace = %(ns)s AND key = ANY(%(keys)s::text[]) UNION ALL SELECT key, number,"
        " content_hash, client, updated_at, true AS archived, NULL AS changed_by FROM memory_archive"
        " WHERE namespace = %(ns)s AND key = ANY(%(keys)s::text[])"
    )
    taken_numbers = (
        "SELECT number FROM memories WHERE namespace = %(ns)s AND number = ANY(%(numbers)s::bigint[])"
        " UNION SELECT number FROM memory_archive WHERE namespace = %(ns)s AND number = ANY(%(numbers)s::bigint[])"
    )

    vector_bounds = (
        "SELECT (SELECT max(change) FROM memory_changes), (SELECT min(change) FROM memory_changes),"
        " (SELECT max(written) FROM memory_vectors)"
    )
    vector_written_next = "SELECT coalesce(max(written), 0) + 1 FROM memory_vectors"
    # The memory's row decides: a memory deleted or changed since it was read gets no vector.
    vector_upsert = (
        "INSERT INTO memory_vectors (seq, model, dim, content_hash, vector, written, script)"
        " SELECT seq, %s, %s, content_hash, %s, %s, %s FROM memories WHERE seq = %s AND content_hash = %s"
        " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
        " content_hash = excluded.content_hash, vector = excluded.vector, written = excluded.written,"
        " script = excluded.script"
    )
    _NO_VECTOR = (
        " AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = %s"
        " AND v.content_hash = m.content_hash)"
    )
    vectors_pending = (
        f"SELECT m.seq, m.content, m.content_hash FROM memories m WHERE {_M_NS} AND m.seq > %s{_NO_VECTOR}"
        " ORDER BY m.seq LIMIT %s"
    )
    vectors_pending_of = (
        f"SELECT m.seq, m.content, m.content_hash FROM memories m WHERE {_M_NS} AND m.seq = {_SEQS}"
        f"{_NO_VECTOR} ORDER BY m.seq"
    )
    _CURRENT = (
        "SELECT v.seq, v.vector, v.script FROM memory_vectors v JOIN memories m ON m.seq = v.seq"
        f" AND m.content_hash = v.content_hash WHERE {_M_NS} AND v.model = %s"
    )
    vectors_after = f"{_CURRENT} AND v.seq > %s ORDER BY v.seq LIMIT %s"
    vectors_of = f"{_CURRENT} AND v.seq = {_SEQS}"
    vectors_written_since = f"{_CURRENT} AND v.written > %s"
    vectors_current = (
        "SELECT count(*) FROM memory_vectors v JOIN memories m ON m.seq = v.seq"
        f" AND m.content_hash = v.content_hash WHERE {_M_NS} AND v.model = %s"
    )

    request_find = (
        "SELECT tool, fingerprint, answer FROM write_requests"
        " WHERE namespace = %s AND request_id = %s AND created_at > %s"
    )
    request_record = (
        "INSERT INTO write_requests (namespace, request_id, tool, fingerprint, answer, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, request_id) DO UPDATE SET"
        " tool = excluded.tool, fingerprint = excluded.fingerprint, answer = excluded.answer,"
        " created_at = excluded.created_at"
    )
    request_prune = (
        "DELETE FROM write_requests WHERE namespace = %s AND request_id IN (SELECT request_id"
        " FROM write_requests WHERE namespace = %s AND created_at < %s LIMIT %s)"
    )

    # Writers take turns (the advisory lock), so the namespace's largest number is the last one.
    log_insert = (
        "INSERT INTO extraction_log (number, namespace, digest, session_id, client, status, input, fast, deep,"
        " note_seq, created_at, updated_at) VALUES ((SELECT coalesce(max(number), 0) + 1 FROM extraction_log"
        f" WHERE namespace = %s), {', '.join(['%s'] * 11)}) RETURNING number"
    )
    log_prune = "DELETE FROM extraction_log WHERE namespace = %s AND number <= %s"
    _LOG = (
        "SELECT number, digest, session_id, client, status, input, fast, deep, note_seq, created_at, updated_at"
        " FROM extraction_log"
    )
    log_pending = f"{_LOG} WHERE namespace = %s AND digest = %s AND status = 'pending' ORDER BY number DESC LIMIT 1"
    log_settle = (
        "UPDATE extraction_log SET status = 'done', deep = %s, updated_at = %s WHERE namespace = %s AND number = %s"
    )
    log_recent = f"{_LOG} WHERE namespace = %s ORDER BY number DESC LIMIT %s"
    # Every text a memory has had (its content and earlier values, live or archived): what forget
    # takes out of the extraction log.
    forgotten_texts = (
        f"SELECT m.number, m.content FROM memories m WHERE m.namespace = %s AND m.number = {_SEQS}"
        " UNION ALL SELECT m.number, h.content FROM memory_history h JOIN memories m ON m.seq = h.memory_seq"
        f" WHERE m.namespace = %s AND m.number = {_SEQS}"
        f" UNION ALL SELECT a.number, a.content FROM memory_archive a WHERE a.namespace = %s AND a.number = {_SEQS}"
        " UNION ALL SELECT a.number, h.content FROM memory_history_archive h JOIN memory_archive a"
        f" ON a.seq = h.memory_seq WHERE a.namespace = %s AND a.number = {_SEQS}"
    )
    log_runs = "SELECT number, status, input, fast, deep, note_seq FROM extraction_log WHERE namespace = %s"
    request_answers = "SELECT request_id, answer FROM write_requests WHERE namespace = %s"
    request_scrub = "UPDATE write_requests SET answer = %s WHERE namespace = %s AND request_id = %s"
    log_scrub = "UPDATE extraction_log SET input = %s, fast = %s, deep = %s WHERE namespace = %s AND number = %s"
    log_settle_abandoned = (
        "UPDATE extraction_log SET status = 'done', deep = %s, updated_at = %s"
        " WHERE namespace = %s AND status = 'pending' AND updated_at < %s"
    )

    def array(self, values: Iterable[Any]) -> Any:
        return list(values)

    def filters(self, category: str | None, tags: Sequence[str] | None) -> tuple[str, list[Any]]:
        sql, args = "", []
        if category is not None:
            sql += " AND m.category = %s"
            args.append(category)
        if tags:  # every requested tag must be present: the tags' array contains them all
            sql += " AND m.tags @> %s::jsonb"
            args.append(json.dumps(list(tags), ensure_ascii=False))
        return sql, args

    def equals(self, column: str) -> str:
        return f" AND m.{column} = %s"

    def search_rows(
        self, namespace: str, seqs: Sequence[int], where: str, args: Sequence[Any]
    ) -> tuple[str, tuple[Any, ...]]:
        # One text for any number of seqs, so the driver prepares it once.
        return _search_rows(where), (namespace, list(seqs), *args)

    def search_like(self, terms: int, where: str) -> str:
        # The trigram indexes find the rows holding any term, Chinese included.
        each = ["m.content ILIKE %s ESCAPE '\\' OR m.key ILIKE %s ESCAPE '\\'"] * terms
        hit = " + ".join(f"CASE WHEN {e} THEN 1 ELSE 0 END" for e in each)
        return (
            f"SELECT {M_COLUMNS}, {hit} AS found FROM memories m WHERE m.namespace = %s{where}"
            f" AND ({' OR '.join(each)}) ORDER BY found DESC, m.updated_at DESC LIMIT %s"
        )

    def list_count(self, where: str) -> str:
        return f"SELECT count(*) FROM memories m WHERE m.namespace = %s{where}"

    def list_rows(self, column: str, where: str, keyset: bool) -> str:
        after = f" AND (m.{column} < %s OR (m.{column} = %s AND m.number < %s))" if keyset else ""
        return (
            f"SELECT {M_COLUMNS}, m.{column} FROM memories m WHERE m.namespace = %s{where}{after}"
            f" ORDER BY m.{column} DESC, m.number DESC LIMIT %s"
        )

    def archive_move(self, at: str, reasons: Sequence[tuple[int, str]], namespace: str) -> tuple[str, list[Any]]:
        sql = (
            f"INSERT INTO memory_archive ({MEMORY_ROW}, archived_at, archive_reason)"
            f" SELECT {_M_MEMORY_ROW}, %s, r.reason FROM memories m"
            " JOIN unnest(%s::bigint[], %s::text[]) AS r (seq, reason) ON r.seq = m.seq"
            f" WHERE {_M_NS} RETURNING seq, number"
        )
        return sql, [at, [seq for seq, _ in reasons], [why for _, why in reasons], namespace]

    def insert_rows(self, table: str, columns: str, width: int, rows: int) -> str:
        return f"INSERT INTO {table} ({columns}) VALUES {_marks(width, rows)}"

    async def similar(self, conn: Conn, match: str, namespace: str, category: str, limit: int) -> list[Row]:
        query = tsquery(match)
        if not query:
            return []
        rows = await conn.execute_fetchall(
            f"SELECT {M_COLUMNS} FROM memory_fts f JOIN memories m ON m.seq = f.rowid, to_tsquery('simple', %s) q"
            " WHERE f.terms @@ q AND m.namespace = %s AND m.category = %s"
            " ORDER BY ts_rank(f.terms, q) DESC, m.seq LIMIT %s",
            (query, namespace, category, limit),
        )
        return list(rows)

    def write_batch(self, conn: Conn, memories: list[Row], fts: list[Row]) -> list[Awaitable[Any]]:
        # COPY: the driver would spend longer parsing a statement of a thousand rows than the
        # server takes to run it.
        from .backend import PgConn

        copier = cast(PgConn, conn)
        return [copier.copy_rows("memories", MEMORY_ROW, memories), copier.copy_rows("memory_fts", FTS_ROW, fts)]

    async def after_bulk(self, conn: Conn, rows: int) -> None:
        # Fresh statistics, as PostgreSQL advises after a bulk load: without them the planner,
        # estimating the table's rows from its width, scanned the whole table for a recall's 50
        # candidates that the primary key finds. Sampling costs a fraction of the load itself.
        if rows >= _ANALYZE_AFTER:
            await conn.execute("ANALYZE memories, memory_fts")

    async def insert_memory(self, conn: Conn, values: Sequence[Any]) -> tuple[int, int]:
        rows = list(await conn.execute_fetchall(self._insert_memory, (values[0], 1, 1, *values)))
        return int(rows[0][0]), int(rows[0][1])

    async def take_numbers(self, conn: Conn, namespace: str, count: int) -> int:
        last = await scalar(conn, self._TAKE, (namespace, count, count))
        return int(last) - count + 1

    async def next_seqs(self, conn: Conn, count: int) -> int:
        last = await scalar(conn, f"SELECT setval({_SEQUENCE}, nextval({_SEQUENCE}) + %s - 1)", (count,))
        return int(last) - count + 1

    async def seqs_after(self, conn: Conn, top: int) -> None:
        await conn.execute(
            f"SELECT setval({_SEQUENCE},"
            f" greatest(%s, coalesce(pg_sequence_last_value(CAST({_SEQUENCE} AS regclass)), 0)))",
            (top,),
        )

    async def announce(self, conn: Conn, payloads: Iterable[str]) -> None:
        for payload in payloads:
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, payload))


@functools.lru_cache(maxsize=64)
def _search_rows(where: str) -> str:
    return (
        "SELECT c.newest, c.oldest, m.* FROM (SELECT (SELECT max(change) FROM memory_changes) AS newest,"
        " (SELECT min(change) FROM memory_changes) AS oldest) AS c"
        f" LEFT JOIN (SELECT {M_COLUMNS} FROM memories m WHERE {_M_NS}"
        f" AND m.seq = {_SEQS}{where}) AS m ON true"
    )


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
