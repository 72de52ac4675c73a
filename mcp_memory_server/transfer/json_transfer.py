"""Lossless JSON export and import of one namespace (our own format; see transfer/json_format.py).

What a file holds: every memory with every field the store keeps (id, value, session and client,
the four program-managed times and counts) and its earlier values (history), oldest first; the
archived memories with theirs, and when and why they were archived; the sessions (their topic,
variables, turn count and mood: working memories belong to them and are promoted or archived when
they expire, which needs the session); and the profile's manual edits, which the user wrote and
nothing could derive again.

What it leaves out: the synthesised profile and its `profile` memory (key user.profile), made
again from the memories on the next read; the extraction log, a record of what the sieve did in
this database whose memory ids would not all hold in another; the change log and the full-text
index, which the import writes anew as every write does.

An import is one transaction: everything or nothing. Each item is checked as `remember` checks
its arguments (secrets withheld; an item that is essentially a secret is left out and named).
A memory is already present when this namespace holds one, live or archived, created at the same
moment with the same category and content (ignoring case, spacing and punctuation): importing a
file twice changes nothing the second time, and present memories are never overwritten. A new
memory keeps its id when no memory (of any namespace) holds it; otherwise it gets the next free
one, and the report says which changed. A new memory may not take a key that a live memory here
already holds: the import stops, naming both. Sessions already here are left as they are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import Field

from ..errors import InvalidInput
from ..memory.archive import HISTORY_COLUMNS, key_holders
from ..models import Model
from ..profile.profile import manual_edits, merge_manual
from ..store.profile_scrub import PROFILE_KEY
from ..store.rows import COLUMNS, iso, memory_id, utcnow
from ..store.store import Store
from ..store.tx import Tx
from .json_format import FORMAT, VERSION, Document, Record, read

__all__ = [
    "ImportReport",
    "Progress",
    "Step",
    "add_records",
    "export_data",
    "export_json",
    "import_document",
    "import_file",
]

Progress = Callable[[int, int], Awaitable[None]]  # (items done, items in all)
Step = Callable[[int], Awaitable[None]]  # told how many more items are done
_EVERY = 1000  # items between two reports of progress
_SESSION = "session_id, current_topic, context_variables, turn_count, last_emotion, created_at, updated_at"
_TOP = (  # the largest seq ever handed out, archived ones included
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0),"
    " coalesce((SELECT max(seq) FROM memories), 0), coalesce((SELECT max(seq) FROM memory_archive), 0))"
)
_PG_SEQUENCE = "pg_get_serial_sequence('memories', 'seq')"
_PG_TOP = (
    f"SELECT greatest(coalesce(pg_sequence_last_value(CAST({_PG_SEQUENCE} AS regclass)), 0),"
    " coalesce((SELECT max(seq) FROM memories), 0), coalesce((SELECT max(seq) FROM memory_archive), 0))"
)
_CHUNK = 500  # rows per multi-row INSERT: 17 parameters each stays far below SQLite's limit


class ImportReport(Model):
    memories: int = Field(description="Live memories in the file (secrets left out not counted).")
    archived: int = Field(description="Archived memories in the file.")
    created: list[str] = Field(description="Ids of the memories written, live and archived.")
    present: int = Field(description="Memories of the file this namespace already held: left as they were.")
    renamed: dict[str, str] = Field(description="File id -> id given, for ids another memory here holds.")
    withheld: int = Field(description="Memories and earlier values stored with secrets taken out of them.")
    refused: list[str] = Field(description="Items left out because little was there besides a secret.")
    sessions_added: int
    sessions_present: int
    profile_edits: bool = Field(description="Manual edits of the profile were added.")


# ---- export -----------------------------------------------------------------------------------


async def export_data(store: Store, *, now: datetime | None = None) -> dict[str, Any]:
    """This namespace's memories, archive, sessions and profile edits as one consistent snapshot."""
    async with store.snapshot() as tx:
        ns = (tx.namespace, PROFILE_KEY)
        live = await tx.fetch(f"SELECT {COLUMNS} FROM memories WHERE namespace = ? AND key IS NOT ? ORDER BY seq", ns)
        history = await tx.fetch(
            f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE memory_seq IN"
            " (SELECT seq FROM memories WHERE namespace = ? AND key IS NOT ?) ORDER BY seq",
            ns,
        )
        archived = await tx.fetch(
            f"SELECT {COLUMNS}, archived_at, archive_reason FROM memory_archive"
            " WHERE namespace = ? AND key IS NOT ? ORDER BY seq",
            ns,
        )
        archived_history = await tx.fetch(
            f"SELECT {HISTORY_COLUMNS} FROM memory_history_archive WHERE memory_seq IN"
            " (SELECT seq FROM memory_archive WHERE namespace = ? AND key IS NOT ?) ORDER BY seq",
            ns,
        )
        sessions = await tx.fetch(
            f"SELECT {_SESSION} FROM sessions WHERE namespace = ? ORDER BY session_id", (tx.namespace,)
        )
        edits = await manual_edits(tx)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": iso(now or utcnow()),
        "namespace": store.namespace,
        "memories": list(_memories(live, history)),
        "archived": [
            m | {"archived_at": r[15], "archive_reason": r[16]}
            for m, r in zip(_memories(archived, archived_history), archived, strict=True)
        ],
        "sessions": [
            dict(zip(_SESSION.split(", "), r, strict=True)) | {"context_variables": json.loads(r[2])} for r in sessions
        ],
        "profile_edits": edits,
    }


def _memories(rows: Sequence[Sequence[Any]], history: Sequence[Sequence[Any]]) -> Iterator[dict[str, Any]]:
    names = COLUMNS.split(", ")[1:15]
    earlier: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for h in history:
        row = dict(zip(HISTORY_COLUMNS.split(", ")[1:], h[1:], strict=True))
        earlier[h[0]].append(row | {"tags": json.loads(row["tags"])})
    for r in rows:
        item = {"id": memory_id(r[0])} | dict(zip(names, r[1:15], strict=True))
        yield item | {"tags": json.loads(item["tags"]), "history": earlier.get(r[0], [])}


async def export_json(store: Store, *, now: datetime | None = None, progress: Progress | None = None) -> str:
    """The export as text: one item per line, so that a large file stays compact and two
    exports compare line by line (diff, grep). `progress` hears of every 1,000 items written."""
    parts = []
    data = await export_data(store, now=now)
    total = sum(len(v) for v in data.values() if isinstance(v, list))
    done = 0
    for name, value in data.items():
        if isinstance(value, list) and value:
            lines: list[str] = []
            for start in range(0, len(value), _EVERY):
                lines += [json.dumps(item, ensure_ascii=False) for item in value[start : start + _EVERY]]
                done += len(value[start : start + _EVERY])
                if progress is not None:
                    await progress(done, total)
            parts.append(f"{json.dumps(name)}: [\n  " + ",\n  ".join(lines) + "\n ]")
        else:
            parts.append(f"{json.dumps(name)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n " + ",\n ".join(parts) + "\n}\n"


# ---- import -----------------------------------------------------------------------------------


async def import_file(
    store: Store, text: str, *, now: datetime | None = None, progress: Progress | None = None
) -> ImportReport:
    """Import a file's text in one transaction (see the module's docstring for the rules).
    Raises InvalidInput, naming the item and field, and nothing is written."""
    return await import_document(store, read(text, store.config), now=now, progress=progress)


async def import_document(
    store: Store, document: Document, *, now: datetime | None = None, progress: Progress | None = None
) -> ImportReport:
    """Import a file already read and checked (portable_format.read) in one transaction."""
    async with store.transaction() as tx:
        return await _import(tx, document, now or utcnow(), progress)


async def _import(tx: Tx, doc: Document, now: datetime, progress: Progress | None) -> ImportReport:
    records = doc.memories + doc.archived
    new = await _absent(tx, records)
    done = len(records) - len(new)

    async def step(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            await progress(done, len(records))

    await step(0)
    live = [r for r in new if r.archived is None]
    holders = await key_holders(tx, [r.draft.key for r in live if r.draft.key is not None])
    for record in live:
        key = record.draft.key
        if key is None or key not in holders:
            continue
        holder = memory_id(holders[key])
        if holders[key] == record.seq:  # the file was made before (or after) this memory changed
            raise InvalidInput(
                f"{record.where}.key: {holder} holds {key!r} here with another value than the file's;"
                f" nothing was imported, as an import never overwrites a memory. Forget {holder} first"
                " to take the file's value."
            )
        raise InvalidInput(
            f"{record.where}.key: {key!r} is already the key of {holder} in this database, a different"
            " memory; nothing was imported. Forget one of them, or change the key in the file."
        )
    seqs = await _seqs(tx, new)
    await _insert(tx, new, seqs, step)
    if new:
        await tx.log(list(seqs.values()))
        if live:
            await tx.profile_stale()
    edits = await merge_manual(tx, doc.profile_edits, now) if doc.profile_edits else False
    added = 0
    for session in doc.sessions:
        rows = await tx.fetch(
            f"INSERT INTO sessions (namespace, {_SESSION}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (namespace, session_id) DO NOTHING RETURNING 1",
            (
                tx.namespace,
                session.session_id,
                session.current_topic,
                session.context_variables,
                session.turn_count,
                session.last_emotion,
                session.created_at,
                session.updated_at,
            ),
        )
        if rows:
            added += 1
            tx.log_session(session.session_id)
    return ImportReport(
        memories=len(doc.memories),
        archived=len(doc.archived),
        created=[memory_id(seqs[r.seq]) for r in new],
        present=len(records) - len(new),
        renamed={memory_id(r.seq): memory_id(seqs[r.seq]) for r in new if seqs[r.seq] != r.seq},
        withheld=doc.withheld,
        refused=doc.refused,
        sessions_added=added,
        sessions_present=len(doc.sessions) - added,
        profile_edits=edits,
    )


async def _absent(tx: Tx, records: Sequence[Record]) -> list[Record]:
    """The records this namespace does not hold yet. Each memory here matches one record at most,
    the one with its id first, so that copies the file holds twice are imported twice."""
    digests = json.dumps(sorted({r.content_hash for r in records}))
    rows = await tx.fetch(
        "SELECT seq, category, content_hash, created_at FROM memories WHERE namespace = ?1"
        " AND content_hash IN (SELECT value FROM json_each(?2)) UNION ALL"
        " SELECT seq, category, content_hash, created_at FROM memory_archive WHERE namespace = ?1"
        " AND content_hash IN (SELECT value FROM json_each(?2))",
        (tx.namespace, digests),
    )
    here: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for seq, category, digest, created in rows:
        here[(category, digest, created)].add(seq)
    matched: set[int] = set()
    for record in records:  # same ids first
        same = here[(record.draft.category, record.content_hash, record.created_at)]
        if record.seq in same:
            same.discard(record.seq)
            matched.add(record.seq)
    absent = []
    for record in records:
        same = here[(record.draft.category, record.content_hash, record.created_at)]
        if record.seq in matched:
            continue
        if same:
            same.pop()
        else:
            absent.append(record)
    return absent


async def _seqs(tx: Tx, records: Sequence[Record]) -> dict[int, int]:
    """File seq -> seq to write: its own when no memory, live or archived, of any namespace holds
    it (seqs are the database's, not a namespace's); otherwise the next one never handed out."""
    wanted = json.dumps([r.seq for r in records])
    taken = {
        r[0]
        for r in await tx.fetch(
            "SELECT seq FROM memories WHERE seq IN (SELECT CAST(value AS BIGINT) FROM json_each(?1))"
            " UNION SELECT seq FROM memory_archive WHERE seq IN (SELECT CAST(value AS BIGINT) FROM json_each(?1))",
            (wanted,),
        )
    }
    top = await tx.fetch(_PG_TOP if tx.postgres else _TOP)
    following = max([top[0][0], *(r.seq for r in records)]) + 1
    seqs: dict[int, int] = {}
    for record in records:
        if record.seq in taken:
            seqs[record.seq], following = following, following + 1
        else:
            seqs[record.seq] = record.seq
    return seqs


async def add_records(tx: Tx, records: Sequence[Record], step: Step | None = None) -> list[int]:
    """Store `records` as new memories under the next ids never handed out (their own seqs, unique
    among them, only tell them apart); returns the seqs given, in order."""
    if not records:
        return []
    top = await tx.fetch(_PG_TOP if tx.postgres else _TOP)
    seqs = {r.seq: top[0][0] + i for i, r in enumerate(records, 1)}
    await _insert(tx, records, seqs, step)
    await tx.log(list(seqs.values()))
    if any(r.archived is None for r in records):
        await tx.profile_stale()
    return [seqs[r.seq] for r in records]


async def _insert(tx: Tx, records: Sequence[Record], seqs: dict[int, int], step: Step | None = None) -> None:
    """Live memories with their full-text rows and history, archived ones with theirs; `step`
    hears of every chunk written."""
    ns = tx.namespace
    for archived in (False, True):
        chosen = [r for r in records if (r.archived is not None) == archived]
        table, history = ("memory_archive", "memory_history_archive") if archived else ("memories", "memory_history")
        extra = ", archived_at, archive_reason" if archived else ""
        for start in range(0, len(chosen), _CHUNK):
            chunk = chosen[start : start + _CHUNK]
            values: list[Any] = []
            for r in chunk:
                d = r.draft
                tags = json.dumps(list(d.tags), ensure_ascii=False)
                values += (seqs[r.seq], ns, d.content, d.key, d.category, d.tier, d.importance, d.confidence)
                values += (d.source, tags, d.session_id, d.client, r.content_hash, r.created_at, r.updated_at)
                values += (r.last_accessed, r.access_count, *(r.archived or ()))
            marks = ", ".join("?" * (17 + 2 * archived))
            await tx.execute(
                f"INSERT INTO {table} (seq, namespace, content, key, category, tier, importance, confidence, source,"
                f" tags, session_id, client, content_hash, created_at, updated_at, last_accessed, access_count{extra})"
                " VALUES " + ", ".join([f"({marks})"] * len(chunk)),
                values,
            )
            if not archived:
                fts: list[Any] = []
                for r in chunk:
                    fts += (seqs[r.seq], *tx.index_row(r.draft.content, r.draft.key, r.draft.tags, r.draft.category))
                await tx.execute(
                    "INSERT INTO memory_fts (rowid, content, key, tags, category) VALUES "
                    + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk)),
                    fts,
                )
            old = [(seqs[r.seq], h) for r in chunk for h in r.history]
            for part in range(0, len(old), _CHUNK):
                rows = old[part : part + _CHUNK]
                await tx.execute(
                    f"INSERT INTO {history} ({HISTORY_COLUMNS}) VALUES "
                    + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)),
                    [
                        v
                        for seq, h in rows
                        for v in (
                            seq,
                            h.content,
                            h.key,
                            h.category,
                            h.importance,
                            h.confidence,
                            h.tags,
                            h.source,
                            h.reason,
                            h.changed_at,
                        )
                    ],
                )
            if step is not None:
                await step(len(chunk))
    if records:
        # AUTOINCREMENT must never hand out an imported seq again, archived ones included: restore
        # brings them back under their own seq.
        top = max(seqs.values())
        if tx.postgres:
            await tx.fetch(
                f"SELECT setval({_PG_SEQUENCE},"
                f" greatest(?, coalesce(pg_sequence_last_value(CAST({_PG_SEQUENCE} AS regclass)), 0)))",
                (top,),
            )
        else:
            await tx.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'memories'", (top,))
            await tx.execute(
                "INSERT INTO sqlite_sequence (name, seq) SELECT 'memories', ? WHERE NOT EXISTS"
                " (SELECT 1 FROM sqlite_sequence WHERE name = 'memories')",
                (top,),
            )
