"""Bounds that are not settings: what one tool call, one import or one line may carry, named once
and used by the tools, the dashboard, the CLI and the checks behind them (the configurable bounds
are `Config.limits`)."""

from __future__ import annotations

from ..models import MAX_CATEGORY_CHARS  # a category name: lower_snake (models.CATEGORY_PATTERN)

__all__ = [
    "BODY_BYTES_PER_ITEM",
    "MAX_CATEGORY_CHARS",
    "MAX_EMOTION_CHARS",
    "MAX_ID_CHARS",
    "MAX_KEY_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_PROFILE_TEXT_CHARS",
    "MAX_RECALL_HITS",
    "MAX_SAMPLED_TOKENS",
    "MAX_SESSION_CHARS",
    "MAX_TOPIC_CHARS",
    "MAX_VARIABLES",
    "MAX_VARIABLES_JSON",
    "UNPACK_RATIO",
]

MAX_RECALL_HITS = 50  # hits one recall or search returns at most (the tool, the dashboard, the CLI)
MAX_ID_CHARS = 40  # a memory id as a client sends it (mem_123); longer is not an id of ours
MAX_KEY_CHARS = 200  # a memory's key (user.city)
MAX_SESSION_CHARS = 200  # a session id
MAX_TOPIC_CHARS = 200  # a session's current topic
MAX_VARIABLES = 50  # a session's context variables
MAX_VARIABLES_JSON = 8000  # ... and their size as JSON
MAX_MESSAGE_CHARS = 20_000  # one message handed to `extract`
MAX_SAMPLED_TOKENS = 1500  # what the server asks of the client's model in one sampling request
MAX_PROFILE_TEXT_CHARS = 500  # one item of the profile (an edit, an imported item)
MAX_EMOTION_CHARS = 40  # an emotion's name in update_session

# What one import may cost, in proportion to MCP_MEMORY_MAX_BODY, so that one setting raises it
# all (Limits.max_unpacked_bytes, max_import_values, max_import_items). A compressed file unpacks
# to at most UNPACK_RATIO times the body cap: room for JSON, which gzip shrinks 5 to 12 times,
# while a body of gzipped zeros (4 GiB in 4 MiB) stops at 64 MiB. Its size alone does not bound
# what reading a file costs: Python holds a JSON value in 30 to 70 bytes, so `[{}, {}, ...]` takes
# 20 times its size, and a tiny item costs as much to check as a real one (a 64 KB gzip of
# `[{"memory": "a"}, ...]` unpacks to 32 MB: 3.5 GB and three minutes to read). Hence counts of
# the JSON values a file holds (one per byte of the body cap) and of its items (one per
# BODY_BYTES_PER_ITEM bytes): the largest legal file and the worst one then cost about the same.
UNPACK_RATIO = 16
BODY_BYTES_PER_ITEM = 32
