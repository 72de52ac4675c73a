"""The prompts beyond extraction, in our own words: detecting change operations, evaluating one
piece of information, answering with memory and a response strategy in one call, and
synthesising the user profile.

Each prompt asks for JSON in exactly the shape one of our tools accepts, so what a model answers
can be passed on unchanged: `detect_memory_changes` -> `apply_changes(ops)`, `evaluate_memory`
-> `remember(**memory)`, `respond_with_memory` -> `update_session(emotion=...)` and
`apply_changes(ops=memory_changes)`, `synthesize_profile` -> `refresh_profile(profile=...)`.
Plain strings in, plain strings out: the MCP layer gathers the memories and state they show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CHANGE_EXAMPLE",
    "EVALUATION_EXAMPLE",
    "PROFILE_EXAMPLE",
    "RESPONSE_EXAMPLE",
    "detect_memory_changes",
    "evaluate_memory",
    "respond_with_memory",
    "synthesize_profile",
]


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


CHANGE_EXAMPLE: list[dict[str, Any]] = [
    {
        "key": "mem_12",
        "action": "add",
        "category": "user_preferences",
        "payload": "用户偏好深色主题和中文界面，喜欢简洁的操作流程",
        "importance": 7,
        "source": "用户输入",
        "tags": ["偏好", "界面"],
    },
    {
        "key": "mem_new_1",
        "action": "add",
        "category": "coding_style",
        "payload": "The user formats Python with ruff, line length 120",
        "importance": 6,
        "source": "user",
        "tags": ["python"],
    },
    {"key": "mem_7", "action": "del", "category": "workflow_history"},
]

_CHANGES = """\
You maintain a user's long-term memory. Read one exchange between the user and an assistant, \
compare it with the related memories already stored, and answer with the changes to make: a \
JSON array of operations, nothing else.

Current time: {now}

Related memories already stored (JSON; "key" is what an operation uses to name one):
{memories}

<exchange>
<user>
{user_input}
</user>
<assistant>
{ai_output}
</assistant>
</exchange>

Categories: desktop_sop (procedures on the desktop), ui_templates (layouts, components, styles), \
user_preferences (preferences, habits, settings), error_patterns (errors and their fixes), \
coding_style (conventions and practices), workflow_history (tasks and how they went), or the \
general identity, preference, decision, fact, insight, todo, correction, skill, relationship, \
project_state; another lower_snake name when none fits.

Operations:
- {{"key", "action": "add", "category", "payload", "importance", "source", "tags"}} creates a \
memory, or replaces one: to update a stored memory, reuse its key and write its whole new text \
in "payload". For a new memory invent a key no stored memory has, such as "mem_new_1". \
"importance" is an integer 1-10 (9-10 core preferences, key procedures, critical error \
patterns; 7-8 common templates and workflows, important conventions; 5-6 ordinary information; \
3-4 minor or temporary; 1-2 barely worth keeping). "source" is "user" (用户输入) or \
"assistant" (AI输出). "tags" is a short list, optional.
- {{"key", "action": "del", "category"}} removes a stored memory; "category" must be its \
current category. Delete only what the exchange shows is wrong, done or replaced, and the less \
important copy of a duplicate. When the user asks in this exchange for a memory to be deleted \
(把芒果那条删掉, "that's wrong, delete it"), add "asked": true: it is archived, so it can be \
restored, even if it was stored minutes ago. Without "asked", the program keeps what its rules \
protect (recent, important, often used and core memories) and says so; age and use counts are \
its business, not yours.

Rules: each payload is one self-contained statement in the user's language, with the names, \
numbers and dates that make it useful. Do not store small talk, one-off requests or secrets. \
Counters and timestamps are kept by the program: never output them. When nothing should \
change, answer [].

Answer with the JSON array only, like:
{example}"""


def detect_memory_changes(user_input: str, ai_output: str, memories: Sequence[Mapping[str, Any]], now: str) -> str:
    return _CHANGES.format(
        now=now,
        memories=_dump(list(memories)) if memories else "[] (none related)",
        user_input=user_input.strip(),
        ai_output=ai_output.strip(),
        example=_dump(CHANGE_EXAMPLE),
    )


EVALUATION_EXAMPLE: dict[str, Any] = {
    "forced": False,
    "scores": {"importance": 7, "novelty": 9, "relevance": 8, "credibility": 8, "granularity": 6, "timeliness": 8},
    "total": 7.7,
    "decision": "store",
    "memory": {
        "content": "用户对花生过敏，点餐时要避开",
        "category": "identity",
        "importance": 0.8,
        "confidence": 0.9,
        "source": "user",
        "tier": "core",
        "tags": ["健康"],
    },
}

_EVALUATION = """\
Decide whether one piece of information deserves a place in the user's long-term memory.

<information>
{information}
</information>

Stored memories closest to it (for novelty):
{similar}

First: did the user explicitly ask to remember it (记住, 别忘了, 记一下, remember, don't forget, \
note that)? Then forced = true and it is stored whatever else you find.

Otherwise score six dimensions from 0 to 10:
- importance: a key fact or concept, something that affects decisions, of lasting use;
- novelty: said for the first time, not redundant with the stored memories above, adds detail;
- relevance: matches the user's interests and needs, their past conversations, likely tasks;
- credibility: a reliable source, supported by facts, consistent with what is known;
- granularity: specific and precise rather than vague;
- timeliness: stays valid for a long time (high) or expires soon (low).

total = (0.5·importance + 0.4·novelty + 0.5·relevance + 0.3·credibility + 0.2·granularity + \
0.3·timeliness) / 2.2, plus 3 when forced. Decision: total of 7 or more "store" (core \
memory); 5 to 7 "working" (this conversation's working memory); below 5 "skip". Split \
information holding several independent facts and judge the most valuable one; be careful with \
anything that looks wrong; never store secrets or private data the user would not want kept.

"memory" holds the arguments of the remember tool: content (one self-contained sentence in the \
user's language), category, importance (0-1), confidence (0-1), source (user, assistant or \
both), tier ("core" for store, "working" for working) and tags; null when the decision is skip.

Answer with JSON only, like:
{example}"""


def evaluate_memory(information: str, similar: Sequence[str]) -> str:
    listed = "\n".join(f"- {s}" for s in similar) if similar else "(none)"
    return _EVALUATION.format(information=information.strip(), similar=listed, example=_dump(EVALUATION_EXAMPLE))


RESPONSE_EXAMPLE: dict[str, Any] = {
    "emotion": {"primary": "anxious", "category": "negative", "confidence": 0.8, "indicators": ["明天就要面试"]},
    "response": "别太担心，你之前准备得很充分……",
    "memory_changes": [
        {
            "key": "mem_new_1",
            "action": "add",
            "category": "event",
            "payload": "用户明天上午有一场后端工程师面试",
            "importance": 7,
            "source": "user",
            "tags": ["面试"],
        }
    ],
}

_RESPONSE = """\
You are the user's assistant. Answer their message in one JSON object: read their emotion, \
write your reply with the strategy below, and note what should change in their memory.

User's message:
<message>
{user_message}
</message>

Working memory of this conversation (JSON): {working}

Related long-term memories (JSON): {memories}

Response strategy (from the emotion recorded for this conversation):
- tone: {tone}
- target length: about {max_length} characters
- draw on the memories above: {use_memory}
- end with a question back to the user: {proactive_question}
- formality: {formality}; emoji: {emoji}

Tasks:
1. emotion: the user's emotion now, "primary" one of neutral, happy, excited, grateful, curious, \
sad, anxious, frustrated, confused, help_seeking, info_seeking, validation_seeking; "category" \
positive, negative, neutral or seeking; "confidence" 0-1; "indicators": what showed it. It \
sets the strategy of the next turn.
2. response: your reply, in the user's language, following the strategy.
3. memory_changes: change operations for what this message teaches about the user (the \
apply_changes format: add with key, category, payload, importance 1-10, source, tags; del with \
key and category; reuse the key of a memory above to update it); [] when nothing.

Answer with the JSON object only, like:
{example}"""


def respond_with_memory(
    user_message: str,
    working: Mapping[str, Any],
    memories: Sequence[Mapping[str, Any]],
    strategy: Mapping[str, Any],
) -> str:
    return _RESPONSE.format(
        user_message=user_message.strip(),
        working=json.dumps(dict(working), ensure_ascii=False),
        memories=json.dumps(list(memories), ensure_ascii=False),
        tone=strategy["tone"],
        max_length=strategy["max_length"],
        use_memory="yes" if strategy["use_memory"] else "no",
        proactive_question="yes" if strategy["proactive_question"] else "no",
        formality=strategy["formality"],
        emoji="allowed" if strategy["emoji_allowed"] else "none",
        example=_dump(RESPONSE_EXAMPLE),
    )


PROFILE_EXAMPLE: dict[str, Any] = {
    "summary": {
        "text": "A backend engineer in Hangzhou who invests in property and prefers simple tools.",
        "sources": ["mem_3", "mem_8"],
    },
    "domains": [{"text": "Backend development (Python, PostgreSQL)", "sources": ["mem_3", "mem_11"]}],
    "high_value_signals": [{"text": "Configuration fixes that were debugged together", "sources": ["mem_11"]}],
    "low_value_signals": [{"text": "Weather and small talk", "sources": []}],
    "language_preferences": {"text": "Chinese, with English technical terms", "sources": ["mem_3"]},
    "active_projects": [{"text": "Migrating the blog to a static site (in progress)", "sources": ["mem_14"]}],
}

_PROFILE = """\
Write a concise profile of the user from their core memories below. It will calibrate what a \
memory extractor keeps: knowing the user invests in property tells it that yields matter more \
than small talk.

<core_memories>
{memories}
</core_memories>

Fields: summary (one paragraph: who they are and what they care about), domains (their \
fields of work and interest), high_value_signals (kinds of information especially worth \
keeping for them), low_value_signals (kinds they probably do not need kept), \
language_preferences (how they communicate), active_projects (ongoing work and where it \
stands). Every item is {{"text", "sources"}}: "sources" lists the ids of the memories it rests \
on. Stay grounded in these memories; do not speculate. Write in the language most of the \
memories use.

Answer with JSON only, like:
{example}"""


def synthesize_profile(memories: Sequence[Mapping[str, Any]]) -> str:
    listed = "\n".join(f"[{m['id']}] ({m['category']}) {m['content']}" for m in memories) or "(none yet)"
    return _PROFILE.format(memories=listed, example=_dump(PROFILE_EXAMPLE))
