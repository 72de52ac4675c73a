"""Dictionary-free tokens (text/provisional.py): what a recall uses while jieba loads, and what
every write's near-duplicate search uses, so that a write decides the same before and after."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.memory.service import MemoryService
from mcp_memory_server.store.store import Store
from mcp_memory_server.text import Segmenter
from mcp_memory_server.text import segmenter as segmenter_module
from mcp_memory_server.text.provisional import near_duplicate_query, provisional_tokens
from mcp_memory_server.text.segmenter import Dictionary
from mcp_memory_server.text.tokens import index_terms

pytestmark = pytest.mark.anyio


def test_chinese_runs_become_the_bigrams_the_index_stores() -> None:
    assert provisional_tokens("我对花生过敏，吃了会起疹子") == [
        "对花",
        "花生",
        "生过",
        "过敏",
        "吃了",
        "会起",
        "起疹",
        "疹子",
    ]
    # Two function characters (我对) and stopwords (什么) are no query terms.
    assert provisional_tokens("我对什么过敏") == ["对什", "过敏"]
    # Every bigram is an index term of the text: a provisional query finds what is there.
    text = "我每天早上喝一杯拿铁咖啡"
    assert set(provisional_tokens(text)) <= set(index_terms(text))


def test_other_words_single_characters_and_mixed_text() -> None:
    assert provisional_tokens("What am I allergic to? 我用VSCode写Python") == [
        "What",
        "am",
        "I",
        "allergic",
        "to",
        "VSCode",
        "写",
        "Python",
    ]
    assert provisional_tokens("猫") == ["猫"]
    assert provisional_tokens("ＡＢＣ全角") == ["ABC", "全角"]  # NFKC first, as the index does
    assert provisional_tokens("") == [] and provisional_tokens("，。!?") == []


def test_the_near_duplicate_query_is_bounded_and_spread_over_the_text() -> None:
    assert near_duplicate_query("我对花生过敏") == '"对花" OR "花生" OR "生过" OR "过敏"'
    assert near_duplicate_query("I am allergic to peanuts") == '"allerg"* OR "peanut"*'
    long_text = " ".join(f"word{i:04d}" for i in range(1000))
    query = near_duplicate_query(long_text, limit=8)
    assert query.count(" OR ") == 7
    assert '"word0000"*' in query and '"word0875"*' in query  # from the start to the end
    assert near_duplicate_query("的了吗") == "" and near_duplicate_query("") == ""


class _Unloaded(Segmenter):
    """A real segmenter whose dictionary does not load while the test runs."""

    def __init__(self) -> None:
        super().__init__(None)
        self.gate = threading.Event()

    def _load(self) -> None:
        self.gate.wait(60)
        super()._load()


# Writes in order, with what each must do: exact and near-duplicates (punctuation, one word
# changed, a character dropped) merge; negations, other numbers and other categories do not.
_WRITES: list[tuple[str, str, str | None]] = [
    ("用户每天早上七点起床，先跑步三十分钟，然后喝一杯不加糖的拿铁咖啡再去上班", "preference", "created"),
    ("用户每天早上七点起床，先跑步三十分钟，然后喝一杯不加糖的拿铁咖啡再去上班。", "preference", "unchanged"),
    ("用户每天早上七点起床，先跑步三十分钟，然后喝一杯不加糖的拿铁咖啡，再去上班", "preference", "unchanged"),
    ("用户每天早上七点起床，先跑步三十分钟，然后都喝一杯不加糖的拿铁咖啡再去上班", "preference", "merged"),
    ("用户每天早上七点起床，先跑步三十分钟，然后喝一杯不加糖的拿铁咖啡再去上班", "fact", "created"),
    ("我喜欢喝拿铁", "preference", "created"),
    ("我不喜欢喝拿铁", "preference", "created"),
    ("用户对花生过敏，吃了会起疹子", "health", "created"),
    ("用户对花生过敏，吃了就会起疹子", "health", None),
    ("银行卡尾号1234，开户行是招商银行上海分行", "fact", "created"),
    ("银行卡尾号5678，开户行是招商银行上海分行", "fact", "created"),
    (
        "The user's home lab runs Proxmox on three Intel NUCs with 64 GB of RAM each and backs up nightly.",
        "fact",
        "created",
    ),
    (
        "The user's home lab runs Proxmox on three Intel NUCs with 64 GB of RAM each and backs up every night.",
        "fact",
        "merged",
    ),
    ("I type Chinese with 雾凇拼音 on Rime, on macOS", "skill", "created"),
    ("I type Chinese with 雾凇拼音 on Rime on macOS!", "skill", "unchanged"),
    ("I type Chinese with 雾凇拼音 on Rime, on my Mac", "skill", None),  # whichever: the same in both
]


@pytest.fixture
async def unloaded_store(tmp_path: Path) -> AsyncIterator[tuple[Store, _Unloaded]]:
    segmenter = _Unloaded()
    config = Config.from_env({}, db_path=tmp_path / "unloaded.db", cache_dir=tmp_path / "cache")
    async with Store(config, segmenter) as store:
        yield store, segmenter
    segmenter.gate.set()


async def test_writes_decide_the_same_whether_jieba_has_loaded_or_not(
    service: MemoryService, segmenter: Segmenter, unloaded_store: tuple[Store, _Unloaded]
) -> None:
    store, unloaded = unloaded_store
    early = MemoryService(store)
    assert segmenter.state == "ready"
    for content, category, expected in _WRITES:
        loaded_result = await service.remember(content=content, category=category)
        early_result = await early.remember(content=content, category=category)
        assert unloaded.state == "loading", "the second store's writes ran without the dictionary"
        seen = (loaded_result.action, loaded_result.id, loaded_result.memory.content)
        assert seen == (early_result.action, early_result.id, early_result.memory.content), content
        if expected is not None:
            assert loaded_result.action == expected, content
    assert (await service.stats()).total == (await early.stats()).total == 10


def test_jieba_loads_without_pkg_resources(tmp_path: Path) -> None:
    """jieba's import skips pkg_resources (the bulk of its import time, holding the interpreter
    lock at start-up) and still finds its own files: the dictionary is built from its file and
    the HMM of its package segments unknown words."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from mcp_memory_server.text import Segmenter\n"
        f"segmenter = Segmenter(Path({str(tmp_path)!r}))\n"
        "segmenter.wait_sync()\n"
        "print(segmenter.state, 'pkg_resources' in sys.modules, '/'.join(segmenter.cut('我对花生过敏，喝拿铁')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["ready", "False", "我/对/花生/过敏/，/喝拿铁"]  # 喝拿铁: the HMM joined 喝/拿/铁
    assert any(tmp_path.glob("jieba-*.dict"))


async def test_a_query_waits_for_a_cached_dictionary_but_not_for_one_built_from_scratch(
    tmp_path: Path, cache_dir: Path, segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cache the dictionary is ready within a query's short wait; built from jieba's file
    it takes seconds, so a query answers from bigrams at once."""
    cached = Segmenter(cache_dir)  # the `segmenter` fixture wrote the cache
    with anyio.fail_after(60):
        assert await cached.wait_at_most(60) == "ready"

    gate = threading.Event()
    build = segmenter_module._build_in_child

    def held(path: Path) -> bool:
        gate.wait(60)
        return build(path)

    monkeypatch.setattr(segmenter_module, "_build_in_child", held)
    fresh = Segmenter(tmp_path / "empty-cache")
    try:
        with anyio.fail_after(60):  # a hang, not a timing: the wait asked for is ten minutes
            assert await fresh.wait_at_most(600) == "loading"
    finally:
        gate.set()
    await fresh.wait()
    assert fresh.state == "ready" and fresh.cut("花生过敏") == ["花生", "过敏"]


def test_the_dictionary_is_built_in_a_child_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second of pure Python would hold the interpreter lock the server's requests need: with a
    cache folder, a child process builds the cache and the server only reads it."""

    def not_here(data: bytes) -> Dictionary:
        raise AssertionError("the dictionary was parsed in the server's process")

    monkeypatch.setattr(Dictionary, "parse", staticmethod(not_here))
    built = Segmenter(tmp_path)
    built.wait_sync()
    assert built.state == "ready" and built.cut("我对花生过敏") == ["我", "对", "花生", "过敏"]
    names = [p.name for p in tmp_path.iterdir()]  # the cache, and no temporary file left behind
    assert len(names) == 1 and names[0].startswith("jieba-") and names[0].endswith(".dict"), names


def test_without_a_child_process_the_dictionary_is_built_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the child exits at once, unsuccessfully
    built = Segmenter(tmp_path)
    built.wait_sync()
    assert built.state == "ready" and built.cut("我对花生过敏") == ["我", "对", "花生", "过敏"]
    assert "building it here" in caplog.text
    assert any(tmp_path.glob("jieba-*.dict"))
