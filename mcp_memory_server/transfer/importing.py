"""Import in any format the server reads (json, memory-jsonl, mem0, markdown), with progress, and the
one summary the CLI prints and the `import_memories` tool returns.

Every file is read and checked first, in a worker thread (one file at a time), within the limits
that follow MCP_MEMORY_MAX_BODY (transfer/limits.py: what it unpacks to, its JSON values, its
items); then stored on the event loop. json and markdown keep their own rules (json_transfer.py,
markdown.py). The other tools' files (foreign_formats.py) are stored in one transaction, all or
nothing:

- every item is checked as `remember` checks its arguments; any invalid item stops the import
  before anything is written, and the message names up to three of them by line or position; an
  item that is essentially a secret is left out and named, others have their secrets withheld;
- an item whose text (ignoring case, spacing and punctuation) a memory here already holds, live
  or archived, in any category, is present and left alone: importing a file twice changes nothing,
  and nothing is ever overwritten with the same value or deleted;
- an item with a key (`kg:Alice#2`, `mem0:ID`) whose key a live memory holds, with a text the file
  holds nowhere, updates that memory (its old value goes to its history): an observation edited in
  the other tool updates its memory instead of adding a second one. Unless the memory was written
  or edited here by anything but this importer (another client), or changed later than the item
  says it was: then it stays as it is, and the item counts as present. A key held by an archived
  memory, or by one whose text is still in the file elsewhere, is left to it; the item is stored
  without a key;
- new memories keep the file's creation and change times (else the import's), the import counts
  as their last access; items the other tool archived go straight to the archive.
"""

from __future__ import annotations

import gc
import hashlib
import re
import threading
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import anyio.lowlevel
import anyio.to_thread
from pydantic import Field

from ..config.config import Config
from ..errors import InvalidInput, SecretRefused
from ..memory import validate
from ..memory.requests import request
from ..models import Draft, Model
from ..store import export_import
from ..store.export_import import KeyHolder
from ..store.ledger import Request
from ..store.rows import iso, memory_id, utcnow
from ..store.store import Store
from ..store.tx import Tx
from ..text.tokens import fingerprint, normalize
from .foreign_formats import Item, detect, read_mem0, read_memory_jsonl
from .json_format import Document, Record, read
from .json_transfer import ImportReport as JsonReport
from .json_transfer import add_records, import_into
from .limits import check_json_size, decode
from .markdown import CheckedMarkdown, check_markdown, markdown_edits_into, markdown_into
from .markdown import ImportReport as MarkdownReport

__all__ = ["FORMATS", "ImportSummary", "Progress", "import_bytes", "import_text"]

FORMATS = ("json", "memory-jsonl", "mem0", "markdown")
Progress = Callable[[int, int], Awaitable[None]]  # (items done, items in all)
MAX_ERRORS = 3  # invalid items named in one message
_ERROR_CHARS = 250  # of each
MAX_IDS = 100
_CHECKPOINT_EVERY = 500  # items sorted between two turns of the event loop


class ImportSummary(Model):
    format: str = Field(description="The file's format: json, memory-jsonl, mem0 or markdown.")
    items: int = Field(description="Memories the file holds (relations and observations each count).")
    created: int = Field(description="Memories written, archived ones included.")
    updated: int = Field(description="Memories whose key the file holds with a new text: the old one is in history.")
    forgotten: int = Field(default=0, description="Edits: memories whose line was removed, deleted.")
    present: int = Field(description="Items this database already held (or that came earlier in the file).")
    archived: int = Field(description="Items imported into the archive (archived or paused in the other tool).")
    skipped: int = Field(description="Items left out because the other tool had deleted them.")
    withheld: int = Field(description="Items stored with secrets taken out.")
    refused: list[str] = Field(description="Items left out as essentially a secret, by line or position.")
    ids: list[str] = Field(description=f"Ids of the memories created or updated (the first {MAX_IDS}).")
    detail: str = Field(description="The same as one line of text.")


async def import_bytes(
    store: Store,
    data: bytes,
    file_format: str | None = None,
    *,
    name: str = "the file",
    progress: Progress | None = None,
    now: datetime | None = None,
) -> ImportSummary:
    """A file as read from disk or sent over HTTP (zip and gzip unpacked within the limit of
    import_limits.decode), in `file_format` or the one it looks like."""
    now, config = now or utcnow(), store.config
    checked = await _off_loop(lambda: _checked(decode(data, config, name), file_format, config, now))
    return await _store(store, checked, progress, now)


async def import_text(
    store: Store,
    text: str,
    file_format: str | None = None,
    *,
    progress: Progress | None = None,
    now: datetime | None = None,
    request_id: str | None = None,
    edits: bool = False,
) -> ImportSummary:
    """A file's text, in `file_format` or the one it looks like. With a `request_id`, a retry of
    the same call answers as the first did and imports nothing. `edits`: a MEMORY.md rendering
    of this store, edited (markdown.markdown_edits_into): its lines update, mark done, forget and
    add; InvalidInput for another format."""
    digest = hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()
    asked = request("import_memories", request_id, {"data": digest, "format": file_format, "edits": edits})
    if edits and file_format not in (None, "markdown"):
        raise InvalidInput(f"mode edits is for a MEMORY.md file, not {file_format}; use format markdown or auto.")
    if edits:
        file_format = "markdown"
    now, config = now or utcnow(), store.config
    checked = await _off_loop(lambda: _checked(text, file_format, config, now, edits=edits))
    return await _store(store, checked, progress, now, asked)


@dataclass(frozen=True)
class _Items:
    """Other tools' items, checked as `remember` checks its arguments, not stored yet."""

    file_format: str
    count: int  # items in the file, deleted ones included
    drafts: list[tuple[Item, Draft, str]]  # (item, draft, content fingerprint) of the valid items
    refused: list[str]  # items left out as essentially a secret
    skipped: int  # deleted in the other tool: left out


_Checked = Document | CheckedMarkdown | _Items
# One file read and checked at a time in this process: each may take as much memory as the
# largest legal file does, and several at once would add up.
_READING = threading.Lock()
_JSON_START = re.compile(r"\A\s*[\[{]")  # at the start only: searched from every blank of a run it was quadratic


async def _off_loop(check: Callable[[], _Checked]) -> _Checked:
    """Run `check` (unpacking, parsing and checking a file: CPU work that takes seconds for a
    large one) in a worker thread, so that the event loop keeps answering other requests."""

    def alone() -> _Checked:
        with _READING:
            # A file builds millions of objects, none in a cycle (JSON values, items, drafts):
            # the cyclic collector would walk them all, again and again as they grow, each time
            # holding the interpreter's lock against the event loop (a 9 MB file: 2.3 of its 2.9
            # seconds). Reference counting frees them all the same; the collector (of the whole
            # process) pauses for the seconds a file takes, and catches up after.
            collecting = gc.isenabled()
            gc.disable()
            try:
                return check()
            except BaseException as exc:
                _clear_frames(exc)  # they hold the file's values: freed here, not on the event loop
                raise
            finally:
                if collecting:
                    gc.enable()

    return await anyio.to_thread.run_sync(alone)


def _clear_frames(exc: BaseException | None) -> None:
    """Clear the local variables of the finished frames an exception (and those it was raised
    from) holds."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


def _checked(text: str, file_format: str | None, config: Config, now: datetime, *, edits: bool = False) -> _Checked:
    """The file read in its format and every item checked; InvalidInput (TooLarge) when it is not
    one to import."""
    if file_format is not None and file_format not in FORMATS:
        raise InvalidInput(f"format {file_format!r} cannot be imported; known formats: {', '.join(FORMATS)}.")
    try:
        if file_format != "markdown" and _JSON_START.match(text):
            check_json_size(text, config)
        chosen = file_format or detect(text)
        if chosen == "json":
            return read(text, config)
        if chosen == "markdown":
            return check_markdown(text, config, client="import-markdown", now=now, edits=edits)
        if chosen == "memory-jsonl":
            items, skipped = read_memory_jsonl(text, config), 0
        else:
            items, skipped = read_mem0(text, config)
    except RecursionError:  # json's parser on thousands of nested brackets
        raise InvalidInput("the file nests JSON too deeply to be a memory export; nothing was imported.") from None
    checked, refused = _check(items, config)
    drafts = [(item, draft, fingerprint(draft.content)) for item, draft in checked]
    return _Items(chosen, len(items) + skipped, drafts, refused, skipped)


async def _store(
    store: Store, checked: _Checked, progress: Progress | None, now: datetime, asked: Request | None = None
) -> ImportSummary:
    """Store a checked file in one transaction, which also keeps the answer of a call with a
    request_id (a retry of the same call gets it back, and nothing is imported twice)."""
    async with store.transaction(asked) as tx:
        if (first := tx.replayed(ImportSummary)) is not None:
            return first
        if isinstance(checked, Document):
            summary = json_summary(await import_into(tx, checked, now, progress))
        elif isinstance(checked, CheckedMarkdown):
            report = await (markdown_edits_into if checked.edits else markdown_into)(tx, checked, now)
            if progress is not None:
                await progress(report.lines, report.lines)
            summary = markdown_summary(report)
        else:
            summary = await _items_into(tx, checked, progress, now)
        tx.answer(summary)
    return summary


def _tags(tags: Sequence[str], config: Config) -> list[str]:
    """Names and categories of other tools as tags: cut to the tag limits rather than refused, once
    screened whole (SecretRefused: the item is left out)."""
    validate.screen_names(tags, "tag", config.limits.personal_numbers)
    cut = [" ".join(normalize(t).split())[: config.limits.max_tag_chars].strip() for t in tags]
    return list(dict.fromkeys(t for t in cut if t))[: config.limits.max_tags]


def _check(items: Sequence[Item], config: Config) -> tuple[list[tuple[Item, Draft]], list[str]]:
    """(item, draft) of the valid items and the ones refused as secrets; InvalidInput naming the
    first invalid ones."""
    checked: list[tuple[Item, Draft]] = []
    refused: list[str] = []
    errors: list[str] = []
    for item in items:
        try:
            draft = validate.draft(
                config,
                content=item.content,
                category_name=item.category,
                key_name=item.key,
                tag_list=_tags(item.tags, config),
                source_name=item.source,
                client=item.client,
            )
        except SecretRefused:
            refused.append(item.where)
            continue
        except InvalidInput as exc:
            errors.append(f"{item.where}: {exc}")
            continue
        checked.append((item, draft))
    if errors:
        more = f" (and {len(errors) - MAX_ERRORS} more)" if len(errors) > MAX_ERRORS else ""
        named = " ".join(e if len(e) <= _ERROR_CHARS else e[: _ERROR_CHARS - 3] + "..." for e in errors[:MAX_ERRORS])
        raise InvalidInput(f"nothing was imported: {named}{more}")
    return checked, refused


async def _items_into(tx: Tx, checked: _Items, progress: Progress | None, now: datetime) -> ImportSummary:
    """Store other tools' items in the caller's transaction (see the module's docstring for the rules)."""
    drafts = checked.drafts
    total = len(drafts)
    if progress is not None:
        await progress(0, total)
    records: list[Record] = []
    updated: list[str] = []
    present = 0
    held = await export_import.held_hashes(tx, {d for _, _, d in drafts})
    holders = await export_import.key_holders_in_full(
        tx, {draft.key for _, draft, _ in drafts if draft.key is not None}
    )
    in_file = {d for _, _, d in drafts}
    taken: set[str] = set()
    for number, (item, draft, digest) in enumerate(drafts, 1):
        if number % _CHECKPOINT_EVERY == 0:  # tens of ms of work: let other requests run between
            await anyio.lowlevel.checkpoint()
        if digest in held:
            present += 1
            continue
        held.add(digest)
        key = draft.key
        holder = holders.get(key) if key is not None and key not in taken else None
        if holder is not None and not holder.archived and holder.content_hash not in in_file:
            taken.add(holder.key)
            if not _replaceable(holder, draft, item):
                present += 1  # changed here since: the version here stays
                continue
            updated.append((await tx.replace(holder.number, draft, digest, now, "imported")).id)
            continue
        if key is not None:
            if key in taken or key in holders:  # the key stays with the memory holding it
                draft = draft.model_copy(update={"key": None})
            taken.add(key)
        records.append(_record(item, draft, digest, len(records) + 1, now))
    if progress is not None and (present or updated):
        await progress(present + len(updated), total)
    done = present + len(updated)

    async def step(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            await progress(done, total)

    numbers = await add_records(tx, records, now, step)
    created = [memory_id(n) for n in numbers]
    summary = ImportSummary(
        format=checked.file_format,
        items=checked.count,
        created=len(created),
        updated=len(updated),
        present=present,
        archived=sum(item.archived is not None for item, _, _ in drafts),
        skipped=checked.skipped,
        withheld=sum(bool(draft.withheld) for _, draft, _ in drafts),
        refused=checked.refused,
        ids=(created + updated)[:MAX_IDS],
        detail="",
    )
    return summary.model_copy(update={"detail": _line(summary)})


def _replaceable(holder: KeyHolder, draft: Draft, item: Item) -> bool:
    """Whether an item may update the memory holding its key: one this importer wrote (same client)
    whose value no one has changed here since (an edit on the dashboard keeps the client), and not
    changed later than the item (when the item says when it changed). A memory written or edited
    here by anything else keeps its text."""
    if holder.client != draft.client or holder.changed_by not in (None, "imported"):
        return False
    return item.updated_at is None or iso(item.updated_at) > holder.updated_at


def _record(item: Item, draft: Draft, digest: str, number: int, now: datetime) -> Record:
    created = item.created_at or now
    changed = max(item.updated_at or created, created)
    archived = (iso(item.archived[0] or now), item.archived[1]) if item.archived else None
    return Record(
        where=item.where,
        number=number,
        draft=draft.model_copy(update={"withheld": ()}) if draft.withheld else draft,  # frozen: shared
        content_hash=digest,
        created_at=iso(created),
        updated_at=iso(changed),
        last_accessed=iso(now),
        access_count=0,
        history=(),
        archived=archived,
    )


def _line(s: ImportSummary) -> str:
    line = f"{s.items} items, {s.created} created, {s.updated} updated, {s.present} already present"
    if s.archived:
        line += f", {s.archived} of them archived"
    if s.skipped:
        line += f", {s.skipped} deleted ones left out"
    if s.withheld:
        line += f", secrets withheld from {s.withheld}"
    if s.refused:
        line += f", left out as secrets: {', '.join(s.refused)}"
    return line


# ---- the reports of json and markdown as summaries ----------------------------------------------


def json_line(report: JsonReport) -> str:
    archived = f" and {report.archived} archived" if report.archived else ""
    summary = f"{report.memories} memories{archived}, {len(report.created)} created, {report.present} already present"
    if report.sessions_added or report.sessions_present:
        summary += f", sessions: {report.sessions_added} added, {report.sessions_present} already present"
    if report.profile_edits:
        summary += ", profile edits added"
    if report.withheld:
        summary += f", secrets withheld from {report.withheld}"
    if report.refused:
        summary += f", left out as secrets: {', '.join(report.refused)}"
    if report.renamed:
        summary += ", ids taken here and changed: " + ", ".join(f"{a} -> {b}" for a, b in report.renamed.items())
    return summary


def json_summary(report: JsonReport) -> ImportSummary:
    return ImportSummary(
        format="json",
        items=report.memories + report.archived,
        created=len(report.created),
        updated=0,
        present=report.present,
        archived=report.archived,
        skipped=0,
        withheld=report.withheld,
        refused=report.refused,
        ids=report.created[:MAX_IDS],
        detail=json_line(report),
    )


def markdown_line(report: MarkdownReport) -> str:
    summary = f"{report.lines} items, {len(report.created)} created, {report.present} already present"
    if report.updated:
        summary += f", updated: {', '.join(report.updated[:MAX_IDS])}"
    if report.done:
        summary += f", marked done: {', '.join(report.done[:MAX_IDS])}"
    if report.forgotten:
        summary += f", forgotten: {', '.join(report.forgotten[:MAX_IDS])}"
    if report.withheld:
        summary += f", secrets withheld from {report.withheld}"
    if report.refused:
        lines = ", ".join(map(str, report.refused))
        summary += f", left out as secrets: line{'s' if len(report.refused) > 1 else ''} {lines}"
    return summary


def markdown_summary(report: MarkdownReport) -> ImportSummary:
    return ImportSummary(
        format="markdown",
        items=report.lines,
        created=len(report.created),
        updated=len(report.updated) + len(report.done),
        forgotten=len(report.forgotten),
        present=report.present,
        archived=0,
        skipped=0,
        withheld=report.withheld,
        refused=[f"line {n}" for n in report.refused],
        ids=(report.created + report.updated + report.done)[:MAX_IDS],
        detail=markdown_line(report),
    )
