"""The request ledger: writes a client can retry safely.

A write tool called with a `request_id` (chosen by the client) leaves a row in `write_requests`,
in the same transaction as the write itself: the tool, a fingerprint of its arguments and its
answer. Both commit or neither does. A later call with the same id and the same arguments is
answered from that row and changes nothing; with other arguments it is refused. So a client that
got no answer (the server was killed, the connection dropped) or an "outcome unknown" calls again
with the same id, and the write is applied once.

The ledger is per namespace, and its rows expire after `lifecycle.request_id_hours`: older ones
answer nothing, and maintenance deletes them a batch at a time."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import InvalidInput
from .backend import Conn
from .extraction_log import FORGOTTEN, plain
from .statements import Statements

__all__ = ["PRUNE_BATCH", "Request", "Stored", "find", "fingerprint", "forget", "prune", "record"]

PRUNE_BATCH = 500  # expired rows deleted per transaction: writers wait for no long delete


class Request(NamedTuple):
    """One write call that carries a request_id: the tool called and the fingerprint of its
    arguments (see `fingerprint`)."""

    request_id: str
    tool: str
    fingerprint: str

    def refuse(self, stored: Stored) -> InvalidInput:
        return InvalidInput(
            f"request_id {self.request_id!r} was already used for a different call ({stored.tool} with other "
            "arguments); nothing was changed. Use a new request_id for a new call, the same one only to retry "
            "the same call."
        )


class Stored(NamedTuple):
    """A ledger row: what answered a request_id, and for which call."""

    tool: str
    fingerprint: str
    answer: str  # the answer as JSON

    def answers(self, request: Request) -> bool:
        return self.tool == request.tool and self.fingerprint == request.fingerprint


def fingerprint(arguments: Mapping[str, Any]) -> str:
    """A digest of a call's arguments, the same for the same values whatever their order."""
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


async def find(conn: Conn, sql: Statements, namespace: str, request_id: str, since: str) -> Stored | None:
    """The namespace's row for `request_id`, unless written before `since` (expired)."""
    rows = await conn.execute_fetchall(sql.request_find, (namespace, request_id, since))
    return next((Stored._make(row) for row in rows), None)


async def record(conn: Conn, sql: Statements, namespace: str, request: Request, answer: str, at: str) -> None:
    """Write the row of a request answered in this transaction (over an expired one of the same id)."""
    await conn.execute(
        sql.request_record, (namespace, request.request_id, request.tool, request.fingerprint, answer, at)
    )


async def prune(conn: Conn, sql: Statements, namespace: str, before: str) -> int:
    """Delete up to PRUNE_BATCH of the namespace's rows written before `before`; how many went."""
    cursor = await conn.execute(sql.request_prune, (namespace, namespace, before, PRUNE_BATCH))
    return max(cursor.rowcount, 0)


async def forget(conn: Conn, sql: Statements, namespace: str, texts: Sequence[str]) -> int:
    """Take forgotten texts (`extraction_log.texts_of`) out of the answers the ledger keeps: every
    string of an answer that holds one (an extract's item, a detail quoting it) becomes FORGOTTEN,
    so a retry is answered without them. Returns the answers changed."""
    if not texts:
        return 0
    changed = 0
    for request_id, raw in await conn.execute_fetchall(sql.request_answers, (namespace,)):
        answer = json.loads(raw)
        scrubbed = _without(answer, texts)
        if scrubbed != answer:
            await conn.execute(sql.request_scrub, (json.dumps(scrubbed, ensure_ascii=False), namespace, request_id))
            changed += 1
    return changed


def _without(value: Any, texts: Sequence[str]) -> Any:
    if isinstance(value, str):
        return FORGOTTEN if any(t in plain(value) for t in texts) else value
    if isinstance(value, list):
        return [_without(v, texts) for v in value]
    if isinstance(value, dict):
        return {k: _without(v, texts) for k, v in value.items()}
    return value
