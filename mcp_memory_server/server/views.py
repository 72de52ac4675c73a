"""What the memory tools hand back to a model: the service's results without what a model cannot
act on. The service's own results stay whole for the dashboard, the resources and the CLI.

Left out, and where it still is:
- recall: the query (the model's own words back), the search stage (how the index was searched,
  not what was found) and each hit's score broken into parts, its importance, confidence, source
  and creation time (all folded into its one score; the dashboard's search shows the parts).
- remember: the memory written, which is the call's own arguments back with an id and timestamps
  (its id, action and detail say what became of them, withheld which secrets were taken out).
- list: each memory's client, session, source, confidence, access count and last access
  (bookkeeping; `memory://memories/{id}` shows every field, with the history).
- extract: the channels' own details (the result's detail joins them), and each item's
  importance, source, signal pattern and value parts (its value total and its reason say what was
  decided and why; `memory://extraction-log` keeps the parts by run). The items of both channels
  come in one list, each naming its channel.
- update_session: the session's id (the model's own argument) and its timestamps
  (`memory://sessions/{session_id}` has them).
- cleanup: whether it applied, the memory count and its threshold (the detail says them in a
  sentence) and each candidate's importance and access figures (its rules name why it is there).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ..memory.sessions import SessionResult
from ..memory.strategy import Strategy
from ..models import (
    CleanupResult,
    CleanupRule,
    Hit,
    ListResult,
    Memory,
    Model,
    RecallResult,
    RememberAction,
    RememberResult,
    Tier,
)
from ..sieve.sieve import ExtractResult
from ..store.extraction_log import Decision, ExtractedItem, Outcome

__all__ = [
    "CleanupView",
    "ExtractView",
    "HitView",
    "ListView",
    "MemoryView",
    "RecallView",
    "RememberView",
    "TurnView",
    "cleanup",
    "extract",
    "listed",
    "recall",
    "remember",
    "turn",
]


class MemoryView(Model):
    id: str
    content: str
    key: str | None
    category: str
    tier: Tier
    importance: float
    tags: list[str]
    created_at: datetime
    updated_at: datetime


class RememberView(Model):
    id: str
    action: RememberAction
    detail: str
    withheld: list[str]


class HitView(Model):
    id: str
    content: str
    key: str | None
    category: str
    tags: list[str]
    score: float
    updated_at: datetime


class RecallView(Model):
    keywords: list[str]
    hits: list[HitView]
    note: str | None


class ListView(Model):
    total: int
    items: list[MemoryView]
    next_cursor: str | None


class ItemView(Model):
    channel: Literal["fast", "deep"]
    content: str
    category: str
    value: float | None
    decision: Decision
    id: str | None
    action: str | None
    reason: str


class ExtractView(Model):
    run: str
    fast: Outcome
    deep: Outcome
    items: list[ItemView]
    fallback_note: str | None
    next_step: str | None
    detail: str


def _memory(m: Memory) -> MemoryView:
    return MemoryView.model_validate(m, from_attributes=True)  # the view's fields, read off the memory


def remember(r: RememberResult) -> RememberView:
    return RememberView(id=r.id, action=r.action, detail=r.detail, withheld=r.withheld)


def _hit(h: Hit) -> HitView:
    return HitView.model_validate(h, from_attributes=True)


def recall(r: RecallResult) -> RecallView:
    return RecallView(keywords=r.keywords, hits=[_hit(h) for h in r.hits], note=r.note)


def listed(r: ListResult) -> ListView:
    return ListView(total=r.total, items=[_memory(m) for m in r.items], next_cursor=r.next_cursor)


def _item(channel: Literal["fast", "deep"], i: ExtractedItem) -> ItemView:
    return ItemView(
        channel=channel,
        content=i.content,
        category=i.category,
        value=None if i.value is None else i.value.total,
        decision=i.decision,
        id=i.id,
        action=i.action,
        reason=i.reason,
    )


def extract(r: ExtractResult) -> ExtractView:
    items = [_item("fast", i) for i in r.fast.items] + [_item("deep", i) for i in r.deep.items]
    return ExtractView(
        run=r.run,
        fast=r.fast.outcome,
        deep=r.deep.outcome,
        items=items,
        fallback_note=r.fallback_note,
        next_step=r.next_step,
        detail=r.detail,
    )


class SessionBrief(Model):
    current_topic: str | None
    context_variables: dict[str, Any]
    turn_count: int
    last_emotion: str | None


class TurnView(Model):
    session: SessionBrief
    emotion: str
    strategy: Strategy
    detail: str


def turn(r: SessionResult) -> TurnView:
    s = r.session
    brief = SessionBrief(
        current_topic=s.current_topic,
        context_variables=dict(s.context_variables),
        turn_count=s.turn_count,
        last_emotion=s.last_emotion,
    )
    return TurnView(session=brief, emotion=r.emotion, strategy=r.strategy, detail=r.detail)


class CandidateView(Model):
    id: str
    preview: str
    category: str
    rules: list[CleanupRule]
    duplicate_of: str | None


class CleanupView(Model):
    dry_run: bool
    candidate_count: int
    candidates: list[CandidateView]
    archived: int
    kept: dict[str, int]
    detail: str


def cleanup(r: CleanupResult) -> CleanupView:
    candidates = [
        CandidateView(id=c.id, preview=c.preview, category=c.category, rules=c.rules, duplicate_of=c.duplicate_of)
        for c in r.candidates
    ]
    return CleanupView(
        dry_run=r.dry_run,
        candidate_count=r.candidate_count,
        candidates=candidates,
        archived=r.archived,
        kept=r.kept,
        detail=r.detail,
    )
