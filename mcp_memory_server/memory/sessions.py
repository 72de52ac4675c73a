"""Working memory of a conversation: its topic, context variables, turn count and the
user's last emotion, and the response strategy that emotion calls for.

An assistant calls `update_session` once per turn. The topic makes `recall(session_id=...)` add
the topic's keywords to the query and boost related memories; the strategy tells the assistant
how to answer (tone, length, whether to ask back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import Field

from ..config.config import Config
from ..config.limits import MAX_TOPIC_CHARS, MAX_VARIABLES, MAX_VARIABLES_JSON
from ..errors import InvalidInput, NotFound
from ..models import Memory, Model, SessionState
from ..store.rows import utcnow
from . import validate
from .requests import request
from .service import MemoryService
from .strategy import Choice, Emotion, Strategy, choose, strategy_table

__all__ = ["MAX_TOPIC_CHARS", "MAX_VARIABLES", "SessionResult", "SessionView", "Sessions"]


class SessionResult(Model):
    session: SessionState
    emotion: str = Field(description="The emotion whose strategy applies: the one reported, or neutral.")
    strategy: Strategy
    detail: str = Field(description="Why this strategy, e.g. that a low-confidence emotion fell back to neutral.")


class SessionView(Model):
    session: SessionState
    strategy: Strategy = Field(description="The strategy for the session's last emotion.")
    memories: list[Memory] = Field(description="Memories written in this session, newest first (up to 200).")


def _merged(current: Mapping[str, Any], changes: Mapping[str, Any]) -> str:
    """The context variables after a turn: given keys set, keys given as null removed."""
    merged = dict(current)
    for name, value in changes.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise InvalidInput(f"variable name {validate.quoted(str(name))} is not valid: use 1-100 characters.")
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    if len(merged) > MAX_VARIABLES:
        raise InvalidInput(
            f"a session holds at most {MAX_VARIABLES} context variables; this turn would make {len(merged)}."
        )
    text = json.dumps(merged, ensure_ascii=False)
    if len(text) > MAX_VARIABLES_JSON:
        raise InvalidInput(
            f"the context variables would take {len(text):,} characters of JSON; the limit is {MAX_VARIABLES_JSON:,}."
        )
    return text


class Sessions:
    """update_session and the session view, over the memory service's store."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.config: Config = service.config
        # Built (and checked) once: a bad configured row is an error at start, not at a turn.
        self.table: Mapping[str, Strategy] = strategy_table(self.config.conversation.strategy_overrides)

    async def update(
        self,
        session_id: str,
        *,
        topic: str | None = None,
        emotion: Emotion | Mapping[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        request_id: str | None = None,
    ) -> SessionResult:
        """One turn of the conversation. With a `request_id`, a retry of the same call answers as
        the first did and changes nothing (the turn is counted once)."""
        personal = self.config.limits.personal_numbers
        validate.screen_name(session_id, "session_id", personal)
        shown = emotion.model_dump() if isinstance(emotion, Emotion) else emotion
        arguments = {"session_id": session_id, "topic": topic, "emotion": shown, "variables": variables}
        asked = request("update_session", request_id, arguments)
        sid = validate.session_id(session_id)
        if sid is None:
            raise InvalidInput("session_id is empty; give the conversation's id.")
        if topic is not None and len(topic) > MAX_TOPIC_CHARS:
            raise InvalidInput(f"topic is {len(topic)} characters; the limit is {MAX_TOPIC_CHARS}.")
        given = len(json.dumps(variables, ensure_ascii=False, default=str)) if variables else 0
        if given > MAX_VARIABLES_JSON:  # before they are screened: bounded first
            raise InvalidInput(
                f"the variables given take {given:,} characters of JSON; the limit is {MAX_VARIABLES_JSON:,}."
            )
        reported = Emotion.model_validate(emotion) if isinstance(emotion, Mapping) else emotion
        choice: Choice = choose(reported, self.config, self.table)
        now = now or utcnow()
        store = self.service.store
        cleaned = validate.clean(topic) if topic is not None else None
        # Screened here, before the write lock: a topic and variables are stored as memories are.
        if cleaned:
            cleaned = validate.screen(cleaned, personal, field="topic")[0]
        if variables:
            variables = validate.screen_variables(variables, personal)
        async with store.transaction(asked) as tx:
            if (first := tx.replayed(SessionResult)) is not None:
                return first
            merged = _merged(await tx.session_variables(sid), variables) if variables else None
            await tx.update_session(
                sid, now, topic=cleaned or None, emotion=choice.emotion if reported else None, variables=merged
            )
            if cleaned == "":
                await tx.set_topic(sid, None, now)  # an empty topic clears it
            state = await tx.session(sid)
            assert state is not None
            result = SessionResult(
                session=state, emotion=choice.emotion, strategy=choice.strategy, detail=choice.reason
            )
            tx.answer(result)
        return result

    async def view(self, session_id: str) -> SessionView:
        sid = validate.session_id(session_id)
        state = await self.service.store.session(sid) if sid else None
        if state is None:
            raise NotFound(
                f"no session has the id {validate.quoted(session_id)}; sessions start with update_session or a "
                "remember that names them, and expire after a while without activity."
            )
        strategy = self.table.get(state.last_emotion or "neutral", self.table["neutral"])
        page = await self.service.list_memories(
            session_id=state.session_id, limit=min(200, self.service.config.limits.max_page)
        )
        return SessionView(session=state, strategy=strategy, memories=page.items)
