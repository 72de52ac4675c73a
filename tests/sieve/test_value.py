"""Value evaluation: the formula on given dimensions, each dimension's behaviour, and
the calibration bands on realistic Chinese, English and mixed candidates."""

from __future__ import annotations

import pytest

from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.sieve.value import (
    FORCED_BONUS,
    RELATED_DISCOUNT,
    RELATED_SIMILARITY,
    STORE_THRESHOLD,
    WEIGHT_SUM,
    WEIGHTS,
    WORKING_THRESHOLD,
    Nearby,
    ValueScore,
    decide,
    evaluate,
)

Candidate = tuple[str, str, float, str]  # content, category, importance, source

# Clear statements by the user about themselves: store (>= 7).
STORE: list[Candidate] = [
    ("我喜欢喝美式咖啡，不加糖", "preference", 0.7, "user"),
    ("我是一名后端工程师，在字节跳动工作", "identity", 0.8, "user"),
    ("我不吃香菜", "preference", 0.7, "user"),
    ("我住在杭州西湖区", "identity", 0.8, "user"),
    ("用户偏好简单方案，拒绝了Cloudflare Workers，认为太复杂", "preference", 0.7, "both"),
    ("我们决定用PostgreSQL替换MySQL", "decision", 0.7, "user"),
    ("提醒我周五下午3点前提交季度报告", "todo", 0.6, "user"),
    ("我女儿今年7岁，对芒果过敏", "relationship", 0.7, "user"),
    ("用户在管理Oracle Cloud ARM VPS，主要跑Docker服务", "project_state", 0.6, "user"),
    ("I prefer tabs over spaces in every project", "preference", 0.7, "user"),
    ("My name is Alice and I'm a data scientist in Berlin", "identity", 0.9, "user"),
    ("I'm allergic to peanuts", "preference", 0.8, "user"),
    ("We decided to use Kafka for the event pipeline", "decision", 0.7, "user"),
    ("I always write commit messages in English", "preference", 0.7, "user"),
    ("I live in Tokyo and work at Sony as a firmware engineer", "identity", 0.8, "user"),
    ("Actually the deadline is March 15, not March 1", "correction", 0.8, "user"),
    ("My wife is vegetarian, so I never book steakhouses", "relationship", 0.7, "user"),
    ("I'm a beginner in Rust", "skill", 0.6, "user"),
    ("我习惯用 Neovim 写 Python", "preference", 0.7, "user"),
    ("我偏好 TypeScript strict 模式", "preference", 0.7, "user"),
    ("用户是 SRE，负责公司的 Kubernetes 集群", "identity", 0.8, "both"),
]

# Ordinary useful facts the assistant produced: working memory (5-7).
WORKING: list[Candidate] = [
    ("Python 3.12 removed the distutils module from the standard library", "fact", 0.6, "assistant"),
    (
        "Oracle Cloud ARM实例使用nftables而非iptables，规则写入/etc/nftables.conf后执行systemctl enable nftables",
        "fact",
        0.7,
        "assistant",
    ),
    ("品川区1LDK近3年成交价中位数1850-2100万日元", "fact", 0.5, "assistant"),
    ("SQLite的WAL模式允许读写并发，但同一时间只能有一个写者", "fact", 0.6, "assistant"),
    ("HTTP 429 means the client sent too many requests; respect the Retry-After header", "fact", 0.5, "assistant"),
    ("Oracle Cloud除了系统防火墙，还需要在Security List中开放端口", "fact", 0.6, "assistant"),
    ("The median rent for a one-bedroom in Lisbon is about 1,100 euros a month", "fact", 0.5, "assistant"),
    ("React 18 batches state updates automatically, even inside promises and timeouts", "fact", 0.5, "assistant"),
    ("GitHub Pages + Jekyll 零成本，push 即部署", "insight", 0.5, "assistant"),
    ("东京的梅雨季一般在6月上旬到7月中旬", "fact", 0.5, "assistant"),
    ("The Postgres default max_connections is 100", "fact", 0.5, "assistant"),
    ("使用 uv 安装依赖通常比 pip 快 10 倍以上", "fact", 0.5, "assistant"),
    ("Docker volumes persist data across container restarts, bind mounts map a host path", "fact", 0.5, "assistant"),
    ("复利公式：终值 = 本金 × (1 + 年利率)^年数", "fact", 0.5, "assistant"),
    ("In jieba, add_word changes segmentation immediately", "fact", 0.5, "assistant"),
    ("A 30-year mortgage at 4% on $400,000 costs about $1,910 a month", "fact", 0.6, "assistant"),
    ("Rust的所有权规则：每个值只有一个所有者，所有者离开作用域时值被释放", "fact", 0.5, "assistant"),
    ("Kubernetes 的 liveness probe 失败会重启容器，readiness probe 失败只会摘掉流量", "fact", 0.6, "assistant"),
]

# Small talk, vague summaries and transient states: skip (< 5).
SKIP: list[Candidate] = [
    ("今天天气真好", "context", 0.1, "user"),
    ("好的，谢谢", "context", 0.1, "user"),
    ("哈哈哈", "note", 0.1, "user"),
    ("thanks, that helps!", "context", 0.1, "user"),
    ("Good morning!", "context", 0.1, "user"),
    ("ok", "context", 0.1, "user"),
    ("用户问了一个问题", "note", 0.3, "assistant"),
    ("讨论了一些事情", "note", 0.2, "both"),
    ("discussed yield calculation", "note", 0.3, "assistant"),
    ("The user asked something about the project", "note", 0.3, "assistant"),
    ("聊了聊天气之类的", "note", 0.2, "both"),
    ("stuff about the API, probably", "note", 0.3, "inferred"),
    ("我今天有点累", "context", 0.3, "user"),
    ("I'm at a coffee shop right now", "context", 0.3, "user"),
    ("用户刚才在看文档", "context", 0.3, "inferred"),
    ("现在有点饿，等下去吃饭", "context", 0.3, "user"),
    ("Just got back from lunch, feeling sleepy today", "context", 0.3, "user"),
    ("刚才网络有点卡", "context", 0.3, "user"),
    ("用户可能有点着急", "context", 0.3, "inferred"),
    ("I'm heading out for lunch now", "context", 0.3, "user"),
]

BANDS = ("skip", "working", "store")


def score(candidate: Candidate, existing: tuple[str, ...] = ()) -> ValueScore:
    content, category, importance, source = candidate
    return evaluate(content, category=category, importance=importance, source=source, existing=existing)


# --- the formula -------------------------------------------------------------------------------


def seed_formula(forced: bool, i: float, n: float, r: float, c: float, g: float, t: float) -> float:
    """The value formula's weighted sum, divided by the weights' sum (see the module docstring)."""
    return 3 * forced + (0.5 * i + 0.4 * n + 0.5 * r + 0.3 * c + 0.2 * g + 0.3 * t) / 2.2


@pytest.mark.parametrize(
    "dims",
    [
        (False, 8, 10, 9, 8, 5, 9),
        (False, 5, 10, 4, 6, 6, 7),
        (False, 1, 9, 0, 8, 3, 0),
        (False, 0, 0, 0, 0, 0, 0),
        (False, 10, 10, 10, 10, 10, 10),
        (True, 2, 3, 1, 4, 2, 1),
        (True, 10, 10, 10, 10, 10, 10),
        (False, 7.25, 3.33, 6.5, 8, 4.75, 9.1),
    ],
)
def test_total_is_the_seed_formula(dims: tuple[bool, float, float, float, float, float, float]) -> None:
    forced, i, n, r, c, g, t = dims
    result = ValueScore.from_dimensions(
        forced=forced, importance=i, novelty=n, relevance=r, credibility=c, granularity=g, timeliness=t
    )
    assert result.total == pytest.approx(seed_formula(*dims), abs=0.006)
    assert (result.importance, result.novelty, result.relevance) == (i, n, r)
    assert (result.credibility, result.granularity, result.timeliness, result.forced) == (c, g, t, forced)


def test_weights_are_the_seeds() -> None:
    assert dict(WEIGHTS) == {
        "importance": 0.5,
        "novelty": 0.4,
        "relevance": 0.5,
        "credibility": 0.3,
        "granularity": 0.2,
        "timeliness": 0.3,
    }
    assert pytest.approx(2.2) == WEIGHT_SUM
    assert FORCED_BONUS == 3.0
    assert (STORE_THRESHOLD, WORKING_THRESHOLD) == (7.0, 5.0)


def test_exact_totals() -> None:
    # (0.5·8 + 0.4·10 + 0.5·9 + 0.3·8 + 0.2·5 + 0.3·9) / 2.2 = 18.6 / 2.2 = 8.4545...
    high = ValueScore.from_dimensions(
        forced=False, importance=8, novelty=10, relevance=9, credibility=8, granularity=5, timeliness=9
    )
    assert (high.total, high.decision) == (8.45, "store")
    # 11.0 / 2.2 = 5.0 exactly: the lower edge of working
    edge = ValueScore.from_dimensions(
        forced=False, importance=4, novelty=10, relevance=4, credibility=6, granularity=3, timeliness=2
    )
    assert (edge.total, edge.decision) == (5.0, "working")
    # forced adds 3 and always stores, however low the rest
    low = ValueScore.from_dimensions(
        forced=True, importance=0, novelty=0, relevance=0, credibility=0, granularity=0, timeliness=0
    )
    assert (low.total, low.decision) == (3.0, "store")


@pytest.mark.parametrize(
    ("total", "forced", "duplicate", "decision"),
    [
        (7.0, False, False, "store"),
        (6.99, False, False, "working"),
        (5.0, False, False, "working"),
        (4.99, False, False, "skip"),
        (0.0, True, False, "store"),
        (9.0, False, True, "working"),
        (6.0, False, True, "skip"),
        (3.0, False, True, "skip"),
        (4.0, True, True, "store"),
    ],
)
def test_decide(total: float, forced: bool, duplicate: bool, decision: str) -> None:
    assert decide(total, forced=forced, duplicate=duplicate) == decision


def test_dimensions_out_of_range_are_refused() -> None:
    with pytest.raises(InvalidInput, match="novelty"):
        ValueScore.from_dimensions(
            forced=False, importance=5, novelty=11, relevance=5, credibility=5, granularity=5, timeliness=5
        )
    with pytest.raises(InvalidInput, match="importance"):
        ValueScore.from_dimensions(
            forced=False, importance=float("nan"), novelty=1, relevance=5, credibility=5, granularity=5, timeliness=5
        )


def test_as_dict() -> None:
    result = score(STORE[0])
    data = result.as_dict()
    assert set(data) == {
        "forced",
        "importance",
        "novelty",
        "relevance",
        "credibility",
        "granularity",
        "timeliness",
        "total",
        "decision",
        "redundancy",
        "nearest",
        "duplicate",
        "related",
    }
    assert data["total"] == result.total and data["decision"] == "store"


# --- seed 002: "strongly related to a high-value memory: the threshold may be lowered" -----------


@pytest.mark.parametrize(
    ("total", "related", "decision"),
    [(6.0, True, "store"), (6.0, False, "working"), (4.0, True, "working"), (4.0, False, "skip"), (3.99, True, "skip")],
)
def test_decide_lowers_both_thresholds_next_to_a_high_value_memory(total: float, related: bool, decision: str) -> None:
    assert RELATED_DISCOUNT == 1.0
    assert decide(total, forced=False, related=related) == decision


@pytest.mark.parametrize(
    ("anchor", "candidate"),
    [
        ("我在阿里巴巴做后端工程师，负责支付系统", "阿里巴巴的支付系统这周在做压测"),
        ("I work at Alibaba as a backend engineer on the payment system", "Load test of the Alibaba payment system"),
        ("我在阿里巴巴做 backend，负责 payment 系统", "阿里巴巴的 payment 系统这周压测"),
    ],
)
def test_a_candidate_near_a_high_value_memory_is_judged_with_the_lower_threshold(anchor: str, candidate: str) -> None:
    def judged(*existing: str | Nearby) -> ValueScore:
        return evaluate(candidate, category="event", importance=0.4, source="assistant", existing=existing)

    plain = judged(Nearby(anchor, high_value=False, id="mem_1"))
    high = judged("unrelated text", Nearby.of(anchor, importance=0.5, core=True))
    assert plain.total == high.total and 4 <= plain.total < 5
    assert RELATED_SIMILARITY <= high.redundancy < 0.85 and high.nearest == 1
    assert (plain.related, plain.decision) == (False, "skip")
    assert (high.related, high.decision, high.working_threshold, high.store_threshold) == (True, "working", 4, 6)
    # importance >= 0.8 is high value too; an unrelated or duplicate high-value memory lowers nothing
    assert Nearby.of(anchor, importance=0.8, core=False).high_value
    far = judged(Nearby("我每天早上跑步五公里 / I run 5k every morning", True))
    same = judged(Nearby(candidate, True))
    assert not far.related and not same.related and same.duplicate


# --- calibration bands -------------------------------------------------------------------------


@pytest.mark.parametrize("candidate", STORE, ids=lambda c: c[0][:30])
def test_clear_user_statements_are_stored(candidate: Candidate) -> None:
    result = score(candidate)
    assert result.total >= STORE_THRESHOLD and result.decision == "store", result


@pytest.mark.parametrize("candidate", WORKING, ids=lambda c: c[0][:30])
def test_ordinary_assistant_facts_are_working_memory(candidate: Candidate) -> None:
    result = score(candidate)
    assert WORKING_THRESHOLD <= result.total < STORE_THRESHOLD and result.decision == "working", result


@pytest.mark.parametrize("candidate", SKIP, ids=lambda c: c[0][:30])
def test_small_talk_vague_and_transient_are_skipped(candidate: Candidate) -> None:
    result = score(candidate)
    assert result.total < WORKING_THRESHOLD and result.decision == "skip", result


@pytest.mark.parametrize("candidate", STORE + WORKING, ids=lambda c: c[0][:30])
def test_a_near_duplicate_drops_a_band(candidate: Candidate) -> None:
    content = candidate[0]
    fresh = score(candidate)
    for stored in (content + "。", content.upper(), f"（已记录）{content}，见上次对话"):
        again = score(candidate, existing=("完全无关的一条记忆：猫喜欢晒太阳", stored))
        assert again.novelty <= 1.5, (stored, again)
        assert BANDS.index(again.decision) < BANDS.index(fresh.decision), (stored, again)


def test_the_calibration_sets_are_big_enough() -> None:
    for band in (STORE, WORKING, SKIP):
        assert len(band) >= 15
        # Chinese, English and mixed text in each band
        assert any(all(ord(ch) < 128 for ch in c[0]) for c in band)
        assert any(any("\u4e00" <= ch <= "\u9fff" for ch in c[0]) for c in band)


def test_forced_always_stores() -> None:
    result = evaluate("今天天气真好", category="context", importance=0.1, source="user", forced=True)
    assert result.forced and result.decision == "store"
    assert result.total >= FORCED_BONUS
    dup = evaluate(
        "我不吃香菜", category="preference", importance=0.7, source="user", existing=["我不吃香菜"], forced=True
    )
    assert dup.decision == "store"


# --- dimensions --------------------------------------------------------------------------------


def test_importance_is_scaled_to_ten() -> None:
    assert evaluate("我住在杭州", category="identity", importance=0.8, source="user").importance == 8.0
    assert evaluate("I live in Oslo", category="identity", importance=0.0, source="user").importance == 0.0


def test_novelty() -> None:
    fresh = evaluate("我每天早上跑步五公里", category="preference", importance=0.7, source="user")
    assert fresh.novelty == 10.0
    unrelated = evaluate(
        "我每天早上跑步五公里", category="preference", importance=0.7, source="user", existing=["Tokyo is in Japan"]
    )
    assert unrelated.novelty == 10.0
    same = evaluate(
        "我每天早上跑步五公里", category="preference", importance=0.7, source="user", existing=["我每天早上跑步五公里!"]
    )
    assert same.novelty == 0.0
    # already said inside a longer memory
    inside = evaluate(
        "我喜欢喝美式咖啡",
        category="preference",
        importance=0.7,
        source="user",
        existing=["我喜欢喝美式咖啡，不加糖，早上一杯"],
    )
    assert inside.novelty <= 1.0
    # a longer text that adds details to a stored one is partly new
    adds = evaluate(
        "我喜欢喝美式咖啡，不加糖，早上一杯",
        category="preference",
        importance=0.7,
        source="user",
        existing=["我喜欢喝美式咖啡"],
    )
    assert 3.0 < adds.novelty < 8.0
    # different numbers are a different fact
    card = evaluate(
        "我的银行卡尾号是5678", category="fact", importance=0.6, source="user", existing=["我的银行卡尾号是1234"]
    )
    assert card.novelty > 5.0


def test_novelty_of_empty_talk_is_low() -> None:
    thanks = evaluate("好的，谢谢", category="context", importance=0.1, source="user")
    vague = evaluate("用户问了一个问题", category="note", importance=0.3, source="assistant")
    assert thanks.novelty <= 3.0
    assert vague.novelty <= 5.0


def test_relevance() -> None:
    def relevance(content: str, category: str, domains: tuple[str, ...] = ()) -> float:
        return evaluate(content, category=category, importance=0.5, source="user", profile_domains=domains).relevance

    assert relevance("我喜欢喝茶", "preference") > relevance("绿茶含有茶多酚", "fact")
    assert relevance("I prefer dark mode", "preference") >= 9
    assert relevance("Tokyo is the capital of Japan", "fact") <= 5
    # about the user
    assert relevance("我的服务器在法兰克福", "fact") > relevance("这台服务器在法兰克福", "fact")
    assert relevance("The user runs three VPSes", "fact") > relevance("VPS prices fell in 2024", "fact")
    # the user's domains
    base = relevance("REITs usually pay out 90% of taxable income", "fact")
    assert relevance("REITs usually pay out 90% of taxable income", "fact", ("investing", "reits")) > base
    assert relevance("品川区的实际利回约4.2%", "fact", ("利回", "房地产")) > relevance("品川区的实际利回约4.2%", "fact")
    # transient states are about the user but not for later
    assert relevance("我今天有点累", "context") < relevance("我容易疲劳", "context")


def test_credibility_by_source_and_hedges() -> None:
    def credibility(content: str, source: str) -> float:
        return evaluate(content, category="fact", importance=0.5, source=source).credibility

    text = "会议室在三楼东侧"
    assert [credibility(text, s) for s in ("user", "both", "system", "assistant", "inferred")] == [8, 8, 7, 6, 4]
    assert credibility(text, "用户") == 8  # the seeds' aliases are accepted
    assert credibility("会议室可能在三楼", "user") == 6.5
    assert credibility("会议室好像也许在三楼", "user") == 5.0
    assert credibility("I think the meeting is maybe on Tuesday", "user") == 5.0
    assert credibility("The API limit is 100 requests per minute, according to the docs", "assistant") == 7.0


def test_granularity() -> None:
    def granularity(content: str) -> float:
        return evaluate(content, category="fact", importance=0.5, source="user").granularity

    assert granularity("咖啡") < granularity("我喜欢喝咖啡") < granularity("我每天早上8点喝一杯250ml的美式咖啡")
    assert granularity("stuff") < granularity("The build uses Gradle 8.5 and JDK 21")
    assert granularity("讨论了一些事情") < granularity("讨论了发布计划，定在3月15日")
    assert granularity("配置写在 /etc/nginx/nginx.conf") > granularity("配置写在配置文件里")
    assert granularity("I met Sarah from Stripe in Dublin") > granularity("I met someone from a company somewhere")


def test_timeliness() -> None:
    def timeliness(content: str, category: str) -> float:
        return evaluate(content, category=category, importance=0.5, source="user").timeliness

    assert timeliness("我是护士", "identity") > timeliness("我在开会", "context")
    assert timeliness("我今天在家办公", "context") < timeliness("我在家办公", "context")
    assert timeliness("I'm at the airport right now", "context") <= 1
    assert timeliness("我一直用Mac", "preference") > timeliness("我目前用Mac", "preference")
    # a todo is about the near future by nature: 明天 does not make it less timely
    assert timeliness("明天交报告", "todo") == timeliness("交报告", "todo")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "   "}, "empty"),
        ({"importance": 1.5}, "importance"),
        ({"importance": -0.1}, "importance"),
        ({"source": "robot"}, "source"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"content": "我住在杭州", "category": "identity", "importance": 0.8, "source": "user"}
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        evaluate(**args)  # type: ignore[arg-type]
