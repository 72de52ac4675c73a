"""One keyword of a query in the index's terms: what `tokens` builds from a query and `bm25`
scores. It lives apart from `bm25` so that building queries (and starting the server) does not
load numpy, which only the index needs."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KeywordQuery"]


@dataclass(frozen=True)
class KeywordQuery:
    """One keyword in index terms: all `terms` must occur (a Chinese word's bigrams); with
    `prefix`, its single term also matches longer terms (pyth -> python). `weight` scales its
    contribution (single Chinese characters count for less than words)."""

    terms: tuple[str, ...]
    prefix: bool = False
    weight: float = 1.0
