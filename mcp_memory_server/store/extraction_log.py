"""The extraction log: one row per run of the memory sieve, so a person can review what each
exchange gave (resource `memory://extraction-log`, and later the dashboard).

A row records a digest of the exchange, short previews of it with secrets withheld, and for each
channel its outcome and items: what was proposed, its value score, what was decided and which
memory it became.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import Field

from ..models import Model
from .backend import Conn
from .rows import iso, memory_id, scalar
from .statements import Statements

if TYPE_CHECKING:  # the transaction deletes through `forget` below: a module-level import would be circular
    from .tx import Tx

__all__ = [
    "ChannelReport",
    "ExtractedItem",
    "LogEntry",
    "ValueParts",
    "forget",
    "insert",
    "pending",
    "plain",
    "recent",
    "settle",
    "settle_abandoned",
    "texts_of",
]

_KEEP = 5000  # runs kept; older ones are pruned as new ones arrive
FORGOTTEN = "[forgotten]"  # what stands where a forgotten memory's text was

Decision = Literal["store", "working", "skip", "refused"]
Outcome = Literal["stored", "nothing", "extracted", "empty", "skipped", "unsupported", "pending", "failed"]


class ValueParts(Model):
    """The value score of one item and its parts (dimensions 0-10)."""

    forced: bool = Field(description="The user explicitly asked to remember it: always stored.")
    importance: float
    novelty: float = Field(description="10 x (1 - similarity to the closest stored memory).")
    relevance: float
    credibility: float
    granularity: float
    timeliness: float
    total: float = Field(
        description="3·forced + 0.5·importance + 0.4·novelty + 0.5·relevance + 0.3·credibility "
        "+ 0.2·granularity + 0.3·timeliness; ≥ 7 store, 5-7 working memory, < 5 skip."
    )


class ExtractedItem(Model):
    content: str = Field(description="The memory as proposed (secrets withheld).")
    category: str
    importance: float
    source: str
    pattern: str | None = Field(description="Fast channel: the kind of signal that matched; null for the deep channel.")
    value: ValueParts | None = Field(description="Null when the item was refused before scoring.")
    decision: Decision = Field(
        description="store: core memory; working: this session's working memory; skip; "
        "refused: it held a secret or was malformed."
    )
    id: str | None = Field(description="The memory written or matched, if any.")
    action: str | None = Field(description="created, updated, merged or unchanged, when written.")
    reason: str = Field(description="One sentence on the decision.")


class ChannelReport(Model):
    outcome: Outcome = Field(
        description="fast: stored or nothing. deep: extracted, empty, skipped (small talk), unsupported (the "
        "client cannot sample), pending (waiting for its model) or failed (a fallback note was kept)."
    )
    detail: str
    items: list[ExtractedItem]


class LogEntry(Model):
    run: str = Field(description="run_<n>, this run's id.")
    digest: str = Field(description="Digest of the exchange (session and both messages).")
    session_id: str | None
    client: str | None
    status: Literal["pending", "done"]
    user_preview: str
    assistant_preview: str
    fast: ChannelReport
    deep: ChannelReport
    fallback_note: str | None = Field(description="Id of the note that keeps the exchange while the deep channel runs.")
    created_at: datetime
    updated_at: datetime


class LogRow(NamedTuple):
    """A row of extraction_log: the previews (`input`) and channel reports as JSON. `number`
    counts the namespace's runs (run_<number>); `note_seq` is the fallback note's number."""

    number: int
    digest: str
    session_id: str | None
    client: str | None
    status: Literal["pending", "done"]
    input: str
    fast: str
    deep: str
    note_seq: int | None
    created_at: str
    updated_at: str

    def entry(self) -> LogEntry:
        preview = json.loads(self.input)
        return LogEntry(
            run=f"run_{self.number}",
            digest=self.digest,
            session_id=self.session_id,
            client=self.client,
            status=self.status,
            user_preview=preview["user"],
            assistant_preview=preview["assistant"],
            fast=ChannelReport.model_validate_json(self.fast),
            deep=ChannelReport.model_validate_json(self.deep),
            fallback_note=memory_id(self.note_seq) if self.note_seq is not None else None,
            created_at=datetime.fromisoformat(self.created_at),
            updated_at=datetime.fromisoformat(self.updated_at),
        )


async def insert(
    tx: Tx,
    *,
    digest: str,
    session_id: str | None,
    client: str | None,
    previews: tuple[str, str],
    fast: ChannelReport,
    deep: ChannelReport,
    note_seq: int | None,
    moment: datetime,
) -> int:
    """Record a run; returns its number (run_<number>). `note_seq`: the fallback note's number."""
    now = iso(moment)
    status = "pending" if deep.outcome == "pending" else "done"
    number = int(
        await scalar(
            tx._conn,
            tx._sql.log_insert,
            (
                tx.namespace,
                tx.namespace,
                digest,
                session_id,
                client,
                status,
                json.dumps({"user": previews[0], "assistant": previews[1]}, ensure_ascii=False),
                fast.model_dump_json(),
                deep.model_dump_json(),
                note_seq,
                now,
                now,
            ),
        )
    )
    if number % 100 == 0:
        await tx._conn.execute(tx._sql.log_prune, (tx.namespace, number - _KEEP))
    return number


async def pending(tx: Tx, digest: str) -> LogEntry | None:
    """The newest run of this exchange still waiting for the client's model."""
    rows = await tx._conn.execute_fetchall(tx._sql.log_pending, (tx.namespace, digest))
    return next((LogRow._make(r).entry() for r in rows), None)


async def settle(tx: Tx, run: str, deep: ChannelReport, moment: datetime) -> None:
    """Record the deep channel's outcome of a pending run."""
    await tx._conn.execute(
        tx._sql.log_settle,
        (deep.model_dump_json(), iso(moment), tx.namespace, int(run.removeprefix("run_"))),
    )


async def recent(tx: Tx, limit: int) -> list[LogEntry]:
    rows = await tx._conn.execute_fetchall(tx._sql.log_recent, (tx.namespace, limit))
    return [LogRow._make(r).entry() for r in rows]


async def settle_abandoned(tx: Tx, before: datetime, moment: datetime) -> int:
    """Close runs still waiting for a client's model since before `before`: the client refused
    or went away (on the 2026-07-28 protocol it never calls back then). Their note stays."""
    report = ChannelReport(
        outcome="failed",
        detail="The client's model never answered; the exchange is kept as the fallback note.",
        items=[],
    )
    cursor = await tx._conn.execute(
        tx._sql.log_settle_abandoned,
        (report.model_dump_json(), iso(moment), tx.namespace, iso(before)),
    )
    return max(cursor.rowcount, 0)


def plain(text: str) -> str:
    """Text as compared for forgetting: case and runs of white space do not matter."""
    return " ".join(text.casefold().split())


def _scrub_report(report: dict[str, Any], ids: set[str], texts: Sequence[str]) -> bool:
    """Blank the items of a channel report that wrote a forgotten memory or repeat its text, and
    its detail if that quotes it. Whether the report wrote a forgotten memory (its exchange is
    then that memory's source)."""
    wrote = False
    for item in report.get("items", []):
        content = plain(str(item.get("content", "")))
        if item.get("id") in ids or any(t in content for t in texts):
            wrote = wrote or item.get("id") in ids
            item["content"] = FORGOTTEN
    if any(t in plain(str(report.get("detail", ""))) for t in texts):
        report["detail"] = FORGOTTEN
    return wrote


async def texts_of(conn: Conn, sql: Statements, namespace: str, numbers: Sequence[int]) -> list[str]:
    """Every text the namespace's memories `numbers` have had (content, earlier values, archived
    copy), as compared for forgetting (`plain`)."""
    if not numbers:
        return []
    rows = await conn.execute_fetchall(sql.forgotten_texts, (namespace, sql.array(numbers)) * 4)
    return sorted({text for _, content in rows if (text := plain(content))})


async def forget(conn: Conn, sql: Statements, namespace: str, numbers: Sequence[int], texts: Sequence[str]) -> int:
    """Take the namespace's memories `numbers`, about to be deleted for good, out of the extraction
    log ("forget this" leaves nothing behind): every item that wrote or matched one, or repeats a
    text it has had (its content, earlier values, archived copy), shows FORGOTTEN instead, and so
    does every preview of an exchange it came from or that holds such a text, and every item of that
    exchange that no memory holds (a rewording skipped as a near-duplicate). Runs whose fallback note it was
    lose their previews too once settled; while a run is pending, its note is only being replaced
    by the model's answer and the exchange stays. Returns the runs changed."""
    if not numbers:
        return 0
    ids = {memory_id(n) for n in numbers}
    notes = set(numbers)
    changed = 0
    for number, status, raw_input, raw_fast, raw_deep, note_seq in await conn.execute_fetchall(
        sql.log_runs, (namespace,)
    ):
        previews, fast, deep = json.loads(raw_input), json.loads(raw_fast), json.loads(raw_deep)
        before = (raw_input, raw_fast, raw_deep)
        source = _scrub_report(fast, ids, texts) | _scrub_report(deep, ids, texts)
        source = source or (note_seq in notes and status == "done")
        if source:  # what the exchange proposed and nothing holds (a skipped rewording) goes with it
            for item in (*fast.get("items", []), *deep.get("items", [])):
                if item.get("id") is None:
                    item["content"] = FORGOTTEN
        for side in ("user", "assistant"):
            if previews.get(side) and (source or any(t in plain(previews[side]) for t in texts)):
                previews[side] = FORGOTTEN
        after = tuple(json.dumps(v, ensure_ascii=False) for v in (previews, fast, deep))
        if after != tuple(json.dumps(json.loads(v), ensure_ascii=False) for v in before):
            await conn.execute(sql.log_scrub, (*after, namespace, number))
            changed += 1
    return changed
