"""The quantised vector index against a float32 brute-force reference: exact below EXACT_ROWS, a
coarse pass plus exact rescoring above it, rows kept dense through replace and remove."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

from mcp_memory_server.index import vectors
from mcp_memory_server.index.vectors import VectorIndex, decode, encode
from mcp_memory_server.text.scripts import CJK, LATIN, MIXED, script_of

DIM = 384


def _unit(rng: np.random.Generator, n: int, dim: int = DIM, common: float = 0.0) -> Any:
    """Random unit vectors; `common` adds a shared direction, as real text embeddings have."""
    m = rng.standard_normal((n, dim)).astype(np.float32)
    if common:
        m += common * np.sqrt(dim) * np.ones(dim, dtype=np.float32) / np.sqrt(dim) * 4
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _filled(matrix: Any, first_seq: int = 1) -> VectorIndex:
    index = VectorIndex("test-model", matrix.shape[1])
    index.add_many(_items(range(first_seq, first_seq + len(matrix)), encode(matrix)))
    return index


def _items(seqs: Iterable[int], blobs: Iterable[bytes], group: int = LATIN) -> list[tuple[int, bytes, int]]:
    return [(seq, blob, group) for seq, blob in zip(seqs, blobs, strict=True)]


def _reference(stored: dict[int, Any], q: Any, limit: int) -> list[tuple[int, float]]:
    seqs = sorted(stored)
    if not seqs:
        return []
    scores = np.stack([stored[s] for s in seqs]) @ q
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(seqs[i], float(scores[i])) for i in order]


def test_encode_decode_round_trip_within_quantisation_error() -> None:
    rng = np.random.default_rng(1)
    m = _unit(rng, 50)
    for row, blob in zip(m, encode(m), strict=True):
        assert len(blob) == DIM + 4
        back = decode(blob, DIM)
        assert np.abs(back - row).max() <= np.abs(row).max() / 127 / 2 + 1e-7
    with pytest.raises(ValueError, match="388 bytes"):
        decode(b"\x00" * 10, DIM)


def test_exact_search_matches_a_float32_reference() -> None:
    rng = np.random.default_rng(2)
    m = _unit(rng, 3_000, common=0.5)
    index = _filled(m)
    stored = {i + 1: decode(b, DIM) for i, b in enumerate(encode(m))}
    for q in _unit(rng, 20, common=0.5):
        got = index.search(q, 10)
        want = _reference(stored, q, 10)
        assert [s for s, _ in got] == [s for s, _ in want]
        assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-5)
        # Against the unquantised vectors the cosines differ by the quantisation error only.
        assert all(abs(c - float(m[s - 1] @ q)) < 0.01 for s, c in got)
        assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)


def test_scores_are_exact_and_skip_unknown_seqs() -> None:
    rng = np.random.default_rng(3)
    m = _unit(rng, 100)
    index = _filled(m)
    q = _unit(rng, 1)[0]
    got = index.scores(q, [5, 17, 9999, 42])
    assert set(got) == {5, 17, 42}
    for s, c in got.items():
        assert c == pytest.approx(float(decode(encode(m[s - 1 : s])[0], DIM) @ q), abs=1e-5)
    assert index.scores(q, []) == {}


def test_empty_index_and_limits() -> None:
    index = VectorIndex("m", DIM)
    q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    assert index.search(q, 10) == []
    assert index.scores(q, [1, 2]) == {}
    assert len(index) == 0
    index.add_many([])
    index.remove([1, 2])
    assert len(index) == 0
    index.add_many(_items([1], encode(q[None, :])))
    assert index.search(q, 0) == []
    assert index.search(q, -3) == []
    [(seq, cosine)] = index.search(q, 5)
    assert seq == 1
    assert cosine == pytest.approx(1.0, abs=0.01)


def test_dimension_mismatch_is_an_error_and_nothing_half_applies() -> None:
    rng = np.random.default_rng(4)
    index = _filled(_unit(rng, 10))
    with pytest.raises(ValueError, match="query vector of 100 dimensions for an index of 384"):
        index.search(np.ones(100, dtype=np.float32), 5)
    with pytest.raises(ValueError, match="query vector of 100"):
        index.scores(np.ones(100, dtype=np.float32), [1])
    good = encode(_unit(rng, 2))
    with pytest.raises(ValueError, match="memory 12 takes 104 bytes, not 388"):
        index.add_many([(11, good[0], LATIN), (12, encode(_unit(rng, 1, dim=100))[0], LATIN), (13, good[1], LATIN)])
    assert len(index) == 10
    assert 11 not in index
    with pytest.raises(ValueError, match="positive dimension"):
        VectorIndex("m", 0)


def test_replace_keeps_one_row_per_seq() -> None:
    rng = np.random.default_rng(5)
    m = _unit(rng, 200)
    index = _filled(m)
    new = _unit(rng, 1)[0]
    index.add_many([(7, encode(new[None, :])[0], LATIN)])
    assert len(index) == 200
    assert index.search(new, 1)[0][0] == 7
    assert index.scores(m[6], [7])[7] < 0.5  # the old vector is gone
    # Two vectors for one seq in one call: the later wins.
    a, b = _unit(rng, 2)
    index.add_many([(500, encode(a[None, :])[0], LATIN), (500, encode(b[None, :])[0], CJK)])
    assert len(index) == 201
    assert index.scores(b, [500])[500] == pytest.approx(1.0, abs=0.01)


def _reference_offsets(stored: dict[int, Any], groups: dict[int, int], q: Any, script: int, prior: float) -> Any:
    """q.mean(own group) - q.mean(other group), leaning to `prior` for groups of few vectors."""
    means = {}
    for g in (LATIN, CJK, MIXED):
        rows = [stored[s] for s in stored if groups[s] == g]
        means[g] = (float(np.mean(np.stack(rows) @ q)), len(rows)) if rows else (0.0, 0)
    out = np.zeros(3)
    own_mean, own_count = means[script]
    for g in (LATIN, CJK, MIXED):
        mean, count = means[g]
        if g == script or not count:
            continue
        weight = min(own_count, count)
        measured = own_mean - mean if own_count else 0.0
        expected = prior * (1.0 if MIXED not in (g, script) else 0.5)
        out[g] = max(expected, (weight * measured + vectors.PRIOR_WEIGHT * expected) / (weight + vectors.PRIOR_WEIGHT))
    return out


@pytest.mark.parametrize("exact_rows", [100_000, 300], ids=["exact", "coarse"])
def test_random_adds_replaces_and_removes_follow_the_reference(
    monkeypatch: pytest.MonkeyPatch, exact_rows: int
) -> None:
    """Hundreds of mixed operations over vectors of both script groups, crossing the exact/coarse
    boundary and the shrink point: plain and cross-script searches, scores and offsets follow a
    float reference throughout."""
    monkeypatch.setattr(vectors, "EXACT_ROWS", exact_rows)
    monkeypatch.setattr(vectors, "CANDIDATES", 400)
    rng = np.random.default_rng(6)
    index = VectorIndex("m", 64)
    stored: dict[int, Any] = {}
    groups: dict[int, int] = {}
    next_seq = 1
    for step in range(300):
        op = rng.random()
        if op < 0.75 or not stored:
            if op < 0.55 or not stored:
                n = int(rng.integers(1, 40))
                seqs = list(range(next_seq, next_seq + n))
                next_seq += n
            else:
                seqs = [int(s) for s in rng.choice(sorted(stored), size=min(5, len(stored)), replace=False)]
            m = _unit(rng, len(seqs), dim=64, common=0.3)
            blobs = encode(m)
            new_groups = [int(g) for g in rng.integers(0, 3, len(seqs))]
            index.add_many(list(zip(seqs, blobs, new_groups, strict=True)))
            stored.update({s: decode(b, 64) for s, b in zip(seqs, blobs, strict=True)})
            groups.update(zip(seqs, new_groups, strict=True))
        else:
            k = int(rng.integers(1, max(2, len(stored) // 3)))
            gone = [int(s) for s in rng.choice(sorted(stored), size=min(k, len(stored)), replace=False)]
            index.remove([*gone, 10**9])  # an unknown seq is ignored
            for s in gone:
                del stored[s], groups[s]
        assert len(index) == len(stored)
        if step % 10 == 0 and stored:
            q = _unit(rng, 1, dim=64, common=0.3)[0]
            got = index.search(q, 10)
            want = _reference(stored, q, 10)
            assert {s for s, _ in got} <= set(stored)
            scores = index.scores(q, list(stored))
            assert set(scores) == set(stored)
            assert all(abs(scores[s] - float(stored[s] @ q)) < 1e-4 for s in stored)
            offsets = _reference_offsets(stored, groups, q, CJK, 0.05)
            assert np.allclose(index.offsets(q, CJK, 0.05), offsets, atol=1e-4)
            across = index.search(q, 10, CJK, 0.05)
            across_scores = index.scores(q, list(stored), CJK, 0.05)
            assert all(abs(across_scores[s] - float(stored[s] @ q) - offsets[groups[s]]) < 1e-4 for s in stored)
            want_across = sorted(stored, key=lambda s: -(float(stored[s] @ q) + offsets[groups[s]]))[:10]
            if exact_rows > len(stored):
                assert [s for s, _ in got] == [s for s, _ in want]
                assert [s for s, _ in across] == want_across
            else:  # the coarse pass may miss a neighbour, not invent one
                assert len({s for s, _ in got} & {s for s, _ in want}) >= 7
                assert all(abs(c - float(stored[s] @ q)) < 1e-4 for s, c in got)
                assert len({s for s, _ in across} & set(want_across)) >= 7
                assert all(abs(c - across_scores[s]) < 1e-4 for s, c in across)


def test_another_script_is_searched_even_when_its_raw_cosines_are_all_lower(monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 vectors of the query's script close to it and 50 of another script far from it on
    the whole, one of which is the query's best match once the script's typical cosine is
    allowed for: it comes first, through the exact search and through the coarse pass (which
    picks candidates in each script, as the other script's raw cosines would all lose)."""
    rng = np.random.default_rng(11)
    q = _unit(rng, 1)[0]
    other = _unit(rng, 1)[0]
    other -= (other @ q) * q
    other /= np.linalg.norm(other)
    own = 0.9 * q + 0.02 * rng.standard_normal((3_000, DIM)).astype(np.float32)
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    far = other + 0.02 * rng.standard_normal((50, DIM)).astype(np.float32)
    far[0] = 0.6 * q + 0.8 * other  # raw cosine 0.6: below every own-script vector (about 0.99)
    far /= np.linalg.norm(far, axis=1, keepdims=True)
    for exact_rows in (100_000, 1_000):
        monkeypatch.setattr(vectors, "EXACT_ROWS", exact_rows)
        monkeypatch.setattr(vectors, "CANDIDATES", 200)
        index = VectorIndex("m", DIM)
        index.add_many(_items(range(3_000), encode(own), CJK))
        index.add_many(_items(range(10_000, 10_050), encode(far), LATIN))
        assert (index._bits is not None) == (exact_rows == 1_000)
        assert index.search(q, 1)[0][0] < 3_000  # no script given: raw cosines
        best, cosine = index.search(q, 1, CJK, 0.05)[0]
        assert best == 10_000
        offset = index.offsets(q, CJK, 0.05)[LATIN]
        assert cosine == pytest.approx(float(decode(encode(far[:1])[0], DIM) @ q) + offset, abs=1e-4)
        assert index.offsets(q, LATIN, 0.05)[CJK] == pytest.approx(
            0.05
        )  # the other way round: the prior, the least offset
    with pytest.raises(ValueError, match="script group 5"):
        index.search(q, 1, 5)
    with pytest.raises(ValueError, match="script group 3, not 0 to 2"):
        index.add_many([(1, encode(q[None, :])[0], 3)])


def test_few_vectors_of_a_script_lean_on_the_prior_offset() -> None:
    """With one vector of the other script its mean is that vector itself, which would erase any
    difference between its memories: the offset stays near the fixed prior until the script holds
    a few dozen memories; with no vector of the query's own script it is the prior, and it is
    never below the prior."""
    rng = np.random.default_rng(12)
    m = _unit(rng, 41, common=0.5)
    q = m[0]
    index = VectorIndex("m", DIM)
    index.add_many(_items([1], encode(m[:1]), LATIN))
    assert index.offsets(q, CJK, 0.05) == pytest.approx([0.05, 0.0, 0.0])  # no CJK vector: the prior
    index.add_many(_items(range(2, 42), encode(m[1:]), CJK))
    stored = {s: decode(b, DIM) for s, b in zip(range(1, 42), encode(m), strict=True)}
    groups = {s: LATIN if s == 1 else CJK for s in stored}
    offsets = index.offsets(q, CJK, 0.05)
    assert offsets == pytest.approx(list(_reference_offsets(stored, groups, q, CJK, 0.05)), abs=1e-5)
    measured = float(np.mean(np.stack([stored[s] for s in range(2, 42)]) @ q) - stored[1] @ q)
    assert offsets[LATIN] == pytest.approx(max(0.05, (measured + 20 * 0.05) / 21), abs=1e-5)
    assert index.search(q, 1)[0][0] == 1 and index.search(q, 1, LATIN)[0][0] == 1


def test_arrays_grow_and_shrink() -> None:
    rng = np.random.default_rng(7)
    index = _filled(_unit(rng, 5_000, dim=32))
    big = index.nbytes
    index.remove(range(1, 4_901))
    assert len(index) == 100
    assert index.nbytes < big / 4
    left = sorted(s for s, _ in index.search(_unit(rng, 1, dim=32)[0], 1000))
    assert left == list(range(4_901, 5_001))


def test_memory_per_vector_is_int8_sized() -> None:
    rng = np.random.default_rng(8)
    index = _filled(_unit(rng, 30_000, common=0.5))
    # int8 codes (384 B) + scale (4) + seq (8) + sign bits (48), over up to 2x capacity from doubling.
    per_vector = index.nbytes / len(index)
    assert per_vector < 2 * (DIM + 4 + 8 + 48) + 200
    assert per_vector < DIM * 4  # well under float32


@pytest.fixture(scope="module")
def real_vectors() -> tuple[Any, Any, list[str], list[str]]:
    """Real multilingual-e5-small vectors of Chinese, English and mixed memories and questions."""
    from mcp_memory_server.config.settings import Semantic
    from mcp_memory_server.embed import load_embedder

    memories = [
        "用户住在上海浦东，离地铁站很近",
        "The user is allergic to peanuts and carries an EpiPen",
        "用户对花生过敏",
        "The user prefers dark mode in every editor",
        "我每天早上跑步五公里",
        "My daughter started violin lessons last month",
        "项目的数据库用的是 PostgreSQL 15",
        "The team meets every Tuesday at 10am for planning",
        "用户喜欢喝乌龙茶，不喜欢咖啡",
        "We adopted a golden retriever named Max",
        "下周三要去北京出差三天",
        "Deploys run through GitHub Actions with a manual approval step",
        "她最喜欢的书是《小王子》",
        "The API uses JWT tokens that expire after one hour",
        "周末经常带孩子去公园放风筝",
        "I switched from vim to VS Code last year, 但是还保留 vim 快捷键",
    ]
    questions = [
        "我住在哪个城市",
        "what am I allergic to",
        "which editor theme do I like",
        "我喝什么茶",
        "我家的狗叫什么名字",
        "我们每周几开计划会",
        "when is my business trip to Beijing",
        "what does my daughter like to read",
    ]
    embedder = load_embedder(Semantic())
    return embedder.embed_passages(memories), embedder.embed_queries(questions), memories, questions


def test_real_chinese_and_english_vectors(real_vectors: tuple[Any, Any, list[str], list[str]]) -> None:
    passages, queries, memories, _ = real_vectors
    index = _filled(passages, first_seq=0)
    top = {q: index.search(queries[q], 2) for q in range(len(queries))}
    assert memories[top[0][0][0]].startswith("用户住在上海")
    # The English question finds both the English and the Chinese allergy memory.
    assert {memories[s] for s, _ in top[1]} == {memories[1], memories[2]}
    assert memories[top[2][0][0]] == "The user prefers dark mode in every editor"
    assert memories[top[3][0][0]].startswith("用户喜欢喝乌龙茶")
    exact = passages @ queries.T
    for q in range(len(queries)):
        for s, c in index.search(queries[q], 5):
            assert c == pytest.approx(float(exact[s, q]), abs=0.01)


def test_real_vectors_through_the_coarse_pass(
    monkeypatch: pytest.MonkeyPatch, real_vectors: tuple[Any, Any, list[str], list[str]]
) -> None:
    """The real memories among 6,000 perturbed copies of them, the coarse pass forced on: the
    nearest real memory still comes first, and the top 10 mostly agree with exact search."""
    monkeypatch.setattr(vectors, "EXACT_ROWS", 1_000)
    monkeypatch.setattr(vectors, "CANDIDATES", 500)
    passages, queries, _, _ = real_vectors
    rng = np.random.default_rng(9)
    noise = rng.standard_normal((6_000, DIM)).astype(np.float32) * 0.03
    copies = passages[rng.integers(0, len(passages), 6_000)] + noise
    copies /= np.linalg.norm(copies, axis=1, keepdims=True)
    index = _filled(copies, first_seq=1_000)
    index.add_many(_items(range(len(passages)), encode(passages)))
    assert index._bits is not None  # the coarse pass is on
    every = np.concatenate([passages, copies])
    seqs = np.array([*range(len(passages)), *range(1_000, 1_000 + len(copies))])
    agree = []
    for q in queries:
        got = {s for s, _ in index.search(q, 10)}
        agree.append(len(got & set(seqs[np.argsort(-(every @ q))[:10]].tolist())) / 10)
    assert np.mean(agree) >= 0.8, agree
    best = index.search(queries[0], 1)[0][0]
    assert best == 0 or (best >= 1_000 and float(copies[best - 1_000] @ passages[0]) > 0.9)


def test_real_questions_find_memories_written_in_the_other_script(
    real_vectors: tuple[Any, Any, list[str], list[str]],
) -> None:
    """Chinese questions about English memories and English questions about Chinese ones, each
    memory in its script group: the right memory comes first once other scripts' cosines are
    offset, where by raw cosine a memory in the question's own script often wins."""
    passages, queries, memories, questions = real_vectors
    index = VectorIndex("m", DIM)
    index.add_many(
        (i, blob, script_of(text)) for i, (blob, text) in enumerate(zip(encode(passages), memories, strict=True))
    )
    assert script_of(memories[-1]) == MIXED  # English with a Chinese clause: near both scripts
    wanted = {
        "我家的狗叫什么名字": "We adopted a golden retriever named Max",
        "when is my business trip to Beijing": "下周三要去北京出差三天",
        "what does my daughter like to read": "她最喜欢的书是《小王子》",
    }
    for question, memory in wanted.items():
        q = queries[questions.index(question)]
        [(best, _)] = index.search(q, 1, script_of(question), 0.05)
        assert memories[best] == memory, (question, memories[best])
    # Eight memories of each script say little about the typical cosine, so the offset stays near
    # the prior: enough to lift this memory from below every Chinese one into the top 5.
    q = queries[questions.index("我们每周几开计划会")]
    meeting = memories.index("The team meets every Tuesday at 10am for planning")
    assert meeting not in [s for s, _ in index.search(q, 5)]
    assert meeting in [s for s, _ in index.search(q, 5, CJK, 0.05)]
