"""How a draft becomes the values of its rows: the memory's columns, its fingerprint and its
full-text terms, computed once per write (and fast for Chinese text), with the columns of a bulk
write."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..models import Draft
from ..text.tokens import fingerprint, normalize

__all__ = [
    "DRAFT_COLUMNS",
    "FTS_ROW",
    "MEMORY_ROW",
    "MEMORY_WIDTH",
    "IndexFields",
    "bulk_rows",
    "digest",
    "draft_values",
    "normalized",
]

DRAFT_COLUMNS = "content, key, category, tier, importance, confidence, source, tags, session_id, client"
# The columns a bulk write gives, in the order of its rows' values.
MEMORY_ROW = (
    f"seq, number, namespace, {DRAFT_COLUMNS}, content_hash, created_at, updated_at, last_accessed, access_count"
)
MEMORY_WIDTH = len(MEMORY_ROW.split(", "))
FTS_ROW = "rowid, content, key, tags, category"
# (content, key, tags, category) -> the four pre-segmented FTS columns
IndexFields = Callable[[str, "str | None", Iterable[str], str], tuple[str, ...]]
Row = tuple[Any, ...]
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


# Full-width ASCII forms and the ideographic space (common in Chinese text) with their NFKD forms.
_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")
_FULL_WIDTH_NFKD = {chr(c): unicodedata.normalize("NFKD", chr(c)) for c in (*range(0xFF01, 0xFF5F), 0x3000)}


def normalized(text: str) -> str:
    """`normalize(text)`, faster for Chinese text. One full-width comma makes CPython run its
    whole NFKC algorithm over the text (15 us for a 100-character line); replacing such
    characters by their decompositions first gives the same NFKC (it decomposes them the same
    way), and usually leaves a text NFKC only needs to check (under 1 us)."""
    if not text.isascii():
        for char in set(_FULL_WIDTH.findall(text)):
            text = text.replace(char, _FULL_WIDTH_NFKD[char])
    return normalize(text)


def digest(content: str, normalized: str) -> str:
    """`fingerprint(content)` given `normalize(content)`, without normalising again: the
    fingerprint hashes the letters and digits of the normalised text, which normalising twice
    leaves as they are. A text without any letter or digit is hashed as it came, as there."""
    return fingerprint(normalized if _LETTER_OR_DIGIT.search(normalized.casefold()) else content)


def draft_values(draft: Draft) -> tuple[Any, ...]:
    """A draft's values in the order of `DRAFT_COLUMNS`."""
    return (
        draft.content,
        draft.key,
        draft.category,
        draft.tier,
        draft.importance,
        draft.confidence,
        draft.source,
        json.dumps(list(draft.tags), ensure_ascii=False) if draft.tags else "[]",
        draft.session_id,
        draft.client,
    )


def bulk_rows(
    drafts: Sequence[Draft], first: int, first_number: int, namespace: str, now: str, index_fields: IndexFields
) -> tuple[list[Row], list[Row]]:
    """The memory rows (`MEMORY_ROW`) and full-text rows (`FTS_ROW`) of drafts given seqs from
    `first` on and numbers from `first_number` on."""
    memories: list[Row] = []
    fts: list[Row] = []
    for i, draft in enumerate(drafts):
        seq = first + i
        # One normalisation for both the fingerprint and the index terms (see `digest`).
        text = normalized(draft.content)
        row = (seq, first_number + i, namespace, *draft_values(draft), digest(draft.content, text), now, now, now, 0)
        memories.append(row)
        fts.append((seq, *index_fields(text, draft.key, draft.tags, draft.category)))
    return memories, fts
