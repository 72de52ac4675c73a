"""The store's statements by name: what the operations of store/*.py ask a backend for. Each
backend writes every one of them in its own dialect (store/sqlite/statements.py,
store/postgres/statements.py), with its own parameters (`?` for SQLite, `%s` for psycopg) and
its own idioms; nothing is rewritten from one dialect into the other.

A statement whose shape depends on the call (how many seqs, which filters) is a method that
returns the text and its parameters. A list of values is one parameter, `array(values)`: a JSON
array that SQLite reads with json_each, a PostgreSQL array. Where the two backends do a thing in
different ways altogether (full-text matching, bulk loading, handing out seqs), the backend's
statements do it themselves on the connection given."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from .backend import Conn

__all__ = ["Statements"]

Row = tuple[Any, ...]


class Statements:
    """Every statement the store runs; a backend's subclass gives each its text."""

    # ---- schema bookkeeping ----------------------------------------------------------------
    migrations_table: str
    migration_applied: str  # (version,)
    migration_record: str  # (version, name, applied_at)
    schema_version: str
    index_version: str
    index_version_first: str  # (version,)
    index_version_set: str  # (version,)

    # ---- the full-text index -----------------------------------------------------------------
    fts_clear: str
    fts_sources: str  # seq, content, key, tags, category of every memory
    fts_insert: str  # (rowid, content, key, tags, category)
    fts_update: str  # (content, key, tags, category, rowid)
    log_everything: str  # every memory into the change log

    # ---- the change log and the in-memory index ------------------------------------------------
    changes_bounds: str  # newest, oldest change
    changed_since: str  # (change, namespace)
    terms_of: str  # (namespace, array(seqs)): seq and the three indexed texts
    terms_after: str  # (namespace, seq, limit)
    log_seqs: str  # (namespace, array(seqs)) RETURNING change
    log_range: str  # (first, last)
    log_one: str  # (namespace, seq)
    prune_log: str  # (keep,)

    # ---- memories --------------------------------------------------------------------------
    get: str  # (namespace, number)
    by_key: str  # (namespace, key)
    taken_keys: str  # (namespace, array(keys))
    hashes: str  # (namespace, array(digests))
    by_hash: str  # (namespace, category, content_hash)
    numbers_after: str  # (namespace, top): the namespace's next numbers come after `top`
    categories_of: str  # (namespace, number): seq, number, category, session_id
    keep_history: str  # (reason, changed_at, seq)
    profile_stale_if: str  # (namespace, category, array(categories), seq, array(categories))
    profile_changed_since: str  # (namespace, array(categories), since): a row when one of them was written since
    # (*draft values, content_hash, updated_at, last_accessed, seq, namespace): an update is a use
    # of the memory, a trigger in the original format's words (trigger_count, last_triggered).
    update_memory: str
    history: str  # (namespace, number)
    drop_history: str  # (namespace, number)
    core_lines: str  # (namespace,): category, content, day, number
    live_of: str  # (namespace, array(numbers)): seq, number, category, session_id
    delete_history: str  # (array(seqs),)
    delete_fts: str  # (array(seqs),)
    delete_memories: str  # (array(seqs),)
    archived_of: str  # (namespace, array(numbers)): seq, number
    delete_archived_history: str  # (array(seqs),)
    delete_archived: str  # (array(seqs),)
    log_rows: str  # (array(seqs), array(seqs)): number, category, session_id, archived
    touch: str  # executemany (count, at, seq, namespace)
    touch_number: str  # (at, namespace, number): one use of a memory named by its number
    touch_sessions: str  # (at, namespace, array(session ids))

    # ---- reads outside a transaction -----------------------------------------------------------
    count_by_category: str  # (namespace,)
    count_by_tier: str  # (namespace,)
    oldest: str  # (namespace,)
    newest: str  # (namespace,)
    session_count: str  # (namespace,)
    archive_count: str  # (namespace,)
    cleaned_count: str  # (namespace, since): memories cleanup archived since then
    cleaned_latest: str  # (namespace, since, limit): number, content, archived_at, archive_reason, newest first
    session: str  # (namespace, session_id)

    # ---- sessions --------------------------------------------------------------------------
    touch_session: str  # (namespace, session_id, created_at, updated_at)
    set_topic: str  # (topic, namespace, session_id)
    update_session: str  # (topic, emotion, variables, namespace, session_id)
    session_variables: str  # (namespace, session_id)
    add_session: str  # (namespace, *SessionRow) RETURNING 1 when added
    idle_sessions: str  # (namespace, before)
    end_session: str  # (namespace, session_id)

    # ---- the profile -----------------------------------------------------------------------
    profile_stale: str  # (namespace,)

    # ---- key slots in one spelling (the migration of store/key_slots.py) -------------------------
    keyed_memories: str  # seq, number, namespace, key, updated_at of every keyed memory
    merge_into_history: str  # (keeper seq, changed_at, merged seq)
    adopt_history: str  # (keeper seq, merged seq)
    set_key: str  # (key, seq)
    keyed_archived: str  # seq, key of every keyed archived memory
    set_archived_key: str  # (key, seq)
    profile: str  # (namespace,)
    profile_data: str  # (namespace,)
    profile_scrubbed: str  # (data, namespace)
    profile_manual: str  # (namespace,)
    profile_save: str  # (namespace, data, manual, at)
    profile_save_manual: str  # (namespace, empty data, manual, at)
    profile_sources: str  # (namespace, limit)
    profile_live_ids: str  # (namespace, array(ids))
    key_seqs: str  # (namespace, key): seq
    key_namespaces: str  # (key): each namespace where a live memory holds the key

    # ---- the archive -----------------------------------------------------------------------
    archive_history: str  # (array(seqs),)
    restore_memories: str  # (at, array(seqs), namespace)
    restore_sources: str  # (array(seqs), namespace): seq, content, key, tags, category
    restore_history: str  # (array(seqs),)
    archived_keys: str  # (array(numbers), namespace): seq, number, key
    live_numbers: str  # (array(numbers), namespace): number
    key_holders: str  # (namespace, array(keys)): key, number
    live_count: str  # (namespace,)
    cleanup_rows: str  # named: ns, accesses, unused_before, low, stale_before, unsure, unsure_before
    working_memories: str  # (namespace, session_id): seq, number, importance, access_count
    promote: str  # (array(seqs), namespace)
    mark_arrived: str  # (at, array(seqs)): imported memories arrived then

    # ---- export and import -----------------------------------------------------------------
    export_memories: str  # (namespace, profile key)
    export_history: str  # (namespace, profile key)
    export_archived: str  # (namespace, profile key)
    export_archived_history: str  # (namespace, profile key)
    export_sessions: str  # (namespace,)
    present_memories: str  # named: ns, digests (array): number, category, content_hash, created_at
    held_hashes: str  # named: ns, digests (array)
    key_holders_in_full: str  # named: ns, keys (array): key, number, ...
    taken_numbers: str  # named: ns, numbers (array): those a live or archived memory of ns holds

    # ---- embedding vectors (the semantic stage) ------------------------------------------------
    # A vector is current when it is of the model asked for and was computed from its memory's
    # present content (the same content_hash); only current vectors are ever read.
    vector_bounds: str  # newest change, oldest change, newest `written` of memory_vectors
    vector_written_next: str  # the `written` number of the next batch of vectors
    vector_upsert: str  # (model, dim, vector, written, script, seq, content_hash): nothing if stale
    vectors_pending: str  # (namespace, seq, model, limit): seq, content, content_hash without a current vector
    vectors_pending_of: str  # (namespace, array(seqs), model): the same, among seqs
    vectors_after: str  # (namespace, model, seq, limit): seq, vector, script of current vectors in seq order
    vectors_of: str  # (namespace, model, array(seqs)): seq, vector, script of the current ones among seqs
    vectors_written_since: str  # (namespace, model, written): seq, vector, script of those written after
    vectors_current: str  # (namespace, model): how many memories have a current vector

    # ---- the extraction log ----------------------------------------------------------------
    # A run's number is counted in its namespace (run_<number>); note_seq is the note's number.
    log_insert: str  # (namespace, namespace, digest, session_id, client, status, input, fast, deep, note_seq, at, at)
    log_prune: str  # (namespace, number)
    log_pending: str  # (namespace, digest)
    log_settle: str  # (deep, at, namespace, number)
    log_recent: str  # (namespace, limit)
    log_settle_abandoned: str  # (deep, at, namespace, before)
    forgotten_texts: str  # (namespace, array(numbers)) x 4: number, content
    log_runs: str  # (namespace): number, status, input, fast, deep, note_seq
    log_scrub: str  # (input, fast, deep, namespace, number)

    # ---- the request ledger (store/ledger.py) ---------------------------------------------------
    request_find: str  # (namespace, request_id, since): tool, fingerprint, answer
    request_record: str  # (namespace, request_id, tool, fingerprint, answer, created_at), over an expired row
    request_prune: str  # (namespace, namespace, before, limit): expired rows, a batch
    request_answers: str  # (namespace): request_id, answer
    request_scrub: str  # (answer, namespace, request_id)

    # ---- shapes that depend on the call ----------------------------------------------------

    def array(self, values: Iterable[Any]) -> Any:
        """A list of values as one parameter."""
        raise NotImplementedError

    def filters(self, category: str | None, tags: Sequence[str] | None) -> tuple[str, list[Any]]:
        """The `AND ...` clauses (on alias m) keeping a category and memories holding every tag."""
        raise NotImplementedError

    def equals(self, column: str) -> str:
        """` AND m.<column> = <parameter>`."""
        raise NotImplementedError

    def search_rows(
        self, namespace: str, seqs: Sequence[int], where: str, args: Sequence[Any]
    ) -> tuple[str, tuple[Any, ...]]:
        """Newest and oldest change, then the rows of `seqs` that pass the filters (`where`, with
        their values `args`): the recall's one round trip."""
        raise NotImplementedError

    def search_like(self, terms: int, where: str) -> str:
        """Memories holding any of `terms` substrings in content or key, with how many they hold
        (parameters: two patterns per term, namespace, the filters', the patterns again, limit)."""
        raise NotImplementedError

    def list_count(self, where: str) -> str:
        """(namespace, the filters')."""
        raise NotImplementedError

    def list_rows(self, column: str, where: str, keyset: bool) -> str:
        """A page of memories by `column`, newest first (parameters: namespace, the filters',
        with `keyset` the last value twice and its number, limit)."""
        raise NotImplementedError

    def archive_move(self, at: str, reasons: Sequence[tuple[int, str]], namespace: str) -> tuple[str, list[Any]]:
        """Copy live memories (by seq) to the archive with a reason each, RETURNING seq, number."""
        raise NotImplementedError

    def insert_rows(self, table: str, columns: str, width: int, rows: int) -> str:
        """A multi-row INSERT of `rows` rows of `width` values each."""
        raise NotImplementedError

    async def similar(self, conn: Conn, match: str, namespace: str, category: str, limit: int) -> list[Row]:
        """Memory rows best matching `match` (tokens.fts_query) in the full-text index, best first."""
        raise NotImplementedError

    def write_batch(self, conn: Conn, memories: list[Row], fts: list[Row]) -> list[Awaitable[Any]]:
        """The writes of a bulk insert's batch (rows of draft_values.MEMORY_ROW and FTS_ROW)."""
        raise NotImplementedError

    async def after_bulk(self, conn: Conn, rows: int) -> None:
        """After a bulk insert of `rows` memories, in its transaction: whatever the database
        needs to plan well over them."""
        raise NotImplementedError

    async def insert_memory(self, conn: Conn, values: Sequence[Any]) -> tuple[int, int]:
        """Insert one memory under its namespace's next number: `values` are (namespace, *draft
        values, content_hash, created, updated, accessed); returns its (seq, number)."""
        raise NotImplementedError

    async def take_numbers(self, conn: Conn, namespace: str, count: int) -> int:
        """The first of `count` consecutive numbers never handed out in the namespace, taken now
        (the caller holds the write lock)."""
        raise NotImplementedError

    async def next_seqs(self, conn: Conn, count: int) -> int:
        """The first of `count` consecutive new seqs, taken for rows that give their seq."""
        raise NotImplementedError

    async def seqs_after(self, conn: Conn, top: int) -> None:
        """New memories get seqs above `top` from now on (imported seqs are never handed out)."""
        raise NotImplementedError

    async def announce(self, conn: Conn, payloads: Iterable[str]) -> None:
        """Tell other processes what this transaction changed, delivered at its commit, when the
        database can (PostgreSQL's NOTIFY); SQLite cannot, and their searches read the change log."""
        raise NotImplementedError
