"""Hypothesis strategies for hostile MCP calls: every tool argument, resource URI and prompt
argument drawn from a mixture of valid values (so calls reach the store) and hostile ones
(arbitrary unicode, control characters and NUL, FTS5 syntax, SQL fragments, wrong JSON types,
values just past each limit, malformed and unknown ids, broken change-operation arrays).

Lone surrogates are left out: they are not valid JSON text, and the SDK's JSON-RPC parser
rejects a message that carries one before any handler runs (`test_hostile_input` checks that)."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

Strategy = st.SearchStrategy[Any]

# ---- text ------------------------------------------------------------------------------------

WORDS = (
    *("咖啡", "拿铁", "杭州", "上海", "用户", "喜欢", "每天", "项目", "记住", "密码", "编辑器", "数据库"),
    *("coffee", "latte", "Python", "dotfiles", "GitHub", "editor", "vim", "user", "project", "remember"),
)
FTS5 = (
    *('"', '""', '"unterminated', "*", "a*", "^", "^start", ":", "content:", "key:咖啡", "tags:x", "category:fact"),
    *("{content key}:x", "-content:x", "NEAR(", "NEAR(a b, 2)", "NEAR(a, -1)", "AND", "OR", "NOT", "AND OR NOT"),
    *("(", ")", "()", "+", "-", "a OR", "NOT NOT", "x AND (y OR", "rank:1", "memory_fts:x", "bm25("),
)
SQL = (
    *("'; DROP TABLE memories; --", "' OR '1'='1", '"; DELETE FROM sessions; --', "%", "%%", "_", "\\", "\\%"),
    *("'", "--", "/*", "*/", ";", "NULL", "0x00", "1; ATTACH DATABASE '/tmp/x' AS x", "json_each(", "?", "?1"),
)
SPACES = (" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u200b", "\ufeff", "\u202e", "\u00a0", "\u2028")
SIGNALS = (
    "我喜欢喝拿铁咖啡",
    "我住在杭州",
    "记住：明天下午三点开会",
    "我决定用 SQLite",
    "I prefer vim over emacs",
    "Remember that my editor is vim",
    "I'm working on the memory server project",
    "不对，我其实住在上海",
    "我的密码是 hunter2-Secret-991",
    "my API key is sk-abcdefghijklmnopqrstuvwx1234",
    "card 4111 1111 1111 1111",
)

controls = st.text(st.characters(categories=["Cc"]), min_size=1, max_size=4)
pieces = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(FTS5),
    st.sampled_from(SQL),
    st.sampled_from(SPACES),
    controls,
    st.text(max_size=6),  # arbitrary unicode (hypothesis leaves surrogates out)
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=6),
)
hostile_text = st.lists(pieces, max_size=5).map("".join)


def sized(*lengths: int, chars: str = "长x") -> Strategy:
    """Strings of exactly these lengths: the limits and one past them."""
    return st.tuples(st.sampled_from(lengths), st.sampled_from(chars)).map(lambda p: p[1] * p[0])


def text(*lengths: int) -> Strategy:
    """Mostly meaningful text with hostile parts, sometimes only hostile, empty, or just at or
    past the limits."""
    meaningful = st.tuples(st.sampled_from(SIGNALS), hostile_text, st.sampled_from(SIGNALS)).map("".join)
    return weighted(
        (4, meaningful), (2, st.sampled_from(SIGNALS)), (2, hostile_text), (1, st.just("")), (1, sized(*lengths))
    )


# ---- JSON values of the wrong type -----------------------------------------------------------

HUGE_INTS = (2**63, -(2**63) - 1, 10**30, -1, 0, 2**53 + 1)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(HUGE_INTS),
    st.floats(),  # NaN and infinity included: JSON has none, the SDK sends them as null
    st.sampled_from((math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324)),
    st.text(max_size=8),
)
json_values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=6), scalars, max_size=3),
    st.lists(st.lists(scalars, max_size=2), max_size=2),
)


def weighted(*options: tuple[int, Strategy]) -> Strategy:
    """One of the strategies, chosen in proportion to its weight."""
    table = [s for w, s in options for _ in range(w)]  # st.one_of would drop the repeats
    return st.sampled_from(table).flatmap(lambda s: s)


def hostile(valid: Strategy) -> Strategy:
    """Values of the right type most of the time (themselves often hostile), else hostile text or
    a value of the wrong JSON type."""
    return weighted((18, valid), (1, hostile_text), (1, json_values))


# ---- ids, categories, sessions ---------------------------------------------------------------

MALFORMED_IDS = (
    *("mem_0", "mem_-1", "mem_99999999999999999999", "mem_9223372036854775807", "mem_9223372036854775808"),
    *("MEM_1", "", " ", "mem_", "mem", "_1", "1", "mem_1.0", "mem_01", "mem_1 ", " mem_1", "mem_1\x00", "mem_１"),
    *("mem_٣", "mem_1;DROP TABLE memories", "mem_1' OR '1'='1", "mem_%", "mem__1", "mem_0x1", "mem_1e3", "mem_+1"),
)
ids = weighted(
    (4, st.integers(1, 80).map(lambda n: f"mem_{n}")), (2, st.sampled_from(MALFORMED_IDS)), (1, hostile_text)
)
CATEGORIES = (
    *("fact", "preference", "identity", "project_state", "todo", "event", "note", "skill", "correction"),
    *("Project State", "project-state", " preference ", "a" * 40, "a" * 41, "1abc", "_x", "ÄÖ", "咖啡", "x.y"),
)
categories = weighted((3, st.sampled_from(CATEGORIES[:9])), (1, st.sampled_from(CATEGORIES)), (1, hostile_text))
SESSIONS = ("s1", "s2", "会话一", " s1 ", "s1\x00", "", " ", "x" * 200, "x" * 201, "'; DROP TABLE sessions; --")
sessions = weighted((3, st.sampled_from(SESSIONS[:3])), (1, st.sampled_from(SESSIONS)), (1, hostile_text))
KEYS = ("user.city", "user.name", "user.editor", "mem_1", "mem_2", "mem_3", "mem_001", "k" * 200, "k" * 201, " ")
keys = st.one_of(st.sampled_from(KEYS), ids, hostile_text)
SOURCES = ("user", "assistant", "both", "system", "manual", "inferred", "用户输入", "AI输出", "USER", " user ", "bot")
sources = weighted((3, st.sampled_from(SOURCES[:8])), (1, st.sampled_from(SOURCES)), (1, hostile_text))
tag_lists = weighted(
    (
        8,
        st.lists(
            weighted(
                (6, st.sampled_from(("饮品", "work", "Work", " work ", "咖啡 拿铁", "c++"))),
                (1, st.sampled_from(("t" * 40, "t" * 41, ""))),
                (2, st.text(max_size=8)),
                (1, hostile_text),
            ),
            max_size=5,
        ),
    ),
    (1, st.just([f"t{i}" for i in range(21)])),
)
units = st.one_of(
    st.floats(0, 1),
    st.sampled_from((0, 1, -0.0, 1.0000001, -1e-9, 2, -1, math.nan, math.inf, 1e308, 10**30)),
    st.booleans(),
)


def id_lists() -> Strategy:
    return st.one_of(
        st.lists(ids, max_size=5),
        st.tuples(ids, st.sampled_from((200, 201))).map(lambda p: [p[0], *(f"mem_{i}" for i in range(1, p[1]))]),
        st.lists(st.sampled_from(("mem_1", "mem_2")), min_size=1, max_size=4),  # duplicates
    )


def _cursor(parts: tuple[Any, Any, Any]) -> str:
    raw = json.dumps(list(parts), ensure_ascii=False, allow_nan=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


ORDERS = ("updated", "created", "importance", "accessed")
# Cursors as the server makes them (base64 of [order_by, value, seq]), with hostile parts; the
# order mostly "updated", the default, so that most of them pass the first check.
cursors = weighted(
    (1, hostile_text),
    (1, sized(400, 401)),
    (
        6,
        st.tuples(
            weighted((4, st.just("updated")), (1, st.sampled_from((*ORDERS, "nope")))),
            st.one_of(st.just("2020-01-01T00:00:00+00:00"), st.floats(), scalars),
            st.one_of(st.integers(-5, 100), st.sampled_from(HUGE_INTS), st.booleans(), st.floats()),
        ).map(_cursor),
    ),
)

# ---- change operations -----------------------------------------------------------------------

OP_FIELDS = ("key", "action", "category", "payload", "importance", "source", "tags")
MANAGED = ("trigger_count", "created_at", "updated_at", "last_accessed", "access_count", "id", "content_hash")

valid_add = st.fixed_dictionaries(
    {
        "key": st.one_of(st.sampled_from(KEYS[:7]), st.integers(1, 40).map(lambda n: f"mem_{n}")),
        "action": st.just("add"),
        "category": st.sampled_from(CATEGORIES[:9]),
        "payload": st.one_of(st.sampled_from(SIGNALS), hostile_text),
        "importance": st.integers(1, 10),
        "source": st.sampled_from(SOURCES[:3] + SOURCES[6:8]),
    },
    optional={"tags": tag_lists, "trigger_count": st.integers(0, 9), "updated_at": st.text(max_size=5)},
)
valid_del = st.fixed_dictionaries(
    {
        "key": st.one_of(st.sampled_from(KEYS[:4]), st.integers(1, 40).map(lambda n: f"mem_{n}")),
        "action": st.just("del"),
        "category": st.sampled_from(CATEGORIES[:9]),
    }
)
broken_op = st.fixed_dictionaries(
    {},
    optional={
        "key": hostile(keys),
        "action": hostile(st.sampled_from(("add", "del", "ADD", "update", "delete", "", " add"))),
        "category": hostile(categories),
        "payload": hostile(text(2000, 2001)),
        "importance": hostile(st.one_of(st.integers(-2, 12), st.floats(), st.sampled_from((0.5, 10.5, 10**30)))),
        "source": hostile(sources),
        "tags": hostile(tag_lists),
        "managed": st.tuples(st.sampled_from(MANAGED), json_values),
        "unknown": json_values,
    },
).map(lambda op: {k: v for k, v in op.items() if k != "managed"} | dict([op["managed"]] if "managed" in op else []))
ops = weighted(
    (6, st.lists(weighted((3, valid_add), (2, valid_del), (3, broken_op), (1, json_values)), max_size=4)),
    (1, st.just([])),
    (1, st.tuples(valid_add, st.sampled_from((100, 101))).map(lambda p: [p[0]] * p[1])),
    (1, json_values),
)

# ---- session and profile tools ---------------------------------------------------------------

EMOTIONS = ("neutral", "happy", "sad", "anxious", "frustrated", "help_seeking", "angry", "", "e" * 41)
emotions = st.fixed_dictionaries(
    {"primary": hostile(st.sampled_from(EMOTIONS)), "confidence": hostile(units)},
    optional={
        "category": hostile(st.sampled_from(("positive", "negative", "neutral", "seeking", "c" * 21))),
        "indicators": hostile(st.lists(hostile_text, max_size=11)),
    },
)
emotions = weighted((6, emotions), (1, st.tuples(emotions, json_values).map(lambda p: p[0] | {"extra": p[1]})))
variables = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(("city", "城市", "", " ", "v" * 101)), hostile_text), json_values),
    st.integers().map(lambda n: {f"v{i}": n for i in range(51)}),
    st.fixed_dictionaries({"big": sized(7990, 8001)}),
)
answer_items = st.fixed_dictionaries(
    {"text": hostile(text(1000, 1001))}, optional={"sources": hostile(st.lists(ids, max_size=3)), "x": json_values}
)
PROFILE_FIELDS = ("summary", "language_preferences", "domains", "high_value_signals", "low_value_signals")
profiles = st.one_of(
    st.fixed_dictionaries(
        {
            "summary": hostile(answer_items),
            "language_preferences": hostile(answer_items),
            "domains": hostile(st.lists(answer_items, max_size=3)),
            "high_value_signals": hostile(st.lists(answer_items, max_size=2)),
            "low_value_signals": st.lists(answer_items, max_size=2),
            "active_projects": hostile(st.lists(answer_items, max_size=21)),
        },
        optional={"extra": json_values},
    ),
    st.dictionaries(st.sampled_from(PROFILE_FIELDS), json_values),
    json_values,
)

# ---- imported files (import_memories) ---------------------------------------------------------

FORMATS = ("auto", "json", "memory-jsonl", "mem0", "markdown")
IMPORT_SAMPLES = (
    '{"type":"entity","name":"张伟","entityType":"person","observations":["在上海工作","喜欢咖啡"]}\n'
    '{"type":"relation","from":"张伟","to":"Acme","relationType":"works_at"}',
    '{"results":[{"id":"m1","memory":"Prefers oat milk","categories":["food"],"created_at":"2025-01-01T00:00:00Z"}]}',
    '[{"id":"x","content":"以前用 Sublime Text","state":"archived"},{"content":"Has a cat","state":"deleted"}]',
    "## 偏好\n- 2025-01-12：喝咖啡不加糖\n- Uses vim\n",
    '{"format":"mcp-memory-server","version":1,"memories":[]}',
    # An edited rendering (mode edits): ids of the seeds, an unknown and a malformed one, a done
    # todo, a shown line naming memories the file no longer holds.
    "## 偏好\n- 喝咖啡加燕麦奶 <!-- mem_1 -->\n- ✅ 提醒面试 <!-- mem_99 -->\n"
    "- x <!-- mem_-1 -->\n<!-- shown: 1-8 -->\n",
    "## Todos\n- [x] Ship the release <!-- mem_3 --><!-- mem_4 -->\n<!-- shown: 1-3,5,9999999999999 -->\n",
)
TIMES = ("2025-01-01T00:00:00Z", "2025-01-01T08:00:00", "yesterday", "", 1735689600, 1735689600000, 10**30, -(10**20))
entities = st.fixed_dictionaries(
    {"type": hostile(st.sampled_from(("entity", "relation", "observation", "")))},
    optional={
        "name": hostile(text(200, 2001)),
        "entityType": hostile(st.sampled_from(("person", "项目", "organization", "", "x" * 41))),
        "observations": hostile(st.lists(hostile(text(2000, 2001)), max_size=3)),
        "from": hostile(st.sampled_from(WORDS)),
        "to": hostile(text(40, 2001)),
        "relationType": hostile(st.sampled_from(("works_at", "认识", "", " "))),
    },
)
mem0_rows = st.fixed_dictionaries(
    {"memory": hostile(text(2000, 2001))},
    optional={
        "id": hostile(st.one_of(st.sampled_from(("m1", "m2", "")), st.integers(), sized(199, 201))),
        "categories": hostile(tag_lists),
        "created_at": hostile(st.sampled_from(TIMES)),
        "updated_at": hostile(st.sampled_from(TIMES)),
        "state": hostile(st.sampled_from(("active", "archived", "paused", "deleted", "ARCHIVED"))),
        "metadata": hostile(st.dictionaries(st.sampled_from(("category", "categories", "x")), json_values)),
        "role": hostile(st.sampled_from(("user", "assistant", "system"))),
    },
)


def _lines_of(values: list[Any]) -> str:
    return "\n".join(json.dumps(v, ensure_ascii=False) for v in values)


import_data = weighted(
    (3, st.sampled_from(IMPORT_SAMPLES)),
    (3, st.lists(entities, min_size=1, max_size=4).map(_lines_of)),
    (3, st.lists(mem0_rows, max_size=4).map(lambda rows: json.dumps({"results": rows}, ensure_ascii=False))),
    (1, st.lists(mem0_rows, min_size=1, max_size=3).map(_lines_of)),
    (1, st.tuples(st.sampled_from(IMPORT_SAMPLES), hostile_text).map("".join)),
    (1, st.sampled_from(("[" * 5000, '{"results": ' * 3000, "\n\n", "- ", "# 标题"))),
    (2, text(2000, 2001)),
)

# ---- arguments by name -----------------------------------------------------------------------

ARGUMENTS: Mapping[str, Strategy] = {
    "content": text(2000, 2001),
    "query": text(2000, 2001),
    "category": categories,
    "key": keys,
    "importance": units,
    "confidence": units,
    "tags": tag_lists,
    "source": sources,
    "tier": weighted((9, st.sampled_from(("core", "working"))), (1, st.sampled_from(("CORE", "", "archive")))),
    "session_id": sessions,
    "limit": weighted((8, st.integers(1, 50)), (1, st.integers(-5, 260)), (1, st.sampled_from(HUGE_INTS))),
    "ids": id_lists(),
    "order_by": weighted((9, st.sampled_from(ORDERS)), (1, st.sampled_from(("seq", "")))),
    "cursor": cursors,
    "ops": ops,
    "dry_run": st.booleans(),
    "topic": text(200, 201),
    "emotion": emotions,
    "variables": variables,
    "user_message": text(20_000, 20_001),
    "assistant_message": text(20_000, 20_001),
    "profile": profiles,
    "field": weighted((9, st.sampled_from((*PROFILE_FIELDS, "active_projects"))), (1, st.sampled_from(("name", "")))),
    "action": weighted((9, st.sampled_from(("add", "remove", "set"))), (1, st.sampled_from(("delete", "")))),
    "text": text(500, 501),
    "data": import_data,
    "format": weighted((9, st.sampled_from(FORMATS)), (1, st.sampled_from(("jsonl", "", "AUTO")))),
    "mode": weighted((9, st.sampled_from(("add", "edits"))), (1, st.sampled_from(("", "EDITS", "delete")))),
    # A few ids used again and again (retries of the same call, and the same id for other calls),
    # and ids at and over the bound or not visible ASCII.
    "request_id": weighted(
        (6, st.sampled_from(("r1", "r2", "req-2026-11-26-0001"))),
        (1, st.sampled_from(("", " ", "x" * 100, "x" * 101, "同一个", "a b", "r1\n"))),
        (1, hostile_text),
    ),
}
EXTRA_NAMES = ("extra", "id", "contents", "__proto__", "", "query\x00", "limit ")


def tool_arguments(schema: Mapping[str, Any]) -> Strategy:
    """Arguments for one tool: each of its parameters (required ones usually, optional ones half
    the time) valid or hostile, and now and then an argument it does not have."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    values = {name: hostile(ARGUMENTS[name]) for name in properties}  # built once, drawn from often

    @st.composite
    def build(draw: Callable[[Strategy], Any]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for name in properties:
            if draw(st.integers(0, 9)) < (9 if name in required else 5):
                args[name] = draw(values[name])
        if draw(st.integers(0, 14)) == 0:
            args[draw(st.sampled_from(EXTRA_NAMES))] = draw(json_values)
        return args

    return build()


def prompt_arguments(names: tuple[str, ...]) -> Strategy:
    """Prompt arguments are strings on the wire: hostile strings, sometimes missing or extra."""

    @st.composite
    def build(draw: Callable[[Strategy], Any]) -> dict[str, str]:
        args = {n: draw(text(2000, 20_001)) for n in names if draw(st.integers(0, 11)) > 0}
        if draw(st.integers(0, 11)) == 0:
            args[draw(st.sampled_from(EXTRA_NAMES))] = draw(hostile_text)
        return args

    return build()


# ---- resource URIs ---------------------------------------------------------------------------

STATIC = ("memory://stats", "memory://MEMORY.md", "memory://profile", "memory://extraction-log")
TEMPLATES: Mapping[str, Strategy] = {
    "memory://memories/{id}": ids,
    "memory://categories/{category}": categories,
    "memory://sessions/{session_id}": sessions,
}
ODD_URIS = (
    *("", "memory://", "memory://memories/", "memory://memories/mem_1/history", "memory://memories/../stats"),
    *("memory://memories/%2e%2e%2fstats", "memory://STATS", "MEMORY://stats", "memory://stats/", "memory://stats?x=1"),
    *("memory://stats#frag", "file:///etc/passwd", "http://localhost/", "memory://categories/%", "memory://x\x00"),
)


def segment(value: Strategy) -> Strategy:
    """A template's path segment as a client might write it: percent-encoded, or raw."""
    return st.tuples(value, st.booleans()).map(lambda p: quote(p[0], safe="") if p[1] else p[0])


def resource_uris(templates: Mapping[str, Strategy] = TEMPLATES) -> Strategy:
    filled = [segment(value).map(lambda s, t=template: t.split("{")[0] + s) for template, value in templates.items()]
    return weighted((3, st.sampled_from(STATIC)), (8, st.one_of(*filled)), (1, st.sampled_from(ODD_URIS)))


# ---- answers of the client's model (sampling) ------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)  # NaN and Infinity: not JSON


model_items = st.fixed_dictionaries(
    {
        "content": hostile(text(2000, 2001)),
        "category": hostile(categories),
        "importance": hostile(st.one_of(st.integers(-1, 12), units)),
        "source": hostile(sources),
    },
    optional={"tags": hostile(tag_lists), "tier": hostile(st.just("working")), "extra": json_values},
)
extraction = st.lists(model_items, max_size=4).map(lambda items: _dumps({"memories": items}))
# What a model answers: the JSON asked for, fenced or after some words, cut short, another shape,
# prose, or nothing at all.
model_answers = weighted(
    (3, extraction),
    (1, extraction.map(lambda a: f"```json\n{a}\n```")),
    (3, profiles.map(_dumps).map(lambda a: f"Here it is:\n{a}")),
    (1, st.tuples(extraction, st.integers(0, 40)).map(lambda p: p[0][: p[1]])),
    (1, json_values.map(_dumps)),
    (1, hostile_text),
    (1, sized(100_000)),
)
user_messages = st.tuples(st.sampled_from(SIGNALS), hostile_text).map("".join)
