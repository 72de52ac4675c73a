"""A value the user replaced never ranks above what replaced it: recall's pass over the ranking
that puts each superseded memory just below its successor (text/corrections.py says when one
memory corrects or replaces another)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..text.corrections import Compared, Successor
from .fusion import Scored

__all__ = ["below_their_successors"]


# How far below its successor a superseded memory is put: enough to show in a score rounded to 4 places.
_SUPERSEDED_GAP = 0.001


def _ranked(scored: Sequence[Scored]) -> list[Scored]:
    # Ties go to the most recently updated (ISO timestamps sort as text).
    return sorted(scored, key=lambda s: (s.score, s.candidate.row.updated_at), reverse=True)


def below_their_successors(scored: Sequence[Scored], limit: int, shown: Callable[[Scored], bool]) -> list[Scored]:
    """`scored` (best first) with each superseded memory among the first `limit` that `shown`
    keeps scored just below the lowest of its successors among all the candidates, best first
    again: a later memory of the same keyed fact (I moved to Berlin under user.city over an
    unkeyed 我住在北京), or a later correction of it (截止日期不是3月1日，而是3月15日 over
    截止日期是3月1日; text/corrections.py says when one corrects another). Whatever its words share
    with the query or the session's topic, a value the user replaced never ranks above what
    replaced it.

    Only what can be returned is compared: the first `limit` shown, again after each round of
    demotions brings others up, so the work grows with `limit`, not with the candidates. Only a
    memory with a keyed fact's key or of category correction can supersede, so a recall without
    one costs one pass over the candidates."""
    successors = [
        (s.candidate.row, found)
        for s in scored
        if (found := Successor.of(s.candidate.row.content, s.candidate.row.key, s.candidate.row.category))
    ]
    if not successors:
        return list(scored)
    by_seq = {s.candidate.row.seq: s for s in scored}
    superseded_by: dict[int, list[int]] = {}
    ranked = list(scored)
    while True:
        fresh = [s for s in [s for s in ranked if shown(s)][:limit] if s.candidate.row.seq not in superseded_by]
        if not fresh:
            return ranked
        for s in fresh:
            r = s.candidate.row
            older = Compared(r.content, r.key)
            superseded_by[r.seq] = [
                row.seq
                for row, successor in successors
                if row.updated_at > r.updated_at and successor.supersedes(older)
            ]
        # From the scores of the scoring, newest first: a successor's own score is final before
        # the older memories it caps are read (a correction can itself be corrected).
        score = {seq: s.score for seq, s in by_seq.items()}
        for seq in sorted(superseded_by, key=lambda q: by_seq[q].candidate.row.updated_at, reverse=True):
            if superseded_by[seq]:
                cap = min(score[c] for c in superseded_by[seq]) - _SUPERSEDED_GAP
                score[seq] = max(0.0, min(score[seq], cap))
        ranked = _ranked([replace(s, score=score[seq]) if score[seq] != s.score else s for seq, s in by_seq.items()])
