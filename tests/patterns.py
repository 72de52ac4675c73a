"""Every regular expression of the package, found by looking into its modules, and the hostile texts
that `tests/text/test_regex_linear.py` and `benchmarks/redaction.py` run them on.

Patterns are found where they live: module globals that are compiled patterns or `LazyPattern`s,
also inside the tuples, lists, dicts and dataclasses of rule tables (redaction rules, signal
rules). A pattern written inline in a function (`re.search(r"...", text)`) could not be found this
way, so `inline_pattern_calls` lists them and the test refuses any: patterns live at module level.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_memory_server
from mcp_memory_server.text.lazy_pattern import LazyPattern

__all__ = [
    "LONG_RUNS",
    "CpuLimitReached",
    "Found",
    "cpu_limit",
    "hostile_mixes",
    "hostile_texts",
    "inline_pattern_calls",
    "package_patterns",
]


class CpuLimitReached(Exception):
    """What runs inside `cpu_limit` took longer than its CPU seconds."""


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Stop what runs after `seconds` of CPU time with `CpuLimitReached`. The virtual timer and
    its own signal, as pytest-timeout keeps SIGALRM; the regular expression engine checks for
    signals as it runs."""

    def stop(signum: int, frame: Any) -> None:
        raise CpuLimitReached

    previous = signal.signal(signal.SIGVTALRM, stop)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


PACKAGE = Path(mcp_memory_server.__file__).parent
# The functions of `re` that take a pattern's text and run it; `re.escape` builds no pattern.
_RUNNERS = frozenset({"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"})


@dataclasses.dataclass(frozen=True)
class Found:
    where: str  # module.NAME[index].field, the first place the pattern was seen
    pattern: re.Pattern[str]


def _walk(value: object, where: str, seen: set[int]) -> Iterator[Found]:
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, LazyPattern):
        yield Found(where, value.compiled)
    elif isinstance(value, re.Pattern):
        if isinstance(value.pattern, str):
            yield Found(where, value)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            yield from _walk(item, f"{where}[{i}]", seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{where}[{key!r}]", seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), f"{where}.{field.name}", seen)


def package_patterns() -> list[Found]:
    """Each distinct pattern (text and flags) of every module of the package, once."""
    found: dict[tuple[str, int], Found] = {}
    seen: set[int] = set()
    prefix = f"{mcp_memory_server.__name__}."
    for info in sorted(pkgutil.walk_packages([str(PACKAGE)], prefix), key=lambda i: i.name):
        if info.name.endswith(".__main__"):
            continue
        module = importlib.import_module(info.name)
        short = info.name.removeprefix(prefix)
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            for f in _walk(value, f"{short}.{name}", seen):
                found.setdefault((f.pattern.pattern, f.pattern.flags), f)
    return list(found.values())


def inline_pattern_calls() -> list[str]:
    """`re.search(...)`, `re.compile(...)` and the like inside a function body, as file:line."""
    calls: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if (
            path.relative_to(PACKAGE).as_posix() == "text/lazy_pattern.py"
        ):  # compiles the patterns `lazy()` was given, found as those
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "re"
                    and node.func.attr in _RUNNERS
                ):
                    calls.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    return sorted(set(calls))


# Every label the redactor knows, written the ways people write them, and the words the sieve's
# rules start from: each is followed by long runs that almost make a token.
_LABELS = (
    "aws_secret_access_key",
    "AWS_SECRET_KEY",
    "secret access key",
    "twilio_auth_token",
    "password",
    "db_password",
    "passphrase",
    "pwd",
    "pass",
    "密码",
    "密碼",
    "口令",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access-key-secret",
    "client_secret",
    "private key",
    "api key",
    "access token",
    "密钥",
    "秘钥",
    "私钥",
    "令牌",
    "cvv",
    "CSC",
    "安全码",
    "PIN",
    "pin code",
    "Authorization",
    "Authorization: Basic",
    "Authorization: Bearer",
    "Authorization: token",
    "bearer",
    "pw",
    "my password is ",
    "phone",
    "mobile number: ",
    "手机号是",
    "电话",
    "联系方式：",
)
_SEPARATORS = (
    "=",
    ": ",
    " = ",
    "==",
    ":=",
    "=>",
    '"=',
    "**: ",
    " is ",
    " was set to ",
    " for the db is ",
    "是",
    "改成了",
    " ",
)
_PREFIXES = (
    "sk-",
    "sk-proj-",
    "sk-ant-api03-",
    "sk-a-b-",
    "ghp_",
    "github_pat_",
    "glpat-",
    "AKIA",
    "AIza",
    "GOCSPX-",
    "ya29.",
    "xoxb-",
    "xapp-1-",
    "https://hooks.slack.com/services/T",
    "sk_live_",
    "whsec_",
    "SK",
    "SG.",
    "npm_",
    "pypi-AgE",
    "hf_",
    "LTAI",
    "AKID",
    "123456789:AA",
    "eyJ",
    "eyJabcdefghijk.eyJ",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "postgres://user:",
    "https://",
    "[withheld: ",
    "$",
    "%(",
    "<",
    "s k - p r o j - ",
    "sk-proj - ",
    "g h p _ ",
    "+86 ",
    "+1 ",
    "440301",
)
# The runs that follow: digits then a letter (the token fails at its last character), letters,
# a token's alphabet, CamelCase and ALL CAPS, letters and digits alternating, a card's digits.
_RUNS = ("1234567890", "abcdefghij", "aB3/+=_-.~", "AbcDefGhiJ", "ABCDEFGHIJ", "a1b2c3d4e5", "4111 1111 ")
# Repeated separators, whitespace, punctuation, Chinese, and sentences the sieve reads.
_FILLERS = (
    " ",
    "\t",
    "\n",
    "\u3000",
    "-",
    "_",
    ".",
    "=",
    ":",
    "/",
    "*",
    "#",
    "@",
    ",",
    "，",
    "。",
    "'",
    "***\n",
    "\r\n",
    "$1",
    "1.5",
    "passphrase: ",
    "-----BEGIN PRIVATE KEY-----",
    "'",
    '"',
    "`",
    "[",
    "(",
    "<!--",
    "```",
    "- ",
    "1. ",
    "a@b.",
    "a:b@",
    "x=y;",
    "&a=",
    "pass=",
    "password: ",
    "密码是",
    "我是",
    "不是",
    "我喜欢",
    "我在",
    "我的",
    "记住",
    "提醒我",
    "决定",
    "重要",
    "测试数据",
    "中文English混合",
    "I am a ",
    "Alice met Bob. ",
    "i'm ",
    "my wife is ",
    "not ",
    "remember ",
    "忘了",
    "把",
    "别记",
    "不要记住关于",
    "关于",
    "这个不用记",
    "forget ",
    "forget that ",
    "don't save anything about ",
    "off the record ",
    "please ",
    "if ",
    "? ",
    "i like ",
    "we need to ",
    "due ",
    "2024-01-02 ",
    "2024年1月2日",
    "A",
    "Ab",
    "AB1",
    "9",
    "1a",
    "a ",
    "a   ",
    "1 ",
    "ab ",
    "ab:",
    "\u200b",
    "a\u200b",
    "\u00ad",
    "\ufeff",
    "\u202e",
    "аео",
    "ｓｋ－",
    "c2stcHJvai1h",
    "736b2d70726f6a2d",
    "QUFBQUFB",
    "123-45-",
    "440301199001011237",
    "138 0013 ",
    "+",
    "手机",
    "sk-proj-abcd EfG3 ",
    # keyed facts, corrections, emphasis and compound sentences (text/corrections.py, sieve/signals.py)
    "我住在",
    "我不是住在",
    "我在阿里",
    "我老婆叫",
    "其实我是",
    "不是3月1日",
    "更正：",
    "这个很重要：",
    "以后会用到",
    "我住在杭州，在阿里工作，",
    "I live in B",
    "I moved to ",
    "I don't live in ",
    "I'm a data ",
    "my wife is Anna ",
    "not March 1 but ",
    ", not ",
    "I'll need this later",
    "this is important",
    "I live in Berlin, work at SAP and ",
)


def _fill(unit: str, size: int, tail: str = "!") -> str:
    """`unit` repeated to `size` characters, then `tail` (a character no token ends with)."""
    return (unit * (size // len(unit) + 1))[:size] + tail


def hostile_texts(size: int) -> dict[str, str]:
    """Texts of about `size` characters, by name: every label followed by long runs after the
    separators people write, every separator after a few labels, every token prefix followed by
    its alphabet, near-miss tokens repeated, runs of separators, whitespace and Chinese, and each
    of those inside ordinary mixed text."""
    texts: dict[str, str] = {}
    for label in _LABELS:
        for sep, run in zip(_SEPARATORS, _RUNS * 2, strict=False):
            texts[f"{label!r}{sep!r}{run[:4]!r}"] = label + sep + _fill(run, size)
        near_miss = label + "=" + "1234567890" * 4 + "a "  # the 62-character write, over and over
        texts[f"{label!r} repeated"] = _fill(near_miss, size, "")
    for label in ("password", "token", "密码"):
        for sep in _SEPARATORS:
            for run in _RUNS[:3]:
                texts.setdefault(f"{label!r}{sep!r}{run[:4]!r}", label + sep + _fill(run, size))
    for prefix in _PREFIXES:
        for run in _RUNS:
            texts[f"{prefix!r}{run[:4]!r}"] = prefix + _fill(run, size)
        texts[f"{prefix!r} repeated"] = _fill(prefix + "a1B2c3D4e5F6g7H8 ", size)
    for filler in _FILLERS:
        texts[f"{filler!r} repeated"] = _fill(filler, size)
        texts[f"{filler!r} in text"] = "我的 note: " + _fill(filler, size, "") + " and 其他 words."
    return texts


# Whole texts of one run each, for the functions that read a text piece by piece (sentences,
# capitalised words, orders to remember): their pieces are many only in a long text.
LONG_RUNS = (
    "'a ' repeated",
    "'\\u200b' repeated",
    "'c2stcHJvai1h' repeated",
    "'sk-proj-abcd EfG3 ' repeated",
    "'手机' repeated",
    "'Alice met Bob. ' repeated",
    "'记住' repeated",
    "'提醒我' repeated",
    "'忘了' repeated",
    "'不要记住关于' repeated",
    "'forget that ' repeated",
    "'please ' repeated",
    "'我喜欢' repeated",
    "'I am a ' repeated",
    "'我住在杭州，在阿里工作，' repeated",
    "'I live in Berlin, work at SAP and ' repeated",
    "'不是3月1日' repeated",
    "'passphrase: ' repeated",
    "'password: ' repeated",
    "'aws_secret_access_key' repeated",
    "'-----BEGIN PRIVATE KEY-----' repeated",
    "'.' repeated",
    "' ' repeated",
    "'\\n' repeated",
)


def hostile_mixes(size: int, count: int = 12) -> list[str]:
    """Every hostile text, cut short and joined into `count` texts of about `size` characters each.
    Each piece grows with `size`, so a pattern whose time grows with the square of a run's length
    (or faster) shows it here as it would on one long run."""
    names = list(hostile_texts(1))
    per = -(-len(names) // count)
    pieces = hostile_texts(max(1, size // per - 2))
    return ["\n".join(pieces[name] for name in names[i : i + per]) for i in range(0, len(names), per)]
