"""The compact jieba dictionary finds what jieba's own finds, so segmentation is unchanged."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from mcp_memory_server.text.segmenter import Dictionary, Segmenter

# One worker runs this module (pytest-xdist): jieba's own dictionary is built once.
pytestmark = pytest.mark.xdist_group("segmenter")

SENTENCES = [
    "我在用雾凇拼音输入法",
    "What do I usually drink in the morning? 我早上一般喝拿铁咖啡。",
    "我喜欢用Python写代码，也用C++和C#，还有.NET",
    "上周五和老王去了中关村的北京大学生物技术研究所参观",
    "手机尾号1234，生日1990年5月20日，邮箱 someone@example.com",
    "ＡＢＣ全角字母和ｆｕｌｌ　ｗｉｄｔｈ",
    "𠀀中文𠀀测试𡃁",  # characters beyond 16 bits
    "中\x00国人民",
    "中\ud800国",
    "",
    "a",
    "长长长长长长长长长长长长长长长长长长长长长长长长长长长长长长长长",
    "中华人民共和国中央人民政府门户网站上的国务院关于印发的通知",
]


@pytest.fixture(scope="module")
def plain() -> Any:
    """jieba's own tokenizer with its own dict of every word and prefix."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    tokenizer.initialized = True
    return tokenizer


def test_the_compact_dictionary_holds_every_entry(plain: Any) -> None:
    with plain.get_dict_file() as handle:
        dictionary = Dictionary.parse(handle.read())
    assert dictionary.total == plain.total
    assert all(dictionary.get(word) == count for word, count in plain.FREQ.items())
    assert len(dictionary.single) + len(dictionary.rest) + sum(
        len(t[0]) - t[0].tolist().count(0) for t in dictionary.tables.values()
    ) == len(plain.FREQ)
    for absent in ("", "咖啡咖啡", "qqqqzzzz", "𠀀𠀀", "\x00\x00", "xyz\ud800", "中华人民共和国中华"):
        assert absent not in dictionary and dictionary.get(absent, -1) == -1
    assert dictionary["中国"] == plain.FREQ["中国"]
    with pytest.raises(KeyError):
        dictionary["咖啡咖啡"]


def test_segmentation_is_jiebas(plain: Any, segmenter: Segmenter) -> None:
    for sentence in SENTENCES:
        assert segmenter.cut(sentence) == list(plain.cut(sentence, HMM=True)), sentence


def test_a_truncated_cache_is_rebuilt(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> None:
    (whole,) = cache_dir.glob("jieba-*.dict")
    cache = tmp_path / whole.name
    cache.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    again = Segmenter(tmp_path)
    again.wait_sync()
    assert again.cut("我在用雾凇拼音输入法") == segmenter.cut("我在用雾凇拼音输入法")
    assert cache.read_bytes() == whole.read_bytes()  # written again


def test_the_dictionary_keeps_jiebas_rules() -> None:
    """A later line overrides a word's frequency; a prefix is 0 unless it is a word itself."""
    lines = ["中华人民共和国 10 ns", "中华 5 nz", "中华 7 nz", "𠀀𠀁𠀂 3 n", "ab\x00c 2 x", "长长长长长长 4 a", "x 1 n"]
    dictionary = Dictionary.parse("\n".join(lines).encode())
    assert dictionary.total == 10 + 5 + 7 + 3 + 2 + 4 + 1
    expected = {
        "中": 0,
        "中华": 7,
        "中华人": 0,
        "中华人民": 0,
        "中华人民共": 0,
        "中华人民共和国": 10,
        "𠀀": 0,
        "𠀀𠀁": 0,
    }
    expected |= {"𠀀𠀁𠀂": 3, "a": 0, "ab": 0, "ab\x00": 0, "ab\x00c": 2, "长长长长长": 0, "长长长长长长": 4, "x": 1}
    assert {word: dictionary.get(word) for word in expected} == expected
    assert dictionary.get("华") is None and dictionary.get("中华人民共和国人") is None
    with pytest.raises(ValueError):
        Dictionary.parse(b"word")
