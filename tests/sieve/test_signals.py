"""The sieve's fast channel: high-signal patterns in Chinese, English and mixed text, the false
positives they must not fire on, forced instructions and small talk."""

from __future__ import annotations

import dataclasses

import pytest

from mcp_memory_server.sieve import signals
from mcp_memory_server.sieve.signals import (
    FORCED_IMPORTANCE,
    IMPORTANCE,
    KINDS,
    Signal,
    detect_signals,
    forced_instruction,
    is_small_talk,
    split_sentences,
)


def patterns(message: str) -> list[str]:
    return [s.pattern for s in detect_signals(message)]


def only(message: str) -> Signal:
    found = detect_signals(message)
    assert len(found) == 1, found
    return found[0]


# --- sentences -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢Python 3.11。我住在杭州！", ["我喜欢Python 3.11。", "我住在杭州！"]),
        ("I use Python 3.11.2 on macOS. I live in Berlin.", ["I use Python 3.11.2 on macOS.", "I live in Berlin."]),
        ("e.g. this is fine. Dr. Smith is my doctor.", ["e.g. this is fine.", "Dr. Smith is my doctor."]),
        ("Visit example.com/?q=1 later! OK", ["Visit example.com/?q=1 later!", "OK"]),
        ("第一句；第二句\n第三句", ["第一句；", "第二句", "第三句"]),
        ("我喜欢咖啡.不加糖", ["我喜欢咖啡.", "不加糖"]),
        ("The price is 3.5 dollars. Ok.", ["The price is 3.5 dollars.", "Ok."]),
        ("记住以下几点：1. 我不吃辣 2. 我对花生过敏", ["记住以下几点：", "我不吃辣", "我对花生过敏"]),
        ("Remember:\n- I'm vegan\n- I live in Oslo", ["Remember:", "I'm vegan", "I live in Oslo"]),
        ("真的吗？？好吧……那就这样", ["真的吗？？", "好吧……", "那就这样"]),
        ("", []),
        ("  \n ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


# --- each kind: positives ----------------------------------------------------------------------

CORRECTIONS = [
    "不是周三，是周四。",
    "我的生日是5月3号，不是5月4号",
    "不是用MySQL而是用PostgreSQL",
    "其实是Python 3.12，我之前说错了",
    "你搞错了，我住在杭州不是上海",
    "更正一下：会议改到下午三点",
    "纠正一下，我女儿今年7岁",
    "我刚才说错了，预算是20万",
    "不对，应该是周五交",
    "其实我是产品经理",
    "Actually, it's Python 3.12, not 3.11.",
    "I meant the staging server, not production",
    "Correction: the meeting is on Thursday",
    "Sorry, I was wrong about the deadline — it's Friday",
    "You got it wrong, my daughter is 7",
    "It's Tuesday, not Monday",
    "not Java but Kotlin is what we use",
    "My mistake, the budget is $5,000",
    "不是React，是Vue",
    "你记错了，我用的是 macOS 不是 Windows",
    "更正：deadline是周五",
    "I meant 北京, not 上海",
]
IDENTITIES = [
    "我是一名后端工程师",
    "我叫王小明",
    "我在字节跳动工作",
    "我住在杭州西湖区",
    "我来自四川成都",
    "我是做前端的",
    "我是做投资的人",
    "我的名字是李雷",
    "我是上海人",
    "我今年32岁",
    "我是个初学者，刚开始学编程",
    "我姓张",
    "我是学生党",
    "我目前在一家外企上班",
    "我是一名独立开发者",
    "I'm a data scientist at a fintech startup.",
    "My name is Alice.",
    "I live in Berlin.",
    "I work at Google as an SRE.",
    "I'm from Toronto originally.",
    "I am a high school teacher",
    "I'm 34 years old",
    "I'm based in Singapore",
    "I grew up in Osaka",
    "Call me Sam.",
    "I’m a software engineer",  # typographic apostrophe
    "我是一名 software engineer",
    "我在 Google 工作",
    "我住在 San Francisco",
    "我是PM，主要负责B端产品",
    "My name is 李华",
    "我家在北京朝阳区",
    "I work remotely from Lisbon",
]
RELATIONSHIPS = [
    "我老婆喜欢吃辣",
    "我女儿今年上小学二年级",
    "我的猫叫咪咪",
    "我爸是医生",
    "我有一个儿子",
    "我同事在阿里工作",
    "我爱人对海鲜过敏",
    "My wife is a nurse.",
    "My daughter loves Minecraft",
    "My boss prefers Slack over email",
    "I have two cats",
    "My dog's name is Rex",
    "我女朋友在 Microsoft 上班",
    "My son 小宇 likes 乐高",
]
PREFERENCES = [
    "我喜欢喝美式咖啡，不加糖",
    "我不吃香菜",
    "我比较喜欢简洁的回答",
    "我prefer简单的方案",
    "我比较like安静一点的咖啡馆",
    "我讨厌开会",
    "我习惯用vim写代码",
    "我受不了太长的邮件",
    "我更喜欢用TypeScript",
    "我对花生过敏",
    "我一般早上喝茶",
    "以后回答请用中文",
    "我最喜欢的颜色是蓝色",
    "我不想再用Windows了",
    "我偏好函数式风格",
    "请用英文回复",
    "I prefer tabs over spaces.",
    "I love spicy food",
    "I hate long meetings",
    "I can't stand Java's verbosity",
    "I always use pnpm instead of npm",
    "My favourite editor is Neovim",
    "I'm not a fan of ORMs",
    "I don't drink coffee",
    "I'd rather have short answers",
    "From now on, please answer in bullet points",
    "Never use emojis in your replies",
    "I really like Rust's type system",
    "I'm allergic to shellfish",
    "I never eat pork",
    "I'm vegetarian",
    "我喜欢用 VS Code",
    "I prefer 简体中文 for docs",
    "我习惯用 Python 写脚本",
    "I love 火锅",
    "我一般不太喜欢太花哨的UI",
    "We always use squash merges",
    "Stop apologizing",
    "以后别这么啰嗦",
]
DECISIONS = [
    "我们决定用PostgreSQL",
    "最终选了方案B",
    "就这样吧，用Redis做缓存",
    "定了，下周一上线",
    "我们改用pnpm了",
    "确定用React重写前端",
    "我选择了GitHub Pages部署",
    "那就用Docker部署吧",
    "我打算用Rust重写这个模块",
    "最终决定去日本旅游",
    "We decided to use Kafka.",
    "I'll go with the blue theme",
    "Let's use SQLite for now",
    "I chose Vue over React",
    "We've settled on weekly releases",
    "We switched to GitHub Actions",
    "Decision: we ship on Friday",
    "I'm going to use FastAPI",
    "我们决定用 Kubernetes",
    "Let's use 阿里云 OSS",
    "我们纠结了很久，最终决定用Go",
    "那我们就用 Postgres 吧",
]
TODOS = [
    "提醒我明天下午3点给张总打电话",
    "别忘了带伞",
    "记得要交房租",
    "我明天要交周报",
    "待办：更新SSL证书",
    "需要在周五之前提交报告",
    "周五前要提交报告",
    "我今晚得把PPT做完",
    "记得帮我预约体检",
    "Remind me to call mom tomorrow.",
    "Don't forget to renew the domain.",
    "TODO: write migration tests",
    "I need to submit the report by Friday",
    "I have to pick up my kids at 5 today",
    "We're going to deploy tomorrow",
    "The deadline is next Monday",
    "提醒我 review PR #42",
    "Don't forget 交房租",
    "我明天要 deploy 新版本",
    "我准备明天去面试",
    "这个bug我明天再修",
    "I need to fix this bug before the demo tomorrow",
]
IMPORTANT = [
    ("重要：生产数据库每天凌晨3点备份", "fact"),
    ("关键是先把缓存打开", "insight"),
    ("本质上这是一个调度问题", "insight"),
    ("务必在上线前跑完回归测试", "fact"),
    ("核心是降低延迟", "insight"),
    ("划重点：周报每周五发", "fact"),
    ("Important: never push directly to main.", "fact"),
    ("The key point is that the API is idempotent", "insight"),
    ("Crucially, the cache must be warmed first", "fact"),
    ("Essentially, this is a scheduling problem", "insight"),
    ("Make sure to run the linter before committing", "fact"),
    ("重要：API rate limit 是 100 req/min", "fact"),
    ("The key point is 用户体验", "insight"),
]


@pytest.mark.parametrize("message", CORRECTIONS)
def test_corrections(message: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.importance) == ("correction", 0.8)
    # A correction of a keyed fact (where the user lives, their job) stays in the fact's category,
    # under its key: it updates the memory holding the key.
    assert signal.category == ("correction" if signal.key is None else "identity")


@pytest.mark.parametrize("message", IDENTITIES)
def test_identity(message: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.category, signal.importance) == ("identity", "identity", 0.8)


@pytest.mark.parametrize("message", RELATIONSHIPS)
def test_relationships(message: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.category) == ("relationship", "relationship")


@pytest.mark.parametrize("message", PREFERENCES)
def test_preferences(message: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.category, signal.importance) == ("preference", "preference", 0.7)


@pytest.mark.parametrize("message", DECISIONS)
def test_decisions(message: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.category) == ("decision", "decision")


@pytest.mark.parametrize("message", TODOS)
def test_todos(message: str) -> None:
    signal = only(message)
    # 别忘了 / don't forget / remember to are also forced instructions, which raise the importance
    assert (signal.pattern, signal.category) == ("todo", "todo")
    assert signal.importance == (FORCED_IMPORTANCE if signal.forced else 0.6)
    assert signal.forced == forced_instruction(message)


@pytest.mark.parametrize(("message", "category"), IMPORTANT)
def test_important(message: str, category: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.category) == ("important", category)


# --- false positives ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        # questions
        "你喜欢什么？",
        "你喜欢什么",
        "Do you prefer tabs or spaces?",
        "do you prefer tabs or spaces",
        "What do you like about Rust?",
        "我是不是应该学Rust？",
        "你决定了吗？",
        "Have you decided?",
        "这个重要吗？",
        "你还记得我叫什么吗？",
        "Would you prefer Python?",
        # hypotheticals
        "如果我是你，我会选Go",
        "If I were a teacher, I'd be stricter",
        "假如我住在北京，通勤会很累",
        "If I liked Java I would use Spring",
        "I wish I lived in Kyoto",
        # other people
        "他喜欢打篮球",
        "she likes jazz",
        "他是工程师",
        "他以为我是学生",
        "我妈说要下雨了",
        "They think I'm a designer",
        # not identity
        "我是说你应该先写测试",
        "我是在问你怎么配置nginx",
        "我叫了外卖",
        "我在工作",
        "我是一个人去的",
        "I'm a bit tired",
        "I mean, it's fine",
        "I'm working on a bug",
        "我住院了",
        "我在考虑换工作",
        "我在学日语",
        "I'm trying to deploy to AWS but it keeps failing",
        # not a preference
        "I'd like to ask about Docker",
        "I would like to know how this works",
        "我喜欢你",
        "我喜欢这个",
        "I love it!",
        "I love you",
        "I hate this error",
        "我不喜欢",
        "这个我不要",
        "I like that",
        "我不用了，谢谢",
        "我想要一杯咖啡",
        # not a decision
        "我还没决定",
        "你来决定吧",
        "就这样吧",
        "定了",
        "I haven't decided yet",
        "决定因素是成本",
        "I'll go with that",
        "I can't decide between Go and Rust",
        "我就用过一次",
        "选了半天还是不知道选哪个",
        "他决定辞职了",
        "我老板决定下周开会",
        "搞定了",
        "不确定用哪个",
        # not a todo
        "我需要帮助",
        "I need help",
        "I need to understand closures",
        "Remind me what we discussed yesterday",
        "明天要下雨",
        "我记得他说过这个",
        "提醒我",
        # not a correction
        "这不是我的错",
        "代码报错了",
        "更正确的做法是先备份",
        "Not bad, but could be faster",
        "It's not only fast but also cheap",
        "Actually, that's a great idea",
        "其实是想问一下怎么部署",
        "你搞错了",
        # not important
        "不重要",
        "It's not important",
        "The key is in the drawer",
        "重要！",
        # nothing at all
        "",
        "好的",
        "今天天气真好",
        "How do I configure nginx?",
        "帮我写一个快速排序",
        "Can you explain closures in JavaScript?",
    ],
)
def test_no_signal(message: str) -> None:
    assert detect_signals(message) == []


# --- content, priority, de-duplication -----------------------------------------------------------


def test_content_is_the_trimmed_sentence() -> None:
    assert only("  我不吃香菜。 ").content == "我不吃香菜"
    assert only("I prefer tabs over spaces.").content == "I prefer tabs over spaces"
    assert only("对了，我住在杭州！").content == "我住在杭州"
    assert only("btw I live in Berlin").content == "I live in Berlin"


def test_question_keeps_the_statement_before_it() -> None:
    signal = only("我是做后端的，想问一下怎么学Rust？")
    assert (signal.pattern, signal.content) == ("identity", "我是做后端的")
    signal = only("I'm a teacher, what books should I read?")
    assert (signal.pattern, signal.content) == ("identity", "I'm a teacher")
    signal = only("我喜欢简洁的回答，你能做到吗？")
    assert (signal.pattern, signal.content) == ("preference", "我喜欢简洁的回答")


def test_tag_question_is_not_a_question() -> None:
    assert only("我不吃辣，好吗？").content == "我不吃辣"
    assert only("Always use metric units, ok?").content == "Always use metric units"


def test_one_signal_per_sentence_by_priority() -> None:
    # correction outranks preference, identity outranks preference
    assert patterns("不是Java，是Kotlin，我更喜欢Kotlin") == ["correction"]
    assert patterns("我是前端工程师，因为喜欢用Vue") == ["identity"]
    # ... unless each clause is a fact of its own (seed 002: compound information is split)
    assert patterns("我是前端工程师，喜欢用Vue") == ["identity", "preference"]
    assert patterns("Actually, I'm a designer and I love Figma") == ["correction"]


def test_one_signal_per_sentence_in_order() -> None:
    message = "我叫李雷，是一名后端工程师。我喜欢喝咖啡。我们决定用Go重写服务。提醒我周五交周报。今天天气不错。"
    assert patterns(message) == ["identity", "identity", "preference", "decision", "todo"]
    assert [s.key for s in detect_signals(message)][:2] == ["user.name", "user.job"]
    message = (
        "Hi! I'm a backend engineer at Stripe. I prefer Go for services. "
        "We decided to move to Postgres. Remind me to update the runbook tomorrow. Thanks!"
    )
    assert patterns(message) == ["identity", "preference", "decision", "todo"]
    message = "我在 Shopify 工作。I always use Vim.\n另外，我们决定用 Kafka。"
    assert patterns(message) == ["identity", "preference", "decision"]


def test_duplicates_are_reported_once() -> None:
    assert len(detect_signals("我喜欢喝咖啡。我喜欢喝咖啡！")) == 1
    assert len(detect_signals("I prefer tabs. i prefer TABS!")) == 1


def test_kinds_and_importance() -> None:
    assert KINDS == ("correction", "identity", "relationship", "preference", "decision", "todo", "important")
    assert set(IMPORTANCE) == set(KINDS)
    assert all(0 < v <= 1 for v in IMPORTANCE.values())
    assert IMPORTANCE["identity"] == IMPORTANCE["correction"] == 0.8
    assert IMPORTANCE["preference"] == IMPORTANCE["decision"] == 0.7
    assert IMPORTANCE["todo"] == 0.6


def test_signal_is_frozen() -> None:
    signal = only("我不吃香菜")
    with pytest.raises(dataclasses.FrozenInstanceError):
        signal.content = "x"  # type: ignore[misc]


# --- forced instructions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "记住，我不吃香菜",
        "请记住我的生日是5月3日",
        "帮我记一下：车停在B2-105",
        "别忘了我对花生过敏",
        "记下来：下周三开会",
        "不要忘记我女儿叫朵朵",
        "你记住，我们周五发版",
        "我要你记住这件事：合同10号到期",
        "记住这个，好吗？",
        "你能记住我不吃辣吗？",
        "Remember that I'm vegetarian.",
        "Please remember: my flight is at 9am",
        "Don't forget, the API key rotates monthly",
        "Note that we use UTC everywhere",
        "Keep in mind I'm colorblind",
        "Could you remember that I prefer tabs?",
        "For future reference, I use zsh",
        "remember this: the staging DB is read-only",
        "Make a note that the office moved to Pier 9",
        "记住 my GitHub handle is octocat",
        "Please remember 我的工号是 A1024",
    ],
)
def test_forced_instruction(text: str) -> None:
    assert forced_instruction(text)


@pytest.mark.parametrize(
    "text",
    [
        "你还记得吗？",
        "你还记得我叫什么吗",
        "你记住了吗？",
        "Do you remember my name?",
        "I remember when we used Perl",
        "我记得他说过",
        "我会记住的",
        "好的，记住了",
        "这个我记下了",
        "I don't remember",
        "我记不住这么多",
        "聊天记录在哪里",
        "I can't remember the password",
        "Remember when we went to Kyoto?",
        "我喜欢喝咖啡",
        "",
    ],
)
def test_not_a_forced_instruction(text: str) -> None:
    assert not forced_instruction(text)


@pytest.mark.parametrize(
    ("message", "pattern", "content"),
    [
        ("记住，我不吃香菜", "preference", "我不吃香菜"),
        ("请记住我的生日是5月3日", "forced", "我的生日是5月3日"),
        ("帮我记一下：车停在B2-105", "forced", "车停在B2-105"),
        ("别忘了，我对花生过敏", "preference", "我对花生过敏"),
        ("别忘了我女儿叫朵朵", "relationship", "我女儿叫朵朵"),
        ("别忘了带伞", "todo", "别忘了带伞"),
        ("记住要早点睡", "forced", "记住要早点睡"),
        ("你能记住我不吃辣吗？", "preference", "我不吃辣"),
        ("Remember that I'm vegetarian.", "preference", "I'm vegetarian"),
        ("Please remember: my flight is at 9am", "forced", "my flight is at 9am"),
        ("Could you remember that I prefer tabs?", "preference", "I prefer tabs"),
        ("Don't forget to renew the domain.", "todo", "Don't forget to renew the domain"),
        ("Remember to back up the database tonight", "todo", "Remember to back up the database tonight"),
        ("Note that we use UTC everywhere", "forced", "we use UTC everywhere"),
        ("Keep in mind I'm colorblind", "forced", "I'm colorblind"),
        ("记住 my GitHub handle is octocat", "forced", "my GitHub handle is octocat"),
        ("Please remember 我住在深圳", "identity", "我住在深圳"),
        ("你要记住，安全第一", "forced", "安全第一"),
        ("Can you note down that the release is on 5/20?", "forced", "the release is on 5/20"),
        ("Please write down: the wifi rotates weekly", "forced", "the wifi rotates weekly"),
    ],
)
def test_forced_signal_content(message: str, pattern: str, content: str) -> None:
    signal = only(message)
    assert (signal.pattern, signal.content, signal.forced) == (pattern, content, True)
    assert signal.importance >= FORCED_IMPORTANCE
    if pattern == "forced":
        assert (signal.category, signal.importance) == ("fact", FORCED_IMPORTANCE)


def test_forced_raises_importance() -> None:
    assert only("记住，我是一名护士").importance == 0.9  # identity 0.8 + 0.1
    assert only("记住，我不吃香菜").importance == 0.8  # preference 0.7 + 0.1
    assert only("记住，提醒我交房租").importance == 0.8  # todo 0.6, raised to the floor
    assert only("我不吃香菜").forced is False


def test_an_instruction_alone_forces_what_follows() -> None:
    found = detect_signals("记住以下几点：\n1. 我不吃辣\n2. 我对花生过敏\n3. 我住在杭州")
    assert [(s.pattern, s.content, s.forced) for s in found] == [
        ("preference", "我不吃辣", True),
        ("preference", "我对花生过敏", True),
        ("identity", "我住在杭州", True),
    ]
    found = detect_signals("Remember:\n- I'm vegan\n- my standup is at 9:30 every day")
    assert [(s.pattern, s.content, s.forced) for s in found] == [
        ("preference", "I'm vegan", True),
        ("forced", "my standup is at 9:30 every day", True),
    ]


def test_forced_needs_something_to_remember() -> None:
    assert detect_signals("记住！") == []
    assert detect_signals("Remember this.") == []
    assert detect_signals("记住这个") == []
    assert forced_instruction("Don't forget about me!")
    assert detect_signals("Don't forget about me!") == []


def test_forced_hypothetical_is_not_stored() -> None:
    assert detect_signals("记住，如果我是你我会选Go") == []


# --- small talk --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "assistant"),
    [
        ("你好", "你好！有什么可以帮你？"),
        ("谢谢！", "不客气"),
        ("好的", "👍"),
        ("ok thanks!", "You're welcome!"),
        ("哈哈哈哈", "😄"),
        ("今天天气真好", "是啊，东京今天晴天，适合出去走走！"),
        ("Good morning!", "Good morning! How can I help?"),
        ("thank you so much", "Anytime."),
        ("好的，谢谢！", "不客气～"),
        ("👍", "🙂"),
        ("嗯嗯", "好的"),
        ("Nice weather today", "It is!"),
        ("bye", "Bye!"),
        ("晚安", "晚安，好梦"),
        ("lol", "😂"),
        ("Thanks, got it", "Great."),
        ("谢谢你的帮助", "不客气，随时找我"),
        ("好热啊", "注意防暑"),
        ("", ""),
        ("How are you?", "Doing well, thanks for asking!"),
    ],
)
def test_small_talk(user: str, assistant: str) -> None:
    assert is_small_talk(user, assistant)


@pytest.mark.parametrize(
    ("user", "assistant"),
    [
        ("谢谢，另外我想问一下Docker怎么配置", "好的"),
        ("我喜欢喝咖啡", "好的"),
        ("ok", "x" * 120),
        ("谢谢", "不客气。" + "顺便总结一下：实际利回约4.28%，综合利回3.8-4.0%。" * 4),
        ("How do I configure nginx?", "Edit nginx.conf."),
        ("今天天气真好，我们决定去爬山", "好主意"),
        ("Thanks! Also, remember that I'm vegan", "Noted."),
        ("你好，我叫李雷", "你好李雷"),
        ("ok, let's use Postgres", "Sounds good."),
        ("2024", "?"),
    ],
)
def test_not_small_talk(user: str, assistant: str) -> None:
    assert not is_small_talk(user, assistant)


def test_small_talk_is_quick_on_long_near_misses() -> None:
    # a single regex with a repeated group of 哈+ / ha(ha)+ would backtrack exponentially here
    assert not is_small_talk("哈" * 39 + "x", "")
    assert not is_small_talk("ha" * 19 + "x", "")
    assert not is_small_talk("哈" * 5000, "")  # long pieces are never small talk
    assert is_small_talk("哈" * 40, "")


def test_small_talk_reply_limit_is_the_seeds() -> None:
    assert signals.SMALL_TALK_REPLY_CHARS == 100
    assert is_small_talk("谢谢", "x" * 99)
    assert not is_small_talk("谢谢", "x" * 100)


# --- keyed facts (text/corrections.py): statements and corrections of a fact with one value ------

KEYED = [
    ("我住在北京", "user.city"),
    ("我搬到了柏林", "user.city"),
    ("我刚搬家到深圳", "user.city"),
    ("I live in Berlin", "user.city"),
    ("I moved to Berlin", "user.city"),  # once a decision: the key kept its old city
    ("I've relocated to Lisbon", "user.city"),
    ("我在阿里工作", "user.employer"),
    ("我入职了腾讯", "user.employer"),
    ("我跳槽到字节了", "user.employer"),
    ("我在 Shopify 上班", "user.employer"),
    ("I work at SAP", "user.employer"),
    ("I joined Google last month", "user.employer"),
    ("我是一名软件工程师", "user.job"),
    ("我的工作是产品经理", "user.job"),
    ("I'm a data engineer", "user.job"),
    ("my job is teaching", "user.job"),
    ("我叫小王", "user.name"),
    ("我的名字是李雷", "user.name"),
    ("my name is Harry", "user.name"),
    ("call me Harry", "user.name"),
    ("我老婆叫小丽", "user.partner"),
    ("我男朋友叫阿杰", "user.partner"),
    ("my wife is Anna", "user.partner"),
    ("my girlfriend's name is Mia", "user.partner"),
    ("我不是住在北京，而是住在柏林", "user.city"),  # a correction naming the new value
    ("Actually I live in Munich", "user.city"),
    ("更正：我在腾讯工作", "user.employer"),
    ("Sorry, I meant I work at Siemens", "user.employer"),
    ("其实我住在Munich", "user.city"),
]


@pytest.mark.parametrize(("message", "key"), KEYED)
def test_keyed_facts(message: str, key: str) -> None:
    signal = only(message)
    assert signal.key == key
    assert signal.category == ("relationship" if key == "user.partner" else "identity")
    assert signal.pattern in ("correction", "identity", "relationship")


@pytest.mark.parametrize(
    "message",
    [
        "我不住在北京了",  # no new value
        "I no longer live in Berlin",
        "他说我住在北京",  # someone else's claim
        "如果我住在北京就好了",  # a hypothesis
        "I moved to the next step",
        "We moved to Postgres",
        "I moved to Python 3.12",
        "我在上海工作",  # a city, not an employer
        "我在家工作",
        "我在考虑换工作",
        "我是说你应该先写测试",
        "my wife is Japanese",
        "my wife is tired",
        "I work at home",
        "我喜欢住在北京",
        "我下个月搬到柏林之前要把房子卖了",  # a plan
    ],
)
def test_not_keyed(message: str) -> None:
    assert all(s.key is None for s in detect_signals(message))


# --- emphasis is forced (seed 002) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "这个很重要：服务器的端口是8443",
        "非常重要！周五之前交税",
        "以后会用到：staging 在 10.0.0.5",
        "备用机的密码放在抽屉里，以后会用到",
        "This is important: the API rotates keys monthly",
        "Keep the old backups, it's important.",
        "I'll need this later: the build id is 4471",
        "important: the office moves in May",
    ],
)
def test_emphasis_is_forced(message: str) -> None:
    assert forced_instruction(message)
    signal = only(message)
    assert signal.forced and signal.importance >= FORCED_IMPORTANCE


@pytest.mark.parametrize(
    "message",
    ["这个重要吗？", "这不重要：随便吧", "It's important to eat well", "重要的是先跑通", "I'll need a break later"],
)
def test_not_emphasis(message: str) -> None:
    assert not forced_instruction(message)
    assert not any(s.forced for s in detect_signals(message))


def test_emphasis_alone_forces_what_follows() -> None:
    assert [(s.content, s.forced) for s in detect_signals("这个很重要。服务器每天凌晨三点重启。")] == [
        ("服务器每天凌晨三点重启", True)
    ]
    assert [(s.content, s.forced) for s in detect_signals("This is important. The VPN gateway is vpn-3.")] == [
        ("The VPN gateway is vpn-3", True)
    ]


# --- compound information is split (seed 002) ----------------------------------------------------


@pytest.mark.parametrize(
    ("message", "parts"),
    [
        ("我住在杭州，在阿里工作，喜欢爬山", ["我住在杭州", "我在阿里工作", "我喜欢爬山"]),
        ("I live in Berlin, work at SAP and love hiking", ["I live in Berlin", "I work at SAP", "I love hiking"]),
        ("我叫李雷，在Google上班", ["我叫李雷", "我在Google上班"]),
        ("I'm a teacher and my wife is Anna", ["I'm a teacher", "my wife is Anna"]),
        ("我喜欢猫，也喜欢狗", ["我喜欢猫", "我也喜欢狗"]),
    ],
)
def test_compound_is_split(message: str, parts: list[str]) -> None:
    assert signals.compound_parts(message) == parts
    assert [s.content for s in detect_signals(message)] == parts


@pytest.mark.parametrize(
    "message",
    [
        "我决定用Go，因为它编译快",
        "我用Go，因为快",
        "I like tea, coffee and juice",
        "I work at Johnson and Johnson",
        "我不是住在北京，而是住在上海",
        "I prefer tabs, especially in Go",
        "我喜欢爬山，他喜欢游泳",
        "I earn 3,000 a month, and I live in Berlin",
        "我是前端工程师，因为喜欢用Vue",
        "他住在杭州，在阿里工作",
    ],
)
def test_what_belongs_together_is_not_split(message: str) -> None:
    assert signals.compound_parts(message) == [message]
