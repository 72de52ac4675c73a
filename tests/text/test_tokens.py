"""Pure text functions and the segmenter, in Chinese, English and mixed text."""

from __future__ import annotations

import sqlite3

import pytest

from mcp_memory_server.text import Segmenter
from mcp_memory_server.text.tokens import (
    fingerprint,
    fts_query,
    index_text,
    keywords,
    like_pattern,
    normalize,
    similarity,
)


def test_keywords_follow_spec_rules() -> None:
    tokens = ["我", "喜欢", "用", "Python", "写", "代码", "的", "42", "2024", "Python", "the", "a", "，"]
    assert keywords(tokens) == ["喜欢", "python", "代码", "2024"]


def test_keywords_are_capped() -> None:
    assert len(keywords([f"word{i}" for i in range(30)], limit=10)) == 10


def test_chinese_query_keywords(segmenter: Segmenter) -> None:
    assert keywords(segmenter.cut("我喝什么咖啡")) == ["咖啡"]
    assert keywords(segmenter.cut("我喜欢用Python写代码")) == ["喜欢", "python", "代码"]
    assert keywords(segmenter.cut("What do I usually drink in the morning?")) == ["usually", "drink", "morning"]


def test_index_terms_are_cjk_bigrams_and_stemmed_words() -> None:
    terms = index_text("我在用雾凇拼音输入法").split()
    assert "雾凇" in terms and "拼音" in terms and "凇拼" in terms
    assert index_text("我喜欢用Python写代码").split() == [
        "我喜",
        "喜欢",
        "欢用",
        "我",
        "喜",
        "欢",
        "用",
        "python",
        "写代",
        "代码",
        "写",
        "代",
        "码",
    ]
    assert index_text("She was painting sunrises, running daily") == "she was paint sunris run daili"
    assert index_text("ＡＢＣ-1234 猫") == "abc 1234 猫"


def test_normalize_folds_full_width_and_control_characters() -> None:
    assert normalize("ＡＢＣ１２３\x00x") == "ABC123 x"


@pytest.mark.parametrize(
    "hostile",
    ['"', "*", "AND", "OR NOT", "NEAR(", "^", ":", "(", ")", "col:x", '"unterminated', "a\x00b", "😀", "-x", "+"],
)
def test_fts_query_never_raises(hostile: str) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES ('and or not near python')")
    query = fts_query([hostile, hostile.lower(), "python"])
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (query,)).fetchone()[0] == 1


def test_prefix_terms() -> None:
    assert fts_query(["pyth"]) == '"pyth"*'
    assert fts_query(["咖啡"]) == '"咖啡"'
    assert fts_query(["雾凇拼音"]) == '"雾凇 凇拼 拼音"'  # the phrase of its bigrams
    assert fts_query(["go"]) == '"go"'  # two Latin letters: too short to prefix
    assert fts_query(["c++"]) == '"c"'
    assert fts_query(["paintings", "😀"]) == '"paint"*'


def test_like_pattern_escapes_wildcards() -> None:
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"


def test_similarity_ignores_spacing_and_punctuation_but_not_negation() -> None:
    assert similarity("I prefer VS Code.", "i prefer vscode") == 1.0
    assert similarity("我喜欢喝拿铁", "我不喜欢喝拿铁") < 0.85
    assert similarity("", "") == 1.0
    assert fingerprint("我每天早上喝一杯拿铁咖啡") == fingerprint("我每天早上喝一杯拿铁咖啡。")


def test_segmenter_cache_round_trip(tmp_path: object, cache_dir: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    first = Segmenter(tmp_path)
    first.wait_sync()
    assert list(tmp_path.glob("jieba-*.dict")), "the chunked dictionary cache was written"
    second = Segmenter(tmp_path)  # now loads from the cache
    second.wait_sync()
    assert second.cut("我在用雾凇拼音输入法") == first.cut("我在用雾凇拼音输入法")


def test_segmenter_ignores_a_corrupt_cache(tmp_path: object, cache_dir: object, segmenter: Segmenter) -> None:
    import shutil
    from pathlib import Path

    assert isinstance(tmp_path, Path) and isinstance(cache_dir, Path)
    # The session's cache (built by the `segmenter` fixture), copied, then overwritten: a real
    # cache file made corrupt, without building one more for it.
    caches = list(cache_dir.glob("jieba-*.dict"))
    assert caches, "the session's segmenter wrote its cache"
    for cache in caches:
        shutil.copy(cache, tmp_path / cache.name)
    for path in tmp_path.glob("jieba-*.dict"):
        path.write_bytes(b"not a cache")
    again = Segmenter(tmp_path)
    again.wait_sync()
    assert "拼音" in again.cut("雾凇拼音")


def test_chinese_characters_are_weaker_queries() -> None:
    from mcp_memory_server.text.tokens import char_queries, keyword_query

    assert keyword_query("雾凇拼音") is not None
    assert keyword_query("雾凇拼音").terms == ("雾凇", "凇拼", "拼音")  # type: ignore[union-attr]
    chars = char_queries(["困了", "我的猫", "python"], 0.5)
    assert [q.terms[0] for q in chars] == ["困", "猫"]  # 了, 我, 的 are function characters
    assert all(q.weight == 0.5 for q in chars)
    assert char_queries(["困了"], 0) == []
    # Raw tokens: one-character content words count, stopwords (一般, 哪儿) do not.
    tokens = ["我", "现在", "一般", "住", "哪儿", "喝", "啥"]
    assert [q.terms[0] for q in char_queries(tokens, 0.5)] == ["住", "喝"]


def test_unknown_chinese_words_are_joined_back(segmenter: Segmenter) -> None:
    assert segmenter.cut("拿铁") == ["拿", "铁"]  # jieba does not know the word
    assert keywords(segmenter.cut("拿铁")) == ["拿铁"]
    assert keywords(segmenter.cut("我喝什么咖啡")) == ["咖啡"]  # function words are not joined
    assert fts_query(["拿铁"]) == '"拿铁"'


def test_numbers_keep_facts_apart() -> None:
    assert similarity("我的手机尾号是1234", "我的手机尾号是5678") < 0.5
    assert similarity("memory 1", "memory 11") < 0.85
