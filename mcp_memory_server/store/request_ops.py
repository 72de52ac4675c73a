"""The store's part for calls carrying a request_id: the ledger read when their transaction
begins and written when it ends (store/ledger.py), a commit whose connection was lost settled from
the ledger, and the expired rows pruned. `Store` takes these methods from `RequestOps`; they use its
connection, statements and `transaction`."""

from __future__ import annotations

import json
import logging
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import TYPE_CHECKING

import anyio

from ..config.config import Config
from ..errors import StoreError, WriteOutcomeUnknown
from . import ledger
from .backend import Backend, CommitUnknown
from .ledger import Request
from .rows import iso, utcnow
from .statements import Statements
from .tx import Tx

__all__ = ["RequestOps"]

log = logging.getLogger(__name__)
# How long a write whose commit's connection was lost keeps asking the database whether it took
# effect (the server restarting) before it answers "outcome unknown".
_SETTLE_SECONDS = 30.0


class RequestOps:
    """The request_id methods of `Store` (see store/store.py for the attributes they use)."""

    if TYPE_CHECKING:
        config: Config
        namespace: str
        _db: Backend
        _sql: Statements

        def transaction(self, request: Request | None = None) -> AbstractAsyncContextManager[Tx]: ...

    def _requests_since(self) -> str:
        """Ledger rows written before this have expired."""
        return iso(utcnow() - timedelta(hours=self.config.lifecycle.request_id_hours))

    async def _request_begins(self, tx: Tx, request: Request) -> None:
        tx.request = request
        stored = await ledger.find(tx._conn, self._sql, self.namespace, request.request_id, self._requests_since())
        if stored is not None:
            if not stored.answers(request):
                raise request.refuse(stored)
            tx.replay = stored.answer

    async def _request_ends(self, tx: Tx, request: Request) -> None:
        if tx.replay is not None:
            if tx.change is not None:
                raise RuntimeError(f"a retry of request {request.request_id!r} wrote again")
            return
        if tx.answered is None:
            raise RuntimeError(f"the call with request_id {request.request_id!r} gave the ledger no answer")
        await ledger.record(tx._conn, self._sql, self.namespace, request, tx.answered, iso(utcnow()))

    async def _settle_lost_commit(self, tx: Tx, request: Request | None, lost: CommitUnknown) -> None:
        """Returns when the lost commit took effect; raises otherwise (see `transaction`)."""
        if request is None:
            raise WriteOutcomeUnknown(
                f"outcome unknown: the connection to the database was lost while the write was being committed "
                f"({lost}); the write may or may not have been stored. Check (recall or list) before writing it "
                "again, or give writes a request_id: a retry with the same request_id is always safe."
            ) from lost
        if tx.replay is not None:
            return  # a retry that wrote nothing: its answer stands whatever became of the commit
        stored = await self._read_ledger_again(request, lost)
        if stored is None:
            raise StoreError(
                f"the write failed and was rolled back: the connection to the database was lost before its "
                f"commit took effect ({lost}); nothing was stored, and a retry is safe."
            ) from lost
        assert tx.answered is not None
        if not stored.answers(request) or json.loads(stored.answer) != json.loads(tx.answered):
            # Another call with this request_id stored its write since: this one's was rolled back.
            raise StoreError(
                f"the write failed and was rolled back (the connection to the database was lost); another call "
                f"with request_id {request.request_id!r} has been stored since: retry to get its answer."
            ) from lost
        log.warning("a commit whose connection was lost took effect (request_id %r)", request.request_id)

    async def _read_ledger_again(self, request: Request, lost: CommitUnknown) -> ledger.Stored | None:
        """The request's ledger row, read on a new connection after a lost commit, inside a write
        transaction: it waits for the writers' lock, which the lost connection's transaction held
        until it ended (committed or not) on the server. WriteOutcomeUnknown when the database
        cannot be reached for _SETTLE_SECONDS (a restart that takes longer)."""
        deadline = anyio.current_time() + _SETTLE_SECONDS
        delay = 0.1
        failures: tuple[type[Exception], ...] = (*self._db.errors, CommitUnknown, StoreError)
        while True:
            try:
                async with self._db.write() as conn:
                    return await ledger.find(
                        conn, self._sql, self.namespace, request.request_id, self._requests_since()
                    )
            except failures as again:
                if anyio.current_time() + delay > deadline:
                    raise WriteOutcomeUnknown(
                        f"outcome unknown: the connection to the database was lost while the write was being "
                        f"committed ({lost}), and the database could not be asked since ({again}); the write may "
                        "or may not have been stored; retry with the same request_id to be safe."
                    ) from lost
                await anyio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def prune_requests(self) -> int:
        """Delete the expired rows of the request ledger, a batch per transaction; how many went."""
        pruned = 0
        while True:
            async with self.transaction() as tx:
                count = await ledger.prune(tx._conn, self._sql, self.namespace, self._requests_since())
            pruned += count
            if count < ledger.PRUNE_BATCH:
                return pruned
