"""The memory lifecycle (SPEC 5: cleanup and its keep rules; the working memory of sessions).

- `cleanup` selects memories by its rules (rarely used, unimportant and stale, low confidence and
  stale, duplicate copies), lets the keep rules save what they cover, and archives the rest: never a deletion,
  and a dry run only reports.
- `restore` brings archived memories back under their old ids, history included.
- `expire_sessions` ends sessions idle for too long: their working memories that proved important
  or useful become core, the others are archived.
- `maintain` is what start-up and the periodic task run: expiry, then a real cleanup.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import get_args

from ..config.config import Config
from ..errors import InvalidInput
from ..models import (
    CleanupCandidate,
    CleanupResult,
    CleanupRule,
    ExpiredSession,
    ExpiryResult,
    KeepRule,
    MaintenanceResult,
    RestoreConflict,
    RestoreResult,
)
from ..store import archive, extraction_log
from ..store.archive import CleanupRow
from ..store.rows import iso, memory_id, parse_id, preview, utcnow
from ..store.store import Store
from ..text.critical import critical
from . import validate

__all__ = ["cleanup", "expire_sessions", "keep_rule", "maintain", "recent_since", "restore"]

log = logging.getLogger(__name__)

_LISTED = 100  # candidates listed in a cleanup result by default (all of them are archived)
_ABANDONED = timedelta(hours=1)  # a sieve run still waiting for the client's model after this is closed


def keep_rule(
    config: Config,
    recent_since: str,
    *,
    importance: float,
    access_count: int,
    created_at: str,
    category: str,
    source: str,
) -> KeepRule | None:
    """The first keep rule that protects a memory, if any: cleanup never archives it, and a
    model's `del` (apply_changes) never deletes it. `created_at` and `recent_since` are ISO 8601
    UTC text, which compares in time order."""
    if importance >= config.lifecycle.keep_importance:
        return "important"
    if access_count >= config.lifecycle.keep_accesses:
        return "frequently_used"
    if created_at >= recent_since:
        return "recent"
    if category in config.lifecycle.keep_categories:
        return "core_category"
    if source == "manual":
        return "manual"
    return None


def recent_since(config: Config, now: datetime) -> str:
    """The creation time from which a memory is kept as recent (`keep_recent_days` before `now`)."""
    return iso(now - timedelta(days=config.lifecycle.keep_recent_days))


def _keep_rule(row: CleanupRow, config: Config, recent_since: str) -> KeepRule | None:
    """The keep rules of `keep_rule`, and for cleanup alone, `critical` (text/critical.py):
    health, family and identity facts stay whatever their use; the user can still forget them."""
    rule = keep_rule(
        config,
        recent_since,
        importance=row.importance,
        access_count=row.access_count,
        created_at=row.created_at,
        category=row.category,
        source=row.source,
    )
    return rule if rule is not None or not critical(row.content) else "critical"


def _rules(row: CleanupRow) -> list[CleanupRule]:
    rules: list[CleanupRule] = []
    if row.unused:
        rules.append("unused")
    if row.low_importance:
        rules.append("low_importance")
    if row.low_confidence:
        rules.append("low_confidence")
    if row.duplicate_of is not None:
        rules.append("duplicate")
    return rules


def _reason(row: CleanupRow) -> str:
    """The archive reason, in words a person reading the archive understands."""
    words: list[str] = [r for r in _rules(row) if r != "duplicate"]
    if row.duplicate_of is not None:
        words.append(f"duplicate of {memory_id(row.duplicate_of)}")
    return "cleanup: " + ", ".join(words)


def _candidate(row: CleanupRow) -> CleanupCandidate:
    return CleanupCandidate(
        id=memory_id(row.number),
        preview=preview(row.content),
        category=row.category,
        importance=row.importance,
        access_count=row.access_count,
        last_accessed=datetime.fromisoformat(row.last_accessed),
        rules=_rules(row),
        duplicate_of=memory_id(row.duplicate_of) if row.duplicate_of is not None else None,
    )


async def cleanup(
    store: Store, *, dry_run: bool = True, now: datetime | None = None, limit: int = _LISTED
) -> CleanupResult:
    """Select and (unless `dry_run`) archive memories by the cleanup rules, when the namespace
    holds more than `cleanup_min_memories`. The result lists the first `limit` candidates, oldest
    access first; a real run archives all of them."""
    if limit < 0:
        raise InvalidInput(f"limit must not be negative, got {limit}.")
    config = store.config
    now = now or utcnow()
    kept: dict[str, int] = dict.fromkeys(get_args(KeepRule), 0)
    # Accesses recorded by this process but not yet written decide the "unused" rule too.
    await store.flush()
    # One transaction for the selection and the moves, so a dry run reports exactly what a real
    # run at that moment archives (a dry run writes nothing, it only holds the lock meanwhile).
    async with store.transaction() as tx:
        count = await archive.live_count(tx)
        if count <= config.lifecycle.cleanup_min_memories:
            log.debug("cleanup: %d memories; it applies only above %d", count, config.lifecycle.cleanup_min_memories)
            return CleanupResult(
                dry_run=dry_run,
                applied=False,
                memories=count,
                min_memories=config.lifecycle.cleanup_min_memories,
                candidate_count=0,
                candidates=[],
                archived=0,
                kept=kept,
                detail=f"{count} memories; cleanup applies only above {config.lifecycle.cleanup_min_memories}, "
                "so nothing was selected.",
            )
        rows = await archive.cleanup_rows(
            tx,
            unused_before=iso(now - timedelta(days=config.lifecycle.cleanup_unused_days)),
            # The seed counts triggers from 1 at creation (trigger_count); access_count counts recalls
            # from 0: fewer than 2 triggers is never recalled, so a memory recalled once stays.
            unused_accesses=max(0, config.lifecycle.cleanup_unused_accesses - 1),
            stale_before=iso(now - timedelta(days=config.lifecycle.cleanup_stale_days)),
            low_importance=config.lifecycle.cleanup_low_importance,
            unsure_before=iso(now - timedelta(days=config.lifecycle.cleanup_unsure_days)),
            low_confidence=config.lifecycle.cleanup_low_confidence,
        )
        recent = recent_since(config, now)
        chosen: list[CleanupRow] = []
        for row in rows:
            rule = _keep_rule(row, config, recent)
            if rule is None:
                chosen.append(row)
            else:
                kept[rule] += 1
        going = {row.number for row in chosen}
        # A copy selected only as a duplicate stays while the copy it duplicates is going itself:
        # the content must not leave with every copy (the next run picks among the remaining ones).
        chosen = [r for r in chosen if r.unused or r.low_importance or r.low_confidence or r.duplicate_of not in going]
        moved = 0
        if not dry_run and chosen:
            moved = len(await archive.archive(tx, {r.seq: _reason(r) for r in chosen}, iso(now)))
    saved = sum(kept.values())
    if dry_run:
        detail = f"Dry run: {len(chosen)} of {count} memories would be archived; {saved} more are kept by keep rules."
    else:
        detail = f"Archived {moved} of {count} memories (restore brings them back); {saved} kept by keep rules."
    # A run that archived something is news; the periodic one that found nothing is not.
    archived_ids = ", ".join(memory_id(r.number) for r in chosen[:10]) + (", ..." if len(chosen) > 10 else "")
    log.log(
        logging.INFO if moved else logging.DEBUG,
        "cleanup: %s%s",
        detail,
        f" ({archived_ids})" if moved else "",
    )
    return CleanupResult(
        dry_run=dry_run,
        applied=True,
        memories=count,
        min_memories=config.lifecycle.cleanup_min_memories,
        candidate_count=len(chosen),
        candidates=[_candidate(r) for r in chosen[:limit]],
        archived=moved,
        kept=kept,
        detail=detail,
    )


async def restore(store: Store, ids: Sequence[str], *, now: datetime | None = None) -> RestoreResult:
    """Bring archived memories back with the same ids and their history.

    One whose key a live memory holds now stays archived and is reported as a conflict naming
    that memory: the key is a slot with one value, and the live value is the newer one. Forget
    (or re-key) the live memory first, or remember the archived content without its key."""
    if not ids:
        raise InvalidInput("ids is empty; give the ids of archived memories to restore, such as ['mem_12'].")
    validate.batch(len(ids), store.config, "ids")
    numbers: dict[str, int | None] = {}
    for text in dict.fromkeys(i.strip() for i in ids):
        numbers[text] = parse_id(text)  # an id names one memory at most: mem_07 is not mem_7
    wanted = list(numbers)
    known = [n for n in numbers.values() if n is not None]
    restored: list[str] = []
    not_found: list[str] = []
    conflicts: list[RestoreConflict] = []
    async with store.transaction() as tx:
        found = {a.number: a for a in await archive.archived(tx, known)}
        live = await archive.live_numbers(tx, known)
        holders = await archive.key_holders(tx, [a.key for a in found.values() if a.key is not None])
        claimed: dict[str, str] = {}  # key -> id restored by this call
        back: list[int] = []
        for text in wanted:
            number = numbers[text]
            entry = found.get(number) if number is not None else None
            if entry is None:
                if number in live:
                    conflicts.append(RestoreConflict(id=text, reason=f"{text} is a live memory, not archived."))
                else:
                    not_found.append(text)
                continue
            key = entry.key
            if key is not None and key in holders:
                holder = memory_id(holders[key])
                reason = (
                    f"key {key!r} is now held by {holder}; forget {holder} first, "
                    "or remember this content again without the key."
                )
                conflicts.append(RestoreConflict(id=text, reason=reason))
                continue
            if key is not None and key in claimed:
                reason = f"key {key!r} is held by {claimed[key]}, restored by this call; restore one of them only."
                conflicts.append(RestoreConflict(id=text, reason=reason))
                continue
            if key is not None:
                claimed[key] = text
            back.append(entry.seq)
            restored.append(text)
        await archive.restore(tx, back, iso(now or utcnow()))
    return RestoreResult(restored=restored, not_found=not_found, conflicts=conflicts)


async def expire_sessions(store: Store, *, now: datetime | None = None) -> ExpiryResult:
    """End the sessions idle for `session_idle_minutes`: their working memories with importance
    of at least `promote_importance` or at least `promote_accesses` accesses become core, the
    others are archived, and the session's state is deleted."""
    config = store.config
    now = now or utcnow()
    await store.flush()  # accesses not yet written count towards promotion
    ended: list[ExpiredSession] = []
    async with store.transaction() as tx:
        idle = await archive.idle_sessions(tx, iso(now - timedelta(minutes=config.lifecycle.session_idle_minutes)))
        for session_id, updated_at in idle:
            promoted: list[archive.WorkingMemory] = []
            dropped: list[archive.WorkingMemory] = []
            for memory in await archive.working_memories(tx, session_id):
                useful = (
                    memory.importance >= config.lifecycle.promote_importance
                    or memory.access_count >= config.lifecycle.promote_accesses
                )
                (promoted if useful else dropped).append(memory)
            await archive.promote(tx, [m.seq for m in promoted])
            reason = f"session expired: {session_id}"
            await archive.archive(tx, dict.fromkeys((m.seq for m in dropped), reason), iso(now))
            await archive.end_session(tx, session_id)
            ended.append(
                ExpiredSession(
                    session_id=session_id,
                    last_active=datetime.fromisoformat(updated_at),
                    promoted=[memory_id(m.number) for m in promoted],
                    archived=[memory_id(m.number) for m in dropped],
                )
            )
    return ExpiryResult(sessions=ended)


async def maintain(store: Store, *, now: datetime | None = None) -> MaintenanceResult:
    """Session expiry, then a real cleanup: what start-up and the periodic task run."""
    expiry = await expire_sessions(store, now=now)
    cleaned = await cleanup(store, dry_run=False, now=now)
    moment = now or utcnow()
    async with store.transaction() as tx:  # sieve runs whose client never brought the model's answer
        abandoned = await extraction_log.settle_abandoned(tx, moment - _ABANDONED, moment)
    if abandoned:
        log.info("maintenance: %d sieve run(s) closed without the model's answer", abandoned)
    expired = await store.prune_requests()  # the request ledger's rows past request_id_hours
    if expired:
        log.info("maintenance: %d expired request_id(s) deleted", expired)
    if expiry.sessions:  # cleanup has told its own results
        log.info(
            "maintenance: %d idle session(s) ended (%s); %d working memories promoted to core, %d archived",
            len(expiry.sessions),
            ", ".join(s.session_id for s in expiry.sessions[:10]),
            sum(len(s.promoted) for s in expiry.sessions),
            sum(len(s.archived) for s in expiry.sessions),
        )
    return MaintenanceResult(expiry=expiry, cleanup=cleaned)
