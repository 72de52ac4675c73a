"""The quantised vector index against a float32 brute-force reference: exact below EXACT_ROWS, a
coarse pass plus exact rescoring above it, rows kept dense through replace and remove."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mcp_memory_server.index import vectors
from mcp_memory_server.index.vectors import VectorIndex, decode, encode

DIM = 384


def _unit(rng: np.random.Generator, n: int, dim: int = DIM, common: float = 0.0) -> Any:
    """Random unit vectors; `common` adds a shared direction, as real text embeddings have."""
    m = rng.standard_normal((n, dim)).astype(np.float32)
    if common:
        m += common * np.sqrt(dim) * np.ones(dim, dtype=np.float32) / np.sqrt(dim) * 4
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _filled(matrix: Any, first_seq: int = 1) -> VectorIndex:
    index = VectorIndex("test-model", matrix.shape[1])
    index.add_many(zip(range(first_seq, first_seq + len(matrix)), encode(matrix), strict=True))
    return index


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
    index.add_many(zip([1], encode(q[None, :]), strict=True))
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
        index.add_many([(11, good[0]), (12, encode(_unit(rng, 1, dim=100))[0]), (13, good[1])])
    assert len(index) == 10
    assert 11 not in index
    with pytest.raises(ValueError, match="positive dimension"):
        VectorIndex("m", 0)


def test_replace_keeps_one_row_per_seq() -> None:
    rng = np.random.default_rng(5)
    m = _unit(rng, 200)
    index = _filled(m)
    new = _unit(rng, 1)[0]
    index.add_many([(7, encode(new[None, :])[0])])
    assert len(index) == 200
    assert index.search(new, 1)[0][0] == 7
    assert index.scores(m[6], [7])[7] < 0.5  # the old vector is gone
    # Two vectors for one seq in one call: the later wins.
    a, b = _unit(rng, 2)
    index.add_many([(500, encode(a[None, :])[0]), (500, encode(b[None, :])[0])])
    assert len(index) == 201
    assert index.scores(b, [500])[500] == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("exact_rows", [100_000, 300], ids=["exact", "coarse"])
def test_random_adds_replaces_and_removes_follow_the_reference(
    monkeypatch: pytest.MonkeyPatch, exact_rows: int
) -> None:
    """Hundreds of mixed operations, crossing the exact/coarse boundary and the shrink point."""
    monkeypatch.setattr(vectors, "EXACT_ROWS", exact_rows)
    monkeypatch.setattr(vectors, "CANDIDATES", 400)
    rng = np.random.default_rng(6)
    index = VectorIndex("m", 64)
    stored: dict[int, Any] = {}
    next_seq = 1
    for step in range(300):
        op = rng.random()
        if op < 0.55 or not stored:
            n = int(rng.integers(1, 40))
            m = _unit(rng, n, dim=64, common=0.3)
            seqs = list(range(next_seq, next_seq + n))
            next_seq += n
            blobs = encode(m)
            index.add_many(zip(seqs, blobs, strict=True))
            stored.update({s: decode(b, 64) for s, b in zip(seqs, blobs, strict=True)})
        elif op < 0.75:
            seqs = [int(s) for s in rng.choice(sorted(stored), size=min(5, len(stored)), replace=False)]
            m = _unit(rng, len(seqs), dim=64, common=0.3)
            blobs = encode(m)
            index.add_many(zip(seqs, blobs, strict=True))
            stored.update({s: decode(b, 64) for s, b in zip(seqs, blobs, strict=True)})
        else:
            k = int(rng.integers(1, max(2, len(stored) // 3)))
            gone = [int(s) for s in rng.choice(sorted(stored), size=min(k, len(stored)), replace=False)]
            index.remove([*gone, 10**9])  # an unknown seq is ignored
            for s in gone:
                del stored[s]
        assert len(index) == len(stored)
        if step % 10 == 0 and stored:
            q = _unit(rng, 1, dim=64, common=0.3)[0]
            got = index.search(q, 10)
            want = _reference(stored, q, 10)
            assert {s for s, _ in got} <= set(stored)
            scores = index.scores(q, list(stored))
            assert set(scores) == set(stored)
            assert all(abs(scores[s] - float(stored[s] @ q)) < 1e-4 for s in stored)
            if exact_rows > len(stored):
                assert [s for s, _ in got] == [s for s, _ in want]
            else:  # the coarse pass may miss a neighbour, not invent one
                assert len({s for s, _ in got} & {s for s, _ in want}) >= 7
                assert all(abs(c - float(stored[s] @ q)) < 1e-4 for s, c in got)


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
    questions = ["我住在哪个城市", "what am I allergic to", "which editor theme do I like", "我喝什么茶"]
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
    index.add_many(zip(range(len(passages)), encode(passages), strict=True))
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
