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
memory keeps its id when no memory of this namespace, live or archived, holds it (ids are counted
per namespace); otherwise it gets one never handed out here, and the report says which changed.
A new memory may not take a key that a live memory here already holds: the import stops, naming
both. Sessions already here are left as they are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import Field

from ..errors import InvalidInput
from ..models import Model
from ..profile.profile import manual_edits, merge_manual
from ..store import archive, export_import
from ..store.rows import HistoryRow, MemoryRow, iso, memory_id, utcnow
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
    "import_into",
]

Progress = Callable[[int, int], Awaitable[None]]  # (items done, items in all)
Step = Callable[[int], Awaitable[None]]  # told how many more items are done
_EVERY = 1000  # items between two reports of progress


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
        data = await export_import.exported(tx)
        edits = await manual_edits(tx)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": iso(now or utcnow()),
        "namespace": store.namespace,
        "memories": list(_memories(data.memories, data.history)),
        "archived": [
            m | {"archived_at": a.archived_at, "archive_reason": a.archive_reason}
            for m, a in zip(
                _memories([a.memory for a in data.archived], data.archived_history), data.archived, strict=True
            )
        ],
        "sessions": [s._asdict() | {"context_variables": json.loads(s.context_variables)} for s in data.sessions],
        "profile_edits": edits,
    }


def _memories(rows: Sequence[MemoryRow], history: Sequence[HistoryRow]) -> Iterator[dict[str, Any]]:
    earlier: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for h in history:
        earlier[h.memory_seq].append(h.value())
    for r in rows:
        item = {"id": r.id} | r._asdict()
        del item["seq"], item["number"]  # the database's key, and the id's number given as the id
        yield item | {"tags": json.loads(r.tags), "history": earlier.get(r.seq, [])}


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
        return await import_into(tx, document, now or utcnow(), progress)


async def import_into(tx: Tx, doc: Document, now: datetime, progress: Progress | None) -> ImportReport:
    """`import_document`'s work, inside a transaction the caller holds."""
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
    holders = await archive.key_holders(tx, [r.draft.key for r in live if r.draft.key is not None])
    for record in live:
        key = record.draft.key
        if key is None or key not in holders:
            continue
        holder = memory_id(holders[key])
        if holders[key] == record.number:  # the file was made before (or after) this memory changed
            raise InvalidInput(
                f"{record.where}.key: {holder} holds {key!r} here with another value than the file's;"
                f" nothing was imported, as an import never overwrites a memory. Forget {holder} first"
                " to take the file's value."
            )
        raise InvalidInput(
            f"{record.where}.key: {key!r} is already the key of {holder} in this database, a different"
            " memory; nothing was imported. Forget one of them, or change the key in the file."
        )
    numbers = await export_import.numbers_for(tx, [r.number for r in new])
    await export_import.insert_imported(tx, new, numbers, step, arrived=iso(now))
    edits = await merge_manual(tx, doc.profile_edits, now) if doc.profile_edits else False
    added = 0
    for session in doc.sessions:
        added += await export_import.add_session(tx, session)
    return ImportReport(
        memories=len(doc.memories),
        archived=len(doc.archived),
        created=[memory_id(numbers[r.number]) for r in new],
        present=len(records) - len(new),
        renamed={memory_id(r.number): memory_id(numbers[r.number]) for r in new if numbers[r.number] != r.number},
        withheld=doc.withheld,
        refused=doc.refused,
        sessions_added=added,
        sessions_present=len(doc.sessions) - added,
        profile_edits=edits,
    )


async def _absent(tx: Tx, records: Sequence[Record]) -> list[Record]:
    """The records this namespace does not hold yet. Each memory here matches one record at most,
    the one with its id first, so that copies the file holds twice are imported twice."""
    here: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for memory in await export_import.present_memories(tx, {r.content_hash for r in records}):
        here[(memory.category, memory.content_hash, memory.created_at)].add(memory.number)
    matched: set[int] = set()
    for record in records:  # same ids first
        same = here[(record.draft.category, record.content_hash, record.created_at)]
        if record.number in same:
            same.discard(record.number)
            matched.add(record.number)
    absent = []
    for record in records:
        same = here[(record.draft.category, record.content_hash, record.created_at)]
        if record.number in matched:
            continue
        if same:
            same.pop()
        else:
            absent.append(record)
    return absent


async def add_records(tx: Tx, records: Sequence[Record], now: datetime, step: Step | None = None) -> list[int]:
    """Store `records` as new memories under the next ids never handed out here (their own
    numbers, unique among them, only tell them apart), arrived `now`; returns the numbers given,
    in order."""
    if not records:
        return []
    given = await export_import.new_numbers(tx, len(records))
    numbers = {r.number: n for r, n in zip(records, given, strict=True)}
    await export_import.insert_imported(tx, records, numbers, step, arrived=iso(now))
    return given
