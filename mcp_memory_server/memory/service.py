"""The memory operations every front end calls: MCP tools, the CLI and the benchmarks."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..config.config import Config
from ..errors import InvalidInput, NotFound, StoreError
from ..models import Draft, ForgetResult, ListResult, Memory, OrderBy, RecallResult, RememberResult, Stats
from ..retrieval.recall import recall
from ..store import archive
from ..store.rows import iso, memory_id, parse_id, utcnow
from ..store.store import Store
from ..store.tx import Tx
from ..text.provisional import near_duplicate_query
from ..text.redaction import describe
from ..text.tokens import fingerprint, similarity
from . import validate
from .requests import request

__all__ = ["MemoryService", "same_value"]

_NEAR_CANDIDATES = 10
# How many times an edit starts again when another writer changes the memory's text between the
# screening of the edit (outside the write lock) and its write.
_EDIT_ATTEMPTS = 5


def same_value(existing: Memory, draft: Draft) -> bool:
    """Whether writing `draft` over `existing` would change nothing a reader sees."""
    return (
        existing.content == draft.content
        and existing.category == draft.category
        and existing.tier == draft.tier
        and existing.importance == draft.importance
        and existing.confidence == draft.confidence
        and existing.source == draft.source
        and tuple(existing.tags) == draft.tags
        and existing.key == draft.key
    )


def _merge(existing: Memory, draft: Draft) -> Draft:
    """New wording wins; tags are united; importance, confidence and tier never go down in a merge;
    a user fact confirmed by the assistant (or the other way round) becomes source "both"."""
    tags = tuple(dict.fromkeys((*existing.tags, *draft.tags)))
    source = draft.source
    if existing.source != draft.source and {existing.source, draft.source} <= {"user", "assistant", "both"}:
        source = "both"
    return draft.model_copy(
        update={
            "key": draft.key or existing.key,
            "tags": tags,
            "importance": max(existing.importance, draft.importance),
            "confidence": max(existing.confidence, draft.confidence),
            "tier": "core" if "core" in (existing.tier, draft.tier) else draft.tier,
            "source": source,
        }
    )


def _encode_cursor(order_by: str, last: tuple[Any, int]) -> str:
    raw = json.dumps([order_by, last[0], last[1]], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _sql_value(value: object) -> bool:
    """What SQLite can compare with a column: text, a finite number, an integer of 64 bits."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, str) or (isinstance(value, float) and math.isfinite(value))


def _decode_cursor(order_by: str, cursor: str) -> tuple[Any, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, value, seq = json.loads(base64.urlsafe_b64decode(padded.encode()))
        # A cursor is the client's text: one not made here can hold anything JSON can.
        if kind != order_by or not isinstance(seq, int) or not _sql_value(seq) or not _sql_value(value):
            raise ValueError(kind)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput(
            "cursor is not valid for this listing; start again without a cursor "
            "(a cursor only works with the same order_by it came from)."
        ) from exc
    return value, seq


_ITEM_FIELDS = {
    "content": "content",
    "category": "category_name",
    "key": "key_name",
    "importance": "importance",
    "confidence": "confidence",
    "tags": "tag_list",
    "source": "source_name",
    "tier": "tier_name",
    "session_id": "session",
}


_EDITABLE = ("content", "key", "category", "importance", "confidence", "tags")


def _remember_args(item: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(item) - set(_ITEM_FIELDS)
    if unknown:
        raise InvalidInput(f"unknown field(s) {sorted(unknown)}; a memory has {sorted(_ITEM_FIELDS)}.")
    if "content" not in item:
        raise InvalidInput("every memory needs content.")
    return {_ITEM_FIELDS[name]: value for name, value in item.items()}


class MemoryService:
    """remember / recall / forget / list over one open `Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.config: Config = store.config

    async def remember(
        self,
        *,
        content: str,
        category: str = "fact",
        key: str | None = None,
        importance: float = 0.5,
        confidence: float = 0.8,
        tags: Sequence[str] | None = None,
        source: str = "user",
        tier: str = "core",
        session_id: str | None = None,
        client: str | None = None,
        now: datetime | None = None,
        request_id: str | None = None,
    ) -> RememberResult:
        """Store one memory. With a `request_id`, a retry of the same call answers as the first
        did and changes nothing (see store/ledger.py)."""
        asked = request(
            "remember",
            request_id,
            {
                "content": content,
                "category": category,
                "key": key,
                "importance": importance,
                "confidence": confidence,
                "tags": list(tags or ()),
                "source": source,
                "tier": tier,
                "session_id": session_id,
            },
        )
        draft = validate.draft(
            self.config,
            content=content,
            category_name=category,
            key_name=key,
            importance=importance,
            confidence=confidence,
            tag_list=tags,
            source_name=source,
            tier_name=tier,
            session=session_id,
            client=client,
        )
        now = now or utcnow()
        digest, near_match = await self.prepare(draft)
        async with self.store.transaction(asked) as tx:
            if (first := tx.replayed(RememberResult)) is not None:
                return first
            if draft.session_id:
                await tx.touch_session(draft.session_id, now)
            result = await self.write(tx, draft, digest, near_match, now)
            if draft.withheld:
                detail = f"{result.detail} {describe(draft.withheld)}"
                result = result.model_copy(update={"withheld": list(draft.withheld), "detail": detail})
            tx.answer(result)
        return result

    async def prepare(self, draft: Draft) -> tuple[str, str]:
        """What `write` needs besides the draft, computed outside the transaction: the content's
        fingerprint and the full-text query for near-duplicates. Neither uses jieba, so a write
        never waits for its dictionary and decides the same before and after it has loaded."""
        return fingerprint(draft.content), near_duplicate_query(draft.content)

    async def write(self, tx: Tx, draft: Draft, digest: str, near_match: str, now: datetime) -> RememberResult:
        """Store one validated draft inside `tx`: update by key, merge with an identical or
        near-identical memory of the same category, or insert."""
        if draft.key is not None:
            existing = await tx.by_key(draft.key)
            if existing is not None:
                seq = parse_id(existing.id)
                assert seq is not None
                if same_value(existing, draft):
                    # Still a use of the memory: the value came up again (seed 000's trigger).
                    await archive.count_use(tx, seq, iso(now))
                    return RememberResult(
                        id=existing.id,
                        action="unchanged",
                        memory=existing,
                        detail=f"{existing.id} already holds this value for key {draft.key!r}.",
                    )
                memory = await tx.replace(seq, draft, digest, now, "updated")
                return RememberResult(
                    id=memory.id,
                    action="updated",
                    memory=memory,
                    detail=f"Updated key {draft.key!r} in {memory.id}; the old value is kept in its history.",
                )

        def compatible(m: Memory) -> bool:
            return m.key is None or m.key == draft.key

        twin = next((m for m in await tx.by_hash(draft.category, digest) if compatible(m)), None)
        if twin is not None:
            merged = _merge(twin, draft.model_copy(update={"content": twin.content}))
            seq = parse_id(twin.id)
            assert seq is not None
            if same_value(twin, merged):
                await archive.count_use(tx, seq, iso(now))
                return RememberResult(
                    id=twin.id,
                    action="unchanged",
                    memory=twin,
                    detail=f"{twin.id} already holds this memory; nothing was changed.",
                )
            memory = await tx.replace(seq, merged, digest, now, "merged")
            return RememberResult(
                id=memory.id,
                action="merged",
                memory=memory,
                detail=f"{memory.id} already held this memory; its tags and scores were merged.",
            )

        best: tuple[float, Memory] | None = None
        for cand in await tx.similar_in_category(near_match, draft.category, _NEAR_CANDIDATES):
            if not compatible(cand):
                continue
            score = similarity(cand.content, draft.content)
            if score >= self.config.recall.duplicate_threshold and (best is None or score > best[0]):
                best = (score, cand)
        if best is not None:
            score, near = best
            seq = parse_id(near.id)
            assert seq is not None
            memory = await tx.replace(seq, _merge(near, draft), digest, now, "merged")
            return RememberResult(
                id=memory.id,
                action="merged",
                memory=memory,
                detail=f"Merged into {memory.id}, a near-identical {draft.category} memory "
                f"(similarity {score:.2f}); the old wording is kept in its history.",
            )

        memory = await tx.insert(draft, digest, now)
        return RememberResult(id=memory.id, action="created", memory=memory, detail=f"Stored as {memory.id}.")

    async def import_memories(self, items: Sequence[Mapping[str, Any]], *, client: str | None = None) -> list[str]:
        """Bulk load in one transaction, all or nothing: every item is validated like `remember`,
        but nothing is merged or de-duplicated (importers and benchmarks keep one memory per item).
        Each item holds remember's arguments (content, category, key, importance, ...)."""
        drafts = [validate.draft(self.config, client=client, **_remember_args(item)) for item in items]
        keys = [d.key for d in drafts if d.key is not None]
        if len(keys) != len(set(keys)):
            raise InvalidInput("two imported memories have the same key; keys must be unique.")
        async with self.store.transaction() as tx:
            taken = await tx.taken_keys(keys)
            if taken:
                key = next(k for k in keys if k in taken)
                raise InvalidInput(f"key {key!r} already exists; remember it instead to update it.")
            seqs = await tx.insert_many(drafts, utcnow())
        return [memory_id(seq) for seq in seqs]

    async def recall(
        self,
        *,
        query: str,
        limit: int | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        session_id: str | None = None,
        track_access: bool = True,
    ) -> RecallResult:
        cleaned = validate.text(query, field="query", limit=self.config.limits.max_query_chars)
        limit = self.config.recall.default_limit if limit is None else limit
        if not 1 <= limit <= 50:
            raise InvalidInput(f"limit must be between 1 and 50, got {limit}.")
        return await recall(
            self.store,
            self.config,
            cleaned,
            limit=limit,
            category=validate.category(category) if category else None,
            tags=validate.tags(tags, self.config) or None,
            session_id=validate.session_id(session_id),
            track_access=track_access,
        )

    async def forget(
        self, ids: Sequence[str], *, request_id: str | None = None, scrub_log: bool = True
    ) -> ForgetResult:
        """Delete memories for good. `scrub_log=False` only for the sieve retiring its own fallback
        note once the model has answered: the exchange is not forgotten, so the log keeps it."""
        if not ids:
            raise InvalidInput("ids is empty; give the ids of the memories to forget, such as ['mem_12'].")
        validate.batch(len(ids), self.config, "ids")
        asked = request("forget", request_id, {"ids": list(ids)})
        wanted = list(dict.fromkeys(i.strip() for i in ids))
        numbers = {i: parse_id(i) for i in wanted}
        async with self.store.transaction(asked) as tx:
            if (first := tx.replayed(ForgetResult)) is not None:
                return first
            deleted = set(await tx.delete([n for n in numbers.values() if n is not None], forgotten=scrub_log))
            result = ForgetResult(
                deleted=[i for i in wanted if numbers[i] in deleted],
                not_found=[i for i in wanted if numbers[i] not in deleted],
            )
            tx.answer(result)
        return result

    async def list_memories(
        self,
        *,
        category: str | None = None,
        tier: str | None = None,
        tags: Sequence[str] | None = None,
        order_by: OrderBy = "updated",
        limit: int = 20,
        cursor: str | None = None,
        session_id: str | None = None,
    ) -> ListResult:
        page = await self.store.list_page(
            category=validate.category(category) if category else None,
            tier=validate.tier(tier) if tier else None,
            tags=validate.tags(tags, self.config) or None,
            order_by=order_by,
            limit=validate.page(limit, self.config),
            after=_decode_cursor(order_by, cursor) if cursor else None,
            session_id=validate.session_id(session_id),
        )
        return ListResult(
            total=page.total, items=page.items, next_cursor=_encode_cursor(order_by, page.last) if page.last else None
        )

    async def get(self, memory_id: str) -> Memory:
        seq = parse_id(memory_id)
        memory = await self.store.get(seq) if seq is not None else None
        if memory is None:
            raise NotFound(
                f"no memory has the id {validate.quoted(memory_id)}; ids look like mem_12 (see list or recall)."
            )
        return memory

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        memory = await self.get(memory_id)
        seq = parse_id(memory.id)
        assert seq is not None
        return await self.store.history(seq)

    def _edited(self, memory: Memory, changes: Mapping[str, Any], screened: Draft | None = None) -> Draft:
        value = {name: getattr(memory, name) for name in _EDITABLE} | dict(changes)
        return validate.draft(
            self.config,
            content=value["content"],
            category_name=value["category"],
            key_name=value["key"],
            importance=value["importance"],
            confidence=value["confidence"],
            tag_list=value["tags"],
            source_name=memory.source,
            tier_name=memory.tier,
            screened=(screened.content, screened.withheld) if screened is not None else None,
        )

    async def edit(self, memory_id: str, changes: Mapping[str, Any], *, now: datetime | None = None) -> RememberResult:
        """Change a memory by id: any of content, key, category, importance, confidence and tags
        (key None or "" removes the key). Validated like `remember`, secrets withheld; the old
        value goes to the memory's history (reason "edited")."""
        unknown = sorted(set(changes) - set(_EDITABLE))
        if unknown or not changes:
            raise InvalidInput(f"give at least one of {', '.join(_EDITABLE)} to change; unknown: {unknown}.")
        existing = await self.get(memory_id)
        for _ in range(_EDIT_ATTEMPTS):
            draft = self._edited(existing, changes)  # bad input fails, and secrets are withheld, before the lock
            result = await self._edit_once(existing, changes, draft, now or utcnow())
            if isinstance(result, RememberResult):
                return result
            existing = result  # its text changed meanwhile: screened again, outside the transaction
        raise StoreError(f"{existing.id} kept changing while it was being edited; nothing was changed, try again.")

    async def _edit_once(
        self, existing: Memory, changes: Mapping[str, Any], draft: Draft, now: datetime
    ) -> RememberResult | Memory:
        """Write `draft` over `existing`; or, when another writer changed the memory's text since it
        was read, nothing: the memory as it now is, to make the draft again from."""
        seq = parse_id(existing.id)
        assert seq is not None
        async with self.store.transaction() as tx:
            current = await tx.get(seq)
            if current is None:
                raise NotFound(f"{existing.id} was deleted meanwhile; nothing was changed.")
            if current != existing:  # written meanwhile: the fields not changed here keep that value
                if "content" not in changes and current.content != existing.content:
                    return current  # a text to screen, which is not done while holding the write lock
                draft = self._edited(current, changes, screened=draft)
            if same_value(current, draft):
                return RememberResult(
                    id=current.id, action="unchanged", memory=current, detail=f"{current.id} already holds this value."
                )
            holder = await tx.by_key(draft.key) if draft.key is not None else None
            if holder is not None and holder.id != current.id:
                raise InvalidInput(f"key {draft.key!r} belongs to {holder.id}; keys are unique, nothing was changed.")
            memory = await tx.replace(seq, draft, fingerprint(draft.content), now, "edited")
        detail = f"Edited {memory.id}; the old value is kept in its history."
        if draft.withheld:
            detail = f"{detail} {describe(draft.withheld)}"
        withheld = list(draft.withheld)
        return RememberResult(id=memory.id, action="updated", memory=memory, detail=detail, withheld=withheld)

    async def stats(self) -> Stats:
        return await self.store.stats()
