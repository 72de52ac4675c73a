"""The database schema as ordered migrations; each is applied once, in one transaction, and
recorded in `schema_migrations`. Never edit a released migration: add the next one."""

from __future__ import annotations

__all__ = ["MIGRATIONS", "Migration"]

Migration = tuple[int, str, tuple[str, ...]]

MIGRATIONS: tuple[Migration, ...] = (
    (
        1,
        "memories, history, sessions, full-text index",
        (
            """CREATE TABLE memories (
                seq           INTEGER PRIMARY KEY AUTOINCREMENT,  -- id is 'mem_' || seq; never reused
                namespace     TEXT NOT NULL DEFAULT '',
                content       TEXT NOT NULL,
                key           TEXT,
                category      TEXT NOT NULL,
                tier          TEXT NOT NULL CHECK (tier IN ('core', 'working')),
                importance    REAL NOT NULL CHECK (importance BETWEEN 0 AND 1),
                confidence    REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
                source        TEXT NOT NULL,
                tags          TEXT NOT NULL DEFAULT '[]',          -- JSON array of strings
                session_id    TEXT,
                client        TEXT,
                content_hash  TEXT NOT NULL,                       -- of the normalised content
                created_at    TEXT NOT NULL,                       -- ISO 8601, UTC
                updated_at    TEXT NOT NULL,
                last_accessed TEXT NOT NULL,
                access_count  INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE UNIQUE INDEX memories_key ON memories (namespace, key) WHERE key IS NOT NULL",
            "CREATE INDEX memories_hash ON memories (namespace, category, content_hash)",
            "CREATE INDEX memories_updated ON memories (namespace, updated_at, seq)",
            "CREATE INDEX memories_created ON memories (namespace, created_at, seq)",
            "CREATE INDEX memories_accessed ON memories (namespace, last_accessed, seq)",
            "CREATE INDEX memories_importance ON memories (namespace, importance, seq)",
            "CREATE INDEX memories_category ON memories (namespace, category, updated_at)",
            """CREATE TABLE memory_history (
                seq         INTEGER PRIMARY KEY,
                memory_seq  INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
                content     TEXT NOT NULL,
                key         TEXT,
                category    TEXT NOT NULL,
                importance  REAL NOT NULL,
                confidence  REAL NOT NULL,
                tags        TEXT NOT NULL,
                source      TEXT NOT NULL,
                reason      TEXT NOT NULL,                          -- updated | merged
                changed_at  TEXT NOT NULL
            )""",
            "CREATE INDEX memory_history_memory ON memory_history (memory_seq, seq)",
            """CREATE TABLE sessions (
                namespace         TEXT NOT NULL DEFAULT '',
                session_id        TEXT NOT NULL,
                current_topic     TEXT,
                context_variables TEXT NOT NULL DEFAULT '{}',
                turn_count        INTEGER NOT NULL DEFAULT 0,
                last_emotion      TEXT,
                created_at        TEXT NOT NULL,
                updated_at        TEXT NOT NULL,
                PRIMARY KEY (namespace, session_id)
            )""",
            # Pre-segmented text (jieba words separated by spaces): unicode61 alone would index
            # 我喜欢用Python写代码 as one token. rowid = memories.seq; kept in sync by the store in
            # the same transaction as every write.
            """CREATE VIRTUAL TABLE memory_fts USING fts5 (
                content, key, tags, category, tokenize = 'unicode61 remove_diacritics 2'
            )""",
            "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ),
    ),
    (
        2,
        "change log for in-process indexes",
        (
            # Every insert, update and delete of a memory appends its seq here in the same
            # transaction, so each process's in-memory BM25 index can follow writes made by others.
            """CREATE TABLE memory_changes (
                change    INTEGER PRIMARY KEY AUTOINCREMENT,
                namespace TEXT NOT NULL,
                seq       INTEGER NOT NULL
            )""",
        ),
    ),
    (
        3,
        "full-text index: room for a bulk import's terms in memory",
        (
            # FTS5 keeps a transaction's new terms in memory and writes them out as one more index
            # segment each time they pass `hashsize` (1 MB by default, about 1,200 memories), and
            # every segment is merged into others later. 8 MB holds an import of several thousand
            # memories in one segment; a single remember uses a few kilobytes of it.
            "INSERT INTO memory_fts (memory_fts, rank) VALUES ('hashsize', 8388608)",
        ),
    ),
    (
        4,
        "archive of memories set aside by cleanup and session expiry; working memories by session",
        (
            # Automatic cleanup never deletes (SPEC 5): it moves a memory here, history included,
            # and `restore` moves it back under the same seq, hence the same id (AUTOINCREMENT
            # never hands out a seq again, so nothing can have taken it meanwhile). Archived
            # memories have no full-text row: restore indexes them again.
            """CREATE TABLE memory_archive (
                seq            INTEGER PRIMARY KEY,                -- the seq it had, and gets back
                namespace      TEXT NOT NULL,
                content        TEXT NOT NULL,
                key            TEXT,
                category       TEXT NOT NULL,
                tier           TEXT NOT NULL,
                importance     REAL NOT NULL,
                confidence     REAL NOT NULL,
                source         TEXT NOT NULL,
                tags           TEXT NOT NULL,
                session_id     TEXT,
                client         TEXT,
                content_hash   TEXT NOT NULL,
                created_at     TEXT NOT NULL,
                updated_at     TEXT NOT NULL,
                last_accessed  TEXT NOT NULL,
                access_count   INTEGER NOT NULL,
                archived_at    TEXT NOT NULL,
                archive_reason TEXT NOT NULL                       -- why, in words: "cleanup: unused"
            )""",
            "CREATE INDEX memory_archive_archived ON memory_archive (namespace, archived_at, seq)",
            """CREATE TABLE memory_history_archive (
                seq         INTEGER PRIMARY KEY,
                memory_seq  INTEGER NOT NULL REFERENCES memory_archive (seq) ON DELETE CASCADE,
                content     TEXT NOT NULL,
                key         TEXT,
                category    TEXT NOT NULL,
                importance  REAL NOT NULL,
                confidence  REAL NOT NULL,
                tags        TEXT NOT NULL,
                source      TEXT NOT NULL,
                reason      TEXT NOT NULL,
                changed_at  TEXT NOT NULL
            )""",
            "CREATE INDEX memory_history_archive_memory ON memory_history_archive (memory_seq, seq)",
            # Session expiry looks up each idle session's working memories; core memories, the
            # great majority, stay out of this index.
            "CREATE INDEX memories_working ON memories (namespace, session_id) WHERE tier = 'working'",
        ),
    ),
    (
        5,
        "extraction log of the memory sieve",
        (
            # One row per sieve run: what came in (a digest and short redacted previews), what each
            # channel did with it and what was stored. `status` is pending while the client's model
            # is still being asked (the fast channel's items and the fallback note are then already
            # written), done afterwards.
            """CREATE TABLE extraction_log (
                seq        INTEGER PRIMARY KEY AUTOINCREMENT,
                namespace  TEXT NOT NULL DEFAULT '',
                digest     TEXT NOT NULL,
                session_id TEXT,
                client     TEXT,
                status     TEXT NOT NULL CHECK (status IN ('pending', 'done')),
                input      TEXT NOT NULL,  -- JSON {user, assistant}: previews, secrets withheld
                fast       TEXT NOT NULL,  -- JSON channel report {outcome, detail, items}
                deep       TEXT NOT NULL,
                note_seq   INTEGER,        -- the fallback note written ahead of the deep channel
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            "CREATE INDEX extraction_log_digest ON extraction_log (namespace, digest, status)",
        ),
    ),
    (
        6,
        "the user profile",
        (
            # The synthesised profile (JSON items citing memory ids), the user's manual edits kept
            # apart so that re-synthesis never loses them, and whether writes since have made it
            # stale. Writes of identity, preference and skill memories and every deletion set
            # `stale` in their own transaction.
            """CREATE TABLE profile (
                namespace  TEXT PRIMARY KEY,
                data       TEXT NOT NULL,
                manual     TEXT NOT NULL DEFAULT '{}',
                stale      INTEGER NOT NULL DEFAULT 1,
                updated_at TEXT NOT NULL
            )""",
        ),
    ),
    (
        7,
        "native types: times as timestamptz, JSON as jsonb, the profile's flag as boolean",
        (),  # PostgreSQL's; SQLite keeps ISO 8601 text, JSON text and 0 or 1, as it always has
    ),
    (
        8,
        "embedding vectors of the semantic stage",
        (
            # One vector per memory, of the model named beside it, computed from the content whose
            # fingerprint it keeps: a vector whose content_hash is not its memory's any more is stale
            # and never used (the background worker embeds the memory again). A deleted or archived
            # memory's vector goes with it. `written` numbers the commits that wrote vectors, so
            # every process's in-memory vector index reads only what is new since it looked.
            # vector: index/vectors.encode's bytes (dim int8 codes, then a float32 scale).
            """CREATE TABLE memory_vectors (
                seq          INTEGER PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE,
                model        TEXT NOT NULL,
                dim          INTEGER NOT NULL,
                content_hash TEXT NOT NULL,
                vector       BLOB NOT NULL,
                written      INTEGER NOT NULL
            )""",
            "CREATE INDEX memory_vectors_written ON memory_vectors (written)",
        ),
    ),
    (
        9,
        "the script group of every vector, for recall across languages",
        (
            # Which script its memory's text is mostly in (text/scripts.py: 0 Latin, 1 CJK): the
            # vector index compares cosines across scripts by group (index/vectors.py). Vectors
            # written before it are dropped and computed again in the background (recall stays
            # keyword-only for the memories meanwhile), since the group is read off the text.
            "DELETE FROM memory_vectors",
            "ALTER TABLE memory_vectors ADD COLUMN script INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    (
        10,
        "the request ledger: writes retried with the same request_id",
        (
            # One row per write call that carried a client's request_id, written in the same
            # transaction as the write (store/ledger.py): a retry finds it and gets `answer` back
            # (the first answer, as JSON) instead of writing again. `fingerprint` is a digest of the
            # call's arguments: the same id with other arguments is refused. Rows expire.
            """CREATE TABLE write_requests (
                namespace   TEXT NOT NULL,
                request_id  TEXT NOT NULL,
                tool        TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                answer      TEXT NOT NULL,
                created_at  TEXT NOT NULL,
                PRIMARY KEY (namespace, request_id)
            )""",
            "CREATE INDEX write_requests_created ON write_requests (namespace, created_at)",
        ),
    ),
    (
        11,
        "memory numbers counted per namespace",
        (
            # A memory's id is 'mem_' || number, counted in its own namespace: the ids a namespace
            # sees never jump by the writes of the others sharing the database. seq stays the
            # database's key (history, full-text rowid, vectors, change log). A memory keeps its
            # number in the archive and gets it back on restore.
            "ALTER TABLE memories ADD COLUMN number INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE memory_archive ADD COLUMN number INTEGER NOT NULL DEFAULT 0",
            # Every id given out before stays valid: it was 'mem_' || seq.
            "UPDATE memories SET number = seq",
            "UPDATE memory_archive SET number = seq",
            "CREATE UNIQUE INDEX memories_number ON memories (namespace, number)",
            "CREATE UNIQUE INDEX memory_archive_number ON memory_archive (namespace, number)",
            # The last number each namespace handed out: never handed out again, also after a
            # delete. A namespace without a row continues after `number_floor`, the largest seq
            # the database had handed out when numbering began (0 for a new database), so an id
            # of the database-wide numbering (a namespace's memory since deleted) never names
            # another memory later.
            "CREATE TABLE memory_numbers (namespace TEXT PRIMARY KEY, last INTEGER NOT NULL)",
            """INSERT INTO meta (name, value) SELECT 'number_floor', CAST(max(
                coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0),
                coalesce((SELECT max(seq) FROM memories), 0),
                coalesce((SELECT max(seq) FROM memory_archive), 0)) AS TEXT)""",
            # Listing pages end on (sort value, number): a client's cursor holds the number.
            "DROP INDEX memories_updated",
            "DROP INDEX memories_created",
            "DROP INDEX memories_accessed",
            "DROP INDEX memories_importance",
            "CREATE INDEX memories_updated ON memories (namespace, updated_at, number)",
            "CREATE INDEX memories_created ON memories (namespace, created_at, number)",
            "CREATE INDEX memories_accessed ON memories (namespace, last_accessed, number)",
            "CREATE INDEX memories_importance ON memories (namespace, importance, number)",
            # Sieve runs (run_<number>) are counted per namespace too; note_seq holds the fallback
            # note's number from now on (the same value as its seq for every row written before).
            "ALTER TABLE extraction_log ADD COLUMN number INTEGER NOT NULL DEFAULT 0",
            "UPDATE extraction_log SET number = seq",
            "CREATE INDEX extraction_log_number ON extraction_log (namespace, number)",
        ),
    ),
    (
        12,
        "key slots in one spelling",
        # Its work is done by the program (store/key_slots.py: NFKC, case folding, look-alike
        # letters), since the statements cannot spell keys the way text/keys.py does.
        (),
    ),
    (
        13,
        "the profile kept out of the memories",
        # The program removes the memory (key user.profile) that earlier versions wrote to carry
        # the profile's text, with its history and index row (store/profile_scrub.py).
        (),
    ),
    (
        14,
        "when a memory arrived in this database",
        # Set by an import, which keeps each memory's times as they were where it came from; NULL
        # for a memory written here. Cleanup counts time unused from the later of
        # its last access and its arrival (memory/lifecycle.py).
        ("ALTER TABLE memories ADD COLUMN arrived_at TEXT",),
    ),
)
