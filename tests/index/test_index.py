"""The BM25 index's storage: vocabulary, forward index, postings, and the index over them."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from mcp_memory_server.index import Bm25Index, KeywordQuery, postings
from mcp_memory_server.index.postings import Forward
from mcp_memory_server.index.vocabulary import Vocabulary

# Terms of every kind the vocabulary stores differently: ASCII up to 8 characters, longer ASCII,
# 1-2 other characters (Chinese), longer non-ASCII words, NUL, characters beyond 16 bits and a
# lone surrogate.
TERMS = [
    *["a", "ab", "abc", "abcdefgh", "abcdefghi", "abd", "b", "py", "pyth", "python", "pythonic", "zz", "0", "12345"],
    *["\x7f", "\x7fa", "a\x00", "\x00", "a\x00b", "ÿ", "ÿÿ", "ü", "üb", "über", "café", "naïve", "ab\x80"],
    *["咖", "啡", "咖啡", "拿铁", "铁", "我们", "𠀀", "𠀀a", "a𠀀", "\ud800", "x\ud800", "programming", "programmer"],
]
WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000"


def _random_text(rng: random.Random, words: int = 12) -> str:
    return "".join(rng.choice(TERMS) + rng.choice(WHITESPACE) for _ in range(rng.randint(0, words)))


def test_whitespace_is_what_str_split_splits_on() -> None:
    spaces = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    assert set(spaces) == set(WHITESPACE) | {chr(c) for c in range(0x2001, 0x200A)}
    vocabulary = Vocabulary()
    batch = vocabulary.analyse([f"a{spaces}b{spaces}", spaces, ""])
    assert batch.lengths.tolist() == [2, 0, 0]
    assert batch.distinct.tolist() == [2, 0, 0]


def test_terms_get_ids_in_order_of_first_appearance() -> None:
    rng = random.Random(1)
    vocabulary = Vocabulary()
    expected: dict[str, int] = {}
    for _ in range(30):
        texts = [_random_text(rng) for _ in range(rng.randint(1, 8))]
        batch = vocabulary.analyse(texts)
        for term in (t for text in texts for t in text.split()):
            expected.setdefault(term, len(expected))
        # Per text, its distinct term ids (ascending) and how often each occurs.
        offset = 0
        for text, distinct in zip(texts, batch.distinct.tolist(), strict=True):
            counts: dict[int, int] = {}
            for term in text.split():
                counts[expected[term]] = counts.get(expected[term], 0) + 1
            tids = batch.tids[offset : offset + distinct].tolist()
            assert tids == sorted(counts)
            assert batch.tfs[offset : offset + distinct].tolist() == [min(counts[t], 255) for t in tids]
            offset += distinct
        assert batch.lengths.tolist() == [len(text.split()) for text in texts]
    assert len(vocabulary) == len(expected)
    assert all(vocabulary.get(term) == tid for term, tid in expected.items())
    assert vocabulary.get("absent") is None and vocabulary.get("缺") is None and vocabulary.get("absent-term") is None


def test_term_frequencies_are_capped_at_255() -> None:
    batch = Vocabulary().analyse([" ".join(["tea"] * 300 + ["茶"] * 2)])
    assert batch.tfs.tolist() == [255, 2] and batch.lengths.tolist() == [302]


PREFIXES = ["", "a", "ab", "abc", "abcdefgh", "abcdefghi", "p", "py", "pyth", "ü", "咖", "咖啡", "x", "\x00", "a\x00"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_prefixes_match_terms_in_sorted_order(prefix: str) -> None:
    vocabulary = Vocabulary()
    vocabulary.analyse([" ".join(TERMS)])
    ordered = sorted(TERMS)
    for limit in (1, 3, 64):
        expected = [t for t in ordered if t.startswith(prefix)][:limit]
        assert vocabulary.prefixed(prefix, limit) == [vocabulary.get(t) for t in expected]


def test_forward_index_round_trips_large_gaps_and_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Forward, "_OPEN_LIMIT", 50)
    rng = np.random.default_rng(2)
    forward = Forward()
    docs: list[list[int]] = []
    for _ in range(40):
        sizes = rng.integers(0, 30, size=rng.integers(1, 5))
        batch = [sorted(set(rng.integers(0, 100_000, size=n).tolist())) for n in sizes]
        docs.extend(batch)
        tids = np.array([t for doc in batch for t in doc], dtype=np.int32)
        forward.append(np.array([len(d) for d in batch]), tids, np.ones(len(tids), dtype=np.uint8))
        assert forward.get(len(docs) - 1).tolist() == docs[-1]
    assert [forward.get(n).tolist() for n in range(len(docs))] == docs
    drained = list(forward.drain())
    assert np.concatenate([tids for _, tids, _ in drained]).tolist() == [t for doc in docs for t in doc]
    assert np.concatenate([d for d, _, _ in drained]).tolist() == [n for n, doc in enumerate(docs) for _ in doc]
    assert [forward.get(n).tolist() for n in range(len(docs))] == docs  # term ids stay after the drain


def _search_all(index: Bm25Index, rng: random.Random) -> list[list[tuple[int, float]]]:
    results = []
    for _ in range(40):
        queries = [
            KeywordQuery((rng.choice(TERMS),), prefix=rng.random() < 0.3, weight=rng.choice([1.0, 0.5]))
            for _ in range(rng.randint(1, 4))
        ]
        if rng.random() < 0.3:
            queries.append(KeywordQuery((rng.choice(TERMS), rng.choice(TERMS))))
        results.append(index.search(queries, 10))
    return results


@pytest.mark.parametrize("block_bits", [16, 2])
def test_bulk_and_incremental_indexes_rank_alike(monkeypatch: pytest.MonkeyPatch, block_bits: int) -> None:
    """Documents in the compact postings (in blocks of 2**block_bits) and in the small arrays for
    later additions score the same; replacements and removals too."""
    monkeypatch.setattr(postings, "_BLOCK_BITS", block_bits)
    rng = random.Random(block_bits)
    docs = [(seq, _random_text(rng, 30)) for seq in range(1, 200)]
    bulk, incremental = Bm25Index(), Bm25Index()
    bulk.add_many(docs)
    bulk.freeze()
    incremental.add(0, "seed")
    incremental.freeze()
    for seq, text in docs:
        incremental.add(seq, text)
    incremental.remove(0)
    for index in (bulk, incremental):
        for seq in (5, 50, 150):
            index.remove(seq)
        index.add_many([(7, "python 咖啡 über"), (300, "python programming"), (8, "")])
    assert len(bulk) == len(incremental) == 197 and bulk.dead == 5 and incremental.dead == 6
    state = rng.getstate()
    ranked = _search_all(bulk, rng)
    rng.setstate(state)
    assert _search_all(incremental, rng) == ranked
    assert any(ranked)


def test_bm25_scores_by_hand() -> None:
    index = Bm25Index(k1=0.9, b=0.4)
    index.add_many([(10, "tea tea green"), (11, "coffee"), (12, "tea black coffee milk")])
    ranked = index.search([KeywordQuery(("tea",))], 10, feedback_docs=0, coordination=0)
    average = 8 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def score(tf: int, length: int) -> float:
        return idf * tf * 1.9 / (tf + 0.9 * (1 - 0.4 + 0.4 * length / average))

    assert [seq for seq, _ in ranked] == [10, 12]
    assert [s for _, s in ranked] == pytest.approx([score(2, 3), score(1, 4)], rel=1e-6)


def test_chinese_text_gets_its_own_length_normalisation() -> None:
    # A short memory with 睡 once against a long chat turn with 睡 twice among many characters.
    short = "用户 户每 每晚 晚十 一点 点睡 用 户 每 晚 十 一 点 睡"
    long = " ".join("最近感觉压力有点大睡眠也不太好我平时经常锻炼身体多吃水果但是最近忙于工作可能睡得太少")
    english = ["sleep at eleven", "lately work has been stressful and i sleep badly so i sleep late every day"]

    def ranked(b_cjk: float, texts: list[str], term: str) -> list[int]:
        index = Bm25Index(k1=0.9, b=0.4, b_cjk=b_cjk)
        index.add_many(list(enumerate(texts, 1)))
        index.add_many([(9, "filler text"), (10, "短 句")])
        return [seq for seq, _ in index.search([KeywordQuery((term,))], 10, feedback_docs=0)]

    assert ranked(0.4, [short, long], "睡") == [2, 1]  # English's b lets the long text win
    assert ranked(0.9, [short, long], "睡") == [1, 2]
    # English text keeps b whatever b_cjk is.
    assert ranked(0.4, english, "sleep") == ranked(0.9, english, "sleep") == ranked(1.0, english, "sleep")


def test_documents_are_found_by_seq_in_any_order() -> None:
    index = Bm25Index()
    index.add_many([(seq, "tea") for seq in (3, 5, 9)])  # rising: found by bisection
    index.add_many([(4, "tea"), (1, "tea"), (5, "coffee")])  # out of order, and 5 replaced
    assert len(index) == 5 and index.dead == 1
    assert sorted(seq for seq, _ in index.search([KeywordQuery(("tea",))], 10)) == [1, 3, 4, 9]
    for seq in (3, 5, 1, 42):
        index.remove(seq)
    assert len(index) == 2 and index.dead == 4
    assert sorted(seq for seq, _ in index.search([KeywordQuery(("tea",))], 10)) == [4, 9]


def test_many_additions_after_the_build_ask_for_a_rebuild() -> None:
    index = Bm25Index()
    index.add_many([(seq, "tea") for seq in range(4000)])
    index.freeze()
    index.add_many([(seq, "coffee") for seq in range(4000, 5001)])
    assert not index.needs_compaction() and index.needs_compaction(incoming=500)
    index.add_many([(seq, "coffee") for seq in range(5001, 6500)])
    assert index.needs_compaction()
    assert len(index.search([KeywordQuery(("coffee",))], 5000)) == 2500
    index.clear()
    assert len(index) == 0 and index.search([KeywordQuery(("coffee",))], 10) == []
