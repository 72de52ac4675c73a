"""Prompt texts and their builders. Plain strings in, plain strings out: no MCP here."""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["DEEP_CATEGORIES", "INSTRUCTIONS", "calibration", "extract_memories"]

INSTRUCTIONS = """\
This server is the user's long-term memory, shared by every assistant they use. Chinese and \
English both work, mixed freely.

Recall without being asked: at the start of a conversation and whenever the user refers to \
something from before (their preferences, people, projects, earlier decisions, "as I said", \
"my usual ..."), call `recall` with a short query of the key words; use what comes back quietly.

Remember without being asked when the user states something that will still matter in a later \
conversation: who they are, preferences and dislikes, decisions, corrections of earlier facts, \
commitments and to-dos, people and projects, or a result that took real work to reach. Write \
each memory as one self-contained sentence in the user's language, give it a category, and use \
`key` (such as user.city) for facts that can change so a new value replaces the old one. Do not \
store small talk, one-off requests, or secrets (passwords, API keys, card numbers).

When the user asks you to forget something, find it with `recall` or `list` and pass its ids to \
`forget`; deletion is permanent."""


# The deep channel's categories, each with what it holds: the prompt lists them, and the sieve
# stores a model's item under one of them (sieve/sieve.py: `deep_category`).
DEEP_CATEGORIES: dict[str, str] = {
    "identity": "who the user is: role, location, background, languages",
    "preference": "likes, dislikes, habits, style, how they want answers",
    "decision": "a choice made or an option rejected, and why",
    "fact": "a verified piece of information, a calculation result, a finding",
    "insight": "the user's opinion, comparison or evaluation",
    "todo": "something to do or follow up, with its date if one was given",
    "correction": "something believed earlier that turned out wrong, with the right version",
    "skill": "what the user knows or is learning, tools they use, their level",
    "relationship": "people, organisations, pets, places or assets the user is connected to",
    "project_state": "where an ongoing piece of work stands and what comes next",
}
_CATEGORY_GUIDE = "\n".join(f"- {name}: {what}" for name, what in DEEP_CATEGORIES.items())

_EXTRACTION = """\
You decide what from one exchange between a user and an assistant is worth keeping in the user's \
long-term memory. Picture an assistant who has worked with this person for years: if they came \
back tomorrow with a related question, what from this exchange would help?

Read both sides. The user's words show preferences, goals, constraints and what they know; the \
assistant's words may hold conclusions, numbers, fixes or recommendations that took effort and \
would be wasted if forgotten. How the user reacts to a suggestion (accepts, rejects, changes it) \
shows a preference too. Valuable memories are not only personal facts.

Rules:
1. Each memory is self-contained: understandable with no access to this exchange. Name the \
subject, keep the numbers, dates and names. Bad: "discussed the yield". Good: "The 1LDK flat in \
Shinagawa yields about 4.2% after management fees (5% on paper)."
2. Write each memory in the language the user wrote in.
3. One idea per memory; no more than 8 memories.
4. Never include passwords, API keys, tokens, card numbers or other secrets.
5. Greetings, thanks, small talk and one-off requests with nothing lasting give no memories: \
output {{"memories": []}}.

Categories:
{categories}

Importance (0.0-1.0): 0.9-1.0 core identity, strong preferences, major decisions (rare); \
0.7-0.8 important facts, active project state, verified conclusions; 0.5-0.6 useful context, \
opinions, comparisons; 0.3-0.4 minor details; 0.1-0.2 barely worth keeping.

Source: "user" if it came from the user, "assistant" if from the assistant's reply, "both" if \
it took the two together.

<exchange>
<user>
{user_message}
</user>
<assistant>
{assistant_message}
</assistant>
</exchange>

Answer with JSON only, no prose and no code fence, in exactly this shape:
{example}"""

_EXAMPLE = {
    "memories": [
        {
            "content": "A self-contained sentence to remember",
            "category": "preference",
            "importance": 0.7,
            "source": "user",
        }
    ]
}


def extract_memories(user_message: str, assistant_message: str, calibration: str = "") -> str:
    """The extraction prompt for one exchange (the sieve's deep channel), with the
    calibration block (see `calibration`) appended when there is one."""
    prompt = _EXTRACTION.format(
        categories=_CATEGORY_GUIDE,
        user_message=user_message.strip(),
        assistant_message=assistant_message.strip(),
        example=json.dumps(_EXAMPLE, ensure_ascii=False, indent=2),
    )
    return f"{prompt}\n\n{calibration}" if calibration else prompt


def calibration(
    *,
    summary: str = "",
    domains: Sequence[str] = (),
    high_value: Sequence[str] = (),
    low_value: Sequence[str] = (),
    projects: Sequence[str] = (),
    instructions: str = "",
) -> str:
    """What the extractor should know about this user (the profile calibrates
    extraction), plus the instructions the user configured; "" when there is nothing."""
    parts: list[str] = []
    if summary:
        parts.append(f"About this user (from their memories; use it to calibrate what to keep):\n{summary}")
    if domains:
        parts.append("Their domains: " + "; ".join(domains))
    if high_value:
        parts.append("Especially valuable for them (higher importance):\n" + "\n".join(f"- {s}" for s in high_value))
    if low_value:
        parts.append("Usually not worth keeping for them:\n" + "\n".join(f"- {s}" for s in low_value))
    if projects:
        parts.append("Active projects: " + "; ".join(projects))
    if instructions.strip():
        parts.append(f"Additional instructions from the user:\n{instructions.strip()}")
    return "\n\n".join(parts)
