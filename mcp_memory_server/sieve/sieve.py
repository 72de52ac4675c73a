"""The memory sieve: what from one exchange is worth keeping.

Two channels. The fast one reads the user's message for high-signal sentences (corrections,
preferences, identity, decisions, to-dos, "remember this") and writes them at once, core memory
when their value score says so. The deep one asks the client's model, through MCP sampling, for
the exchange's memories in JSON, and writes them to the session's working memory. Every item is
scored by the value formula (novelty from similarity to what is already stored) and held
back when it carries a secret.

So that a failing or vanished model loses nothing, `begin` writes the fast channel's memories and
a low-importance note keeping the exchange *before* the model answers; `finish` replaces the
note with the model's memories, or leaves it as the fallback. Each run is logged (`logbook`).

The user's requests about the memory itself come first (`intents`): "forget X" forgets the stored
memories that say X and is never stored; "don't remember this (topic)" keeps the sentences and the
model's memories under it out of the store, and out of the note and the log's previews.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from ..errors import InvalidInput, MemoryServerError
from ..memory import validate
from ..memory.service import MemoryService
from ..models import KNOWN_CATEGORIES, Model
from ..profile import profile as profiles
from ..prompts import extraction
from ..prompts.extraction import DEEP_CATEGORIES
from ..store import extraction_log
from ..store.extraction_log import ChannelReport, ExtractedItem, ValueParts
from ..store.rows import parse_id, utcnow
from ..text.redaction import describe
from ..text.screening import PERSONAL_KINDS, screen_text
from ..text.scripts import LATIN, script_of
from ..text.topics import MarkedTopics
from .corrections import resolve_keys
from .intents import COVER_SHARE, MATCH_SHARE, WITHHELD, Intents, contained, detect_intents
from .signals import detect_signals, forced_instruction, is_small_talk, split_sentences
from .value import Nearby, ValueScore, evaluate

__all__ = ["ExtractResult", "Prepared", "Sieve", "parse_answer"]

_PREVIEW = 300
_NOTE_PART = 400
# At this share of the candidate already said by one stored memory, the model's item is that memory:
# it is reported as already stored, not written again (as a working copy in another category).
_SAME = 0.99
_FORGET_CANDIDATES = 10
# The closing fence is tried from the start of a run of blanks (or right at the fence), not again
# from each blank in the run.
_FENCE = re.compile(r"^\s*```(?:json)?\s*|(?:(?<!\s)\s*|(?=```))```\s*$", re.IGNORECASE)


class ExtractResult(Model):
    run: str = Field(description="Id of this run in the extraction log (memory://extraction-log).")
    fast: ChannelReport = Field(description="High-signal sentences of the user's message, written at once.")
    deep: ChannelReport = Field(description="The client's model's extraction, written to working memory.")
    fallback_note: str | None = Field(description="Id of the note keeping the exchange when the deep channel failed.")
    next_step: str | None = Field(description="What the assistant can do itself when the client cannot sample.")
    detail: str


@dataclass(frozen=True)
class Prepared:
    """A run after `begin`: its log entry, the fast channel's report and the note written ahead."""

    run: str
    user_message: str
    assistant_message: str
    session_id: str | None
    client: str | None
    fast: ChannelReport
    note: str | None


def digest(user_message: str, assistant_message: str, session_id: str | None) -> str:
    raw = json.dumps([session_id, user_message, assistant_message], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def parse_answer(text: str, limit: int = 20) -> list[dict[str, Any]]:
    """The memories in a model's answer: `{"memories": [...]}` or a bare list, possibly inside a
    code fence or after a sentence of prose. Raises ValueError saying what is wrong."""
    body = _FENCE.sub("", text.strip())
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("the answer holds no JSON")
    try:
        value, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg} at character {exc.pos})") from None
    except RecursionError:  # json's parser on thousands of nested brackets
        raise ValueError("the answer nests JSON too deeply") from None
    items = value.get("memories") if isinstance(value, dict) else value
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError('the answer is not {"memories": [objects]}')
    return items[:limit]  # MCP_MEMORY_MAX_EXTRACT


def _parts(score: Any) -> ValueParts:
    return ValueParts(
        forced=score.forced,
        importance=round(score.importance, 2),
        novelty=round(score.novelty, 2),
        relevance=round(score.relevance, 2),
        credibility=round(score.credibility, 2),
        granularity=round(score.granularity, 2),
        timeliness=round(score.timeliness, 2),
        total=round(score.total, 2),
    )


class Sieve:
    """The two channels over one memory service."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    @staticmethod
    def small_talk(user_message: str, assistant_message: str) -> bool:
        return is_small_talk(user_message, assistant_message) and not forced_instruction(user_message)

    async def calibration(self) -> str:
        """The profile (as stored: not re-synthesised here, so it cannot change between the rounds of
        one call) and the user's configured instructions, for the extraction prompt."""
        profile = await profiles.peek(self.service.store)
        instructions = self.service.config.conversation.sieve_instructions
        if profile is None or profile.method == "none":
            return extraction.calibration(instructions=instructions)
        return extraction.calibration(
            summary=profile.summary.text,
            domains=[i.text for i in profile.domains],
            high_value=[i.text for i in profile.high_value_signals],
            low_value=[i.text for i in profile.low_value_signals],
            projects=[i.text for i in profile.active_projects],
            instructions=instructions,
        )

    async def sampling_prompt(self, user_message: str, assistant_message: str) -> tuple[str, str]:
        """(system prompt, user message) of the deep channel's sampling request, calibrated by
        the user's profile and configured instructions."""
        system = "You extract long-term memories from a conversation. Answer with JSON only."
        return system, extraction.extract_memories(user_message, assistant_message, await self.calibration())

    # ---- the fast channel and the note written ahead -------------------------------------------

    async def begin(
        self,
        user_message: str,
        assistant_message: str,
        *,
        session_id: str | None,
        client: str | None,
        deep: bool,
        now: datetime | None = None,
    ) -> Prepared:
        """Run the fast channel, write the fallback note when the deep channel is going to run,
        and log the run (pending until `finish`)."""
        now = now or utcnow()
        personal = self.service.config.limits.personal_numbers
        # Names the log keeps as given: refused whole when they hold a secret, before anything is written.
        validate.screen_name(session_id, "session_id", personal)
        validate.screen_name(client, "client", personal)
        intents = detect_intents(user_message)
        forgotten = [await self._forget(target) for target in (f.target for f in intents.forget)]
        signals = await resolve_keys(
            self.service, detect_signals(intents.kept_message() if intents.excluded else user_message)
        )
        # As many as the deep channel takes from the model: one message cannot fill the store (a
        # 20,000-character message of preferences once wrote 919 memories in one call).
        most = self.service.config.limits.max_extract_items
        kept, over = signals[:most], len(signals) - most
        marks = await self._marks()
        items = [
            await self._consider(
                s.content,
                s.category,
                s.importance,
                "user",
                session_id,
                client,
                pattern=s.pattern,
                forced=s.forced,
                deep=False,
                key=s.key,
                marks=marks,
            )
            for s in kept
        ]
        stored = [i for i in items if i.decision in ("store", "working")]
        detail = (
            f"{len(items)} high-signal sentence(s), {len(stored)} written."
            if items
            else "No high-signal sentence in the user's message."
        )
        if request := _request_detail(intents):
            detail = f"{request} {detail}"
        items = [item for pair in forgotten for item in pair[0]] + items
        if forgotten:
            detail = " ".join(text for _, text in forgotten) + " " + detail
        if over > 0:
            detail += (
                f" {over} more were not considered: at most {most} per call (MCP_MEMORY_MAX_EXTRACT), in the"
                " order of the message; send the rest of the message in another extract call."
            )
        fast = ChannelReport(
            outcome="stored" if stored else "nothing",
            detail=detail,
            items=items,
        )
        # Each message screened whole, once, before anything cuts it (a secret a cut split would no
        # longer match and keep most of its characters), and before the write lock is taken: no
        # other writer waits on redaction. The fallback note and the log's previews are cut from it.
        shown = (intents.shown_message(), _shown(intents, assistant_message)) if intents.any else None
        user_kept, assistant_kept = shown or (user_message, assistant_message)
        screened = (screen_text(user_kept, personal).text, screen_text(assistant_kept, personal).text)
        # Off the record: nothing of the exchange is kept, not even the note that waits for the model.
        note = await self._note(*screened, session_id, client) if deep and not intents.off_record else None
        pending = ChannelReport(outcome="pending", detail="Waiting for the client's model.", items=[])
        previews = (screened[0][:_PREVIEW], screened[1][:_PREVIEW])
        async with self.service.store.transaction() as tx:
            seq = await extraction_log.insert(
                tx,
                digest=digest(user_message, assistant_message, session_id),
                session_id=session_id,
                client=client,
                previews=previews,
                fast=fast,
                deep=pending if deep else ChannelReport(outcome="skipped", detail="", items=[]),
                note_seq=parse_id(note) if note else None,
                moment=now,
            )
        return Prepared(f"run_{seq}", user_message, assistant_message, session_id, client, fast, note)

    async def resume(self, user_message: str, assistant_message: str, session_id: str | None) -> Prepared | None:
        """The pending run of this exchange, when `begin` ran in an earlier round of the call."""
        async with self.service.store.reading() as tx:
            entry = await extraction_log.pending(tx, digest(user_message, assistant_message, session_id))
        if entry is None:
            return None
        return Prepared(
            entry.run, user_message, assistant_message, session_id, entry.client, entry.fast, entry.fallback_note
        )

    async def _note(
        self, user_screened: str, assistant_screened: str, session_id: str | None, client: str | None
    ) -> str:
        """The fallback note keeping the start of the exchange, from messages already screened, its
        words in the user's language (Chinese when the user's message is)."""
        label = _NOTE_LABELS["zh" if script_of(user_screened) != LATIN else "en"]
        text = f"{label[0]}{user_screened.strip()[:_NOTE_PART]}{label[1]}{assistant_screened.strip()[:_NOTE_PART]}"
        result = await self.service.remember(
            content=text,
            category="context",
            importance=0.3,
            confidence=0.5,
            source="both",
            tier="working",
            session_id=session_id,
            tags=["unextracted"],
            client=client,
        )
        return result.id

    # ---- the deep channel -----------------------------------------------------------------------

    async def finish(
        self,
        prepared: Prepared,
        *,
        answer: str | None = None,
        failure: str | None = None,
        skipped: str | None = None,
        unsupported: bool = False,
        declined: bool = False,
        now: datetime | None = None,
    ) -> ExtractResult:
        """Settle a run: the model's `answer` (text), or why there is none. When the client declined
        (its user refused the request), the note written ahead goes: the user chose not to have the
        exchange read, and a note would keep it word for word."""
        now = now or utcnow()
        next_step = None
        note = prepared.note
        if declined and note is not None:
            await self.service.forget([note], scrub_log=False)  # retired: nothing of it was kept
            note = None
            failure = (
                f"{failure or 'The client declined.'} Nothing of the exchange was kept but the fast channel's items."
            )
        if answer is not None:
            try:
                raw_items = parse_answer(answer, self.service.config.limits.max_extract_items)
            except ValueError as exc:
                failure = f"The model's answer was unusable: {exc}."
            else:
                intents, marks = detect_intents(prepared.user_message), await self._marks()
                items = [await self._deep_item(raw, prepared, intents, marks) for raw in raw_items]
                written = sum(1 for i in items if i.decision in ("store", "working"))
                deep = ChannelReport(
                    outcome="extracted" if raw_items else "empty",
                    detail=f"The model proposed {len(raw_items)} memories; {written} written to working memory."
                    if raw_items
                    else "The model found nothing worth keeping.",
                    items=items,
                )
                if note is not None:  # the model answered: the note has done its job
                    await self.service.forget([note], scrub_log=False)  # retired, not forgotten
                    note = None
        if answer is None or failure is not None:
            if failure is not None:
                deep = ChannelReport(outcome="failed", detail=failure[:1].upper() + failure[1:], items=[])
            elif unsupported:
                deep = ChannelReport(outcome="unsupported", detail="The client cannot sample.", items=[])
                next_step = (
                    "This client cannot run the deep extraction itself. Get the prompt extract_memories with these "
                    "two messages, answer it, and store each memory with remember (tier working, this session_id); "
                    "or use detect_memory_changes and pass its answer to apply_changes."
                )
            else:
                deep = ChannelReport(outcome="skipped", detail=skipped or "Skipped.", items=[])
        async with self.service.store.transaction() as tx:
            await extraction_log.settle(tx, prepared.run, deep, now)
        parts = [prepared.fast.detail, deep.detail]
        if note is not None:
            parts.append(f"The exchange is kept as note {note}.")
        return ExtractResult(
            run=prepared.run,
            fast=prepared.fast,
            deep=deep,
            fallback_note=note,
            next_step=next_step,
            detail=" ".join(p for p in parts if p),
        )

    async def _marks(self) -> MarkedTopics:
        """The topics the user marked by hand as not worth remembering (the profile's low-value signals)."""
        return MarkedTopics(await profiles.marked_not_to_keep(self.service.store))

    async def _deep_item(
        self, raw: dict[str, Any], prepared: Prepared, intents: Intents, marks: MarkedTopics
    ) -> ExtractedItem:
        content = raw.get("content")
        category = raw.get("category", "fact")
        importance = raw.get("importance", 0.5)
        source = raw.get("source", "both")
        why = intents.withheld(content) if intents.any and isinstance(content, str) else None
        if why is not None:
            return ExtractedItem(  # what the user asked not to keep is not kept in the log either
                content=WITHHELD,
                category=self._logged(str(category))[:40],
                importance=0.0,
                source=self._logged(str(source))[:20],
                pattern=None,
                value=None,
                decision="skip",
                id=None,
                action=None,
                reason=f"Not stored: {why}.",
            )
        valid = (
            isinstance(content, str)
            and content.strip()
            and isinstance(category, str)
            and isinstance(importance, int | float)
            and not isinstance(importance, bool)
            and math.isfinite(importance)  # Python's JSON reads NaN and Infinity
            and isinstance(source, str)
        )
        if not valid:
            preview = str(content) if content is not None else json.dumps(raw, ensure_ascii=False)
            return ExtractedItem(  # what the log keeps: screened first, cut after
                content=self._logged(preview)[:200],
                category=self._logged(str(category))[:40],
                importance=0.0,
                source=self._logged(str(source))[:20],
                pattern=None,
                value=None,
                decision="refused",
                id=None,
                action=None,
                reason="Malformed item: it needs content, category, importance and source.",
            )
        assert isinstance(content, str)
        assert isinstance(category, str)
        assert isinstance(source, str)
        category = deep_category(category)
        value = float(importance)
        if 1 < value <= 10:  # the prompts' 1-10 scale
            value /= 10
        return await self._consider(
            content.strip(),
            category,
            min(max(value, 0.0), 1.0),
            source,
            prepared.session_id,
            prepared.client,
            pattern=None,
            forced=False,
            deep=True,
            exclude=prepared.note,
            marks=marks,
        )

    # ---- scoring and writing one item -----------------------------------------------------------

    async def _consider(
        self,
        content: str,
        category: str,
        importance: float,
        source: str,
        session_id: str | None,
        client: str | None,
        *,
        pattern: str | None,
        forced: bool,
        deep: bool,
        exclude: str | None = None,
        key: str | None = None,
        marks: MarkedTopics | None = None,
    ) -> ExtractedItem:
        personal = self.service.config.limits.personal_numbers
        screened = screen_text(content, personal)

        def item(
            decision: Any, reason: str, value: ValueParts | None = None, written: Any = None, text: str = screened.text
        ) -> ExtractedItem:
            return ExtractedItem(  # the log's copy: every text screened as what is stored
                content=text,
                category=self._logged(category),
                importance=importance,
                source=self._logged(source),
                pattern=pattern,
                value=value,
                decision=decision,
                id=written.id if written else None,
                action=written.action if written else None,
                reason=reason,
            )

        # Secrets refuse the item; personal numbers alone are left to remember, which masks them (or
        # refuses them, as configured).
        secrets = [k for k in screened.withheld if k not in PERSONAL_KINDS]
        if secrets or (personal == "refuse" and screened.personal):
            return item("refused", describe(screened.withheld) + " Not stored.")
        # A topic the user marked as not worth remembering is not kept, in the log either; their own
        # explicit instruction (记住…, remember that…) still is.
        mark = marks.covering(content) if marks and not forced else None
        if mark is not None:
            why = (
                f"Not stored: the profile marks {validate.quoted(mark)} as not worth remembering (a low-value signal)."
            )
            return item("skip", why, text=WITHHELD)
        # This run's own note is the exchange itself: against it, every item of the model would be old news.
        existing = await self._similar(content, exclude)
        try:  # one item the model got wrong (an unknown source, say) is refused, not the whole run
            score = evaluate(
                content, category=category, importance=importance, source=source, existing=existing, forced=forced
            )
        except InvalidInput as exc:
            return item("refused", f"Not stored: {exc}")
        parts = _parts(score)
        nearest = existing[score.nearest] if score.nearest is not None else None
        if deep and nearest is not None and score.redundancy >= _SAME:
            return item("skip", f"Already stored: {_name(nearest)} says this.", parts, _Matched(nearest.id))
        if score.decision == "skip":  # a near-duplicate names the memory it repeats (forgetting that takes it too)
            matched = _Matched(nearest.id) if score.duplicate and nearest is not None else None
            return item("skip", _skipped(score, nearest), parts, matched)
        # A keyed fact (user.city) is core whatever its novelty: it updates the memory holding its key.
        tier = "working" if (deep or score.decision == "working") and key is None else "core"
        try:
            written = await self.service.remember(
                content=content,
                category=category,
                key=key,
                importance=importance,
                source=source,
                tier=tier,
                session_id=session_id,
                client=client,
                confidence=0.9 if source == "user" else 0.7,
            )
        except MemoryServerError as exc:
            return item("refused", f"Not stored: {exc}", parts)
        decision = "working" if tier == "working" else "store"
        if written.action in ("merged", "unchanged"):
            return item(decision, f"Already stored as {written.id} ({written.action}).", parts, written)
        why = "forced by the user's instruction" if forced else _why(score, nearest)
        where = "this session's working memory" if tier == "working" else "core memory"
        return item(decision, f"Written to {where} ({why}).", parts, written)

    def _logged(self, text: str) -> str:
        """A short text of a model's item as the extraction log keeps it."""
        return screen_text(text, self.service.config.limits.personal_numbers).text

    async def _similar(self, content: str, exclude: str | None = None) -> list[Nearby]:
        """The stored memories closest to `content` (but `exclude`), for the novelty score, each
        saying whether it is high-value (importance >= 0.8 or core memory)."""
        try:
            found = await self.service.recall(query=content[:500], limit=6, track_access=False)
        except InvalidInput:
            return []
        hits = [hit for hit in found.hits if hit.id != exclude][:5]
        async with self.service.store.reading() as tx:
            tiers = {}
            for hit in hits:
                seq = parse_id(hit.id)
                memory = await tx.get(seq) if seq is not None else None
                tiers[hit.id] = memory.tier if memory is not None else None
        return [Nearby.of(h.content, importance=h.importance, core=tiers[h.id] == "core", id=h.id) for h in hits]

    async def _forget(self, target: str) -> tuple[list[ExtractedItem], str]:
        """Forget the stored memories that say `target` (what the user asked to forget): those that
        hold at least MATCH_SHARE of it and that it accounts for at least COVER_SHARE of. Nothing
        else is guessed at: a memory that says more than that is named, not forgotten. The items
        report it without the words, which the log must not keep."""
        try:
            found = await self.service.recall(query=target[:500], limit=_FORGET_CANDIDATES, track_access=False)
        except InvalidInput:
            found = None
        hits = found.hits if found is not None else []
        matched = [
            h.id
            for h in hits
            if contained(target, h.content) >= MATCH_SHARE and contained(h.content, target) >= COVER_SHARE
        ]
        partial = [h.id for h in hits if h.id not in matched and contained(target, h.content) >= MATCH_SHARE]

        def report(reason: str, memory: str | None) -> ExtractedItem:
            return ExtractedItem(
                content=WITHHELD,
                category="forget",
                importance=0.0,
                source="user",
                pattern="forget",
                value=None,
                decision="skip",
                id=memory,
                action="forgotten" if memory else None,
                reason=reason,
            )

        deleted = (await self.service.forget(matched)).deleted if matched else []
        also = (
            f" {', '.join(partial)} also mention{'s' if len(partial) == 1 else ''} it among other things:"
            " forget by id if meant."
            if partial
            else ""
        )
        if not deleted:
            detail = f"Asked to forget something no stored memory says closely enough: nothing was forgotten.{also}"
            return [report(detail, None)], detail
        detail = f"Forgot {', '.join(deleted)} at the user's request.{also}"
        reason = "Forgotten at the user's request; the request itself is not a memory."
        return [report(reason, memory) for memory in deleted], detail

    async def log(self, limit: int = 100) -> list[extraction_log.LogEntry]:
        async with self.service.store.reading() as tx:
            return await extraction_log.recent(tx, limit)


# What a model's category outside the deep channel's list is about (its words, lower case): pets
# are relationships, a hobby a preference. Any other goes to fact.
_NEAREST = {
    "relationship": (
        "pet pets family people person friend friends partner spouse child children kid kids parent parents "
        "colleague colleagues contact contacts organisation organization company place places asset assets"
    ),
    "preference": (
        "preferences hobby hobbies interest interests like likes dislike dislikes habit habits taste food diet style"
    ),
    "identity": "profile personal bio background job work career occupation role location health",
    "fact": "context",
    "todo": "task tasks reminder reminders plan plans appointment appointments event_plan deadline",
    "project_state": "project projects progress status work_in_progress",
    "skill": "skills knowledge learning tool tools tech technology expertise",
    "insight": "opinion opinions view views evaluation thought thoughts",
    "decision": "choice choices decisions",
    "correction": "corrections fix fixes",
}
_SERVER_CATEGORIES = frozenset({"profile", "context"})
_NEAREST_BY_WORD = {word: category for category, words in _NEAREST.items() for word in words.split()}


def deep_category(category: str) -> str:
    """A model's category among the ones the server knows: as given when it is one of the deep
    channel's list (prompts/extraction.py: DEEP_CATEGORIES) or of the other known categories (event,
    coding_style, ...; any case), else the nearest by its words (pets: relationship), else fact. The
    server's own (profile, context) are not a model's to use."""
    name = category.strip().lower().replace("-", "_").replace(" ", "_")
    if name in DEEP_CATEGORIES or (name in KNOWN_CATEGORIES and name not in _SERVER_CATEGORIES):
        return name
    for word in (name, *name.split("_")):
        if word in _NEAREST_BY_WORD:
            return _NEAREST_BY_WORD[word]
    return "fact"


# The fallback note's words: before the user's message, and between it and the assistant's.
_NOTE_LABELS = {
    "zh": ("[对话尚未提取] 用户：", " | 助手："),
    "en": ("[exchange not yet extracted] user: ", " | assistant: "),
}


@dataclass(frozen=True)
class _Matched:
    """A stored memory an item turned out to be (reported as its id, nothing written)."""

    id: str | None
    action: str | None = None


def _name(nearest: Nearby) -> str:
    return nearest.id or "a stored memory"


def _skipped(score: ValueScore, nearest: Nearby | None) -> str:
    """Why an item is skipped, in the terms of the decision actually taken (`value.decide`)."""
    if score.duplicate and nearest is not None:
        return (
            f"Not stored: {_name(nearest)} already says this (similarity {score.redundancy:.2f}); value "
            f"{score.total:.1f} counts one band lower for a near-duplicate."
        )
    lowered = f", lowered by 1 next to the high-value {_name(nearest)}" if score.related and nearest else ""
    return f"Value {score.total:.1f} is below {score.working_threshold:g}{lowered}: not worth keeping."


def _why(score: ValueScore, nearest: Nearby | None) -> str:
    if score.duplicate and nearest is not None:
        return f"value {score.total:.1f}, one band lower: {_name(nearest)} already says most of it"
    if score.related and nearest is not None:
        band = score.store_threshold if score.decision == "store" else score.working_threshold
        return f"value {score.total:.1f}, at least {band:g} next to the high-value {_name(nearest)}"
    return f"value {score.total:.1f}"


def _request_detail(intents: Intents) -> str:
    if intents.off_record:
        return "The user asked not to keep this exchange: nothing of it is stored."
    if intents.topics:
        left_out = len(intents.excluded) - len(intents.forget)
        return f"{left_out} sentence(s) left out: the user asked not to remember a topic."
    return ""


def _shown(intents: Intents, assistant_message: str) -> str:
    """The assistant's message as the note and the log keep it: off the record, nothing of it;
    otherwise its sentences on what the user asked to forget or not to keep are left out."""
    if intents.off_record:
        return WITHHELD
    shown: list[str] = []
    for sentence in split_sentences(assistant_message):
        kept = sentence if intents.withheld(sentence) is None else WITHHELD
        if kept != WITHHELD or not shown or shown[-1] != WITHHELD:
            shown.append(kept)
    return " ".join(shown)
