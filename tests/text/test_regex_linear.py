"""No hang on any input: every regular expression of the package, and every function that runs them
on what clients send, takes time in proportion to the text, never more.

The patterns are found in the modules themselves (`tests/patterns.py`), so a new one is checked as
soon as it is written. Each runs (search over the whole text, match and fullmatch at its start) on
hostile texts of 10 KB and 100 KB: long digit and letter runs after every label the redactor
knows, token prefixes followed by their alphabet, near-miss tokens over and over, runs of
separators, blanks, newlines and Chinese. Linear time makes the 100 KB texts about 10x slower; the
bound is 30x (with a floor for times too short to measure), and a pattern that spins for seconds
on one text is stopped and named. Times are the CPU time of the test's thread, which a busy
machine does not inflate. The bounds only catch hangs and quadratic or worse growth:
timings belong to `benchmarks/redaction.py`."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import validate
from mcp_memory_server.server import build_server
from mcp_memory_server.sieve import intents, signals, value
from mcp_memory_server.sieve.sieve import parse_answer
from mcp_memory_server.text import Segmenter, corrections, obfuscation, screening, tokens
from mcp_memory_server.text import redaction as redact
from mcp_memory_server.transfer import foreign_formats as foreign
from mcp_memory_server.transfer import markdown as render

from ..patterns import (
    LONG_RUNS,
    CpuLimitReached,
    cpu_limit,
    hostile_mixes,
    hostile_texts,
    inline_pattern_calls,
    package_patterns,
)

SMALL, LARGE = 10_000, 100_000
RATIO = 30  # linear: about 10
FLOOR = 0.002  # seconds: below this a 10 KB time is noise, not a base to multiply
CPU_LIMIT = 5.0  # CPU seconds for one pattern on one text before it counts as a hang

THE_WRITE = "aws_secret_access_key=123456789012345678901234567890123456789a"  # hung the server


def seconds(work: Callable[[], object]) -> float:
    """The CPU time `work` takes in this thread: unlike the clock on the wall, it does not grow
    when other processes (other test workers, other jobs on the machine) take the cores."""
    with cpu_limit(CPU_LIMIT):
        start = time.thread_time()
        work()
        return time.thread_time() - start


def run_pattern(pattern: re.Pattern[str], text: str) -> Callable[[], object]:
    def work() -> None:
        for _ in pattern.finditer(text):
            pass
        pattern.match(text)
        pattern.fullmatch(text)

    return work


def too_slow(small: Callable[[], object], large: Callable[[], object]) -> str | None:
    """Why the 100 KB run is out of bounds, or None; when out of bounds, measured twice more and
    the fastest runs kept before it is believed (caches and frequency still vary on a busy
    machine; a quadratic pattern is out of bounds every time)."""
    try:
        a, b = seconds(small), seconds(large)
        for _ in range(2):
            if b <= RATIO * max(a, FLOOR) and b <= 2.0:
                break
            a, b = min(a, seconds(small)), min(b, seconds(large))
    except CpuLimitReached:
        return f"more than {CPU_LIMIT} s of CPU"
    if b > RATIO * max(a, FLOOR) or b > 2.0:
        return f"{a * 1000:.1f} ms at 10 KB, {b * 1000:.1f} ms at 100 KB of CPU"
    return None


@pytest.fixture(scope="module")
def mixes() -> dict[int, list[str]]:
    return {SMALL: hostile_mixes(SMALL), LARGE: hostile_mixes(LARGE)}


@pytest.fixture(scope="module")
def long_runs() -> dict[int, list[str]]:
    return {size: [hostile_texts(size)[name] for name in LONG_RUNS] for size in (SMALL, LARGE)}


def test_no_pattern_is_written_inside_a_function() -> None:
    """Patterns live at module level, where the inventory below finds them."""
    assert inline_pattern_calls() == []


def test_the_inventory_finds_every_table() -> None:
    found = {f.where for f in package_patterns()}
    # Every folder's modules are walked (the tables live in text/, sieve/, transfer/, config/ ...).
    assert len(found) >= 140
    for where in (
        "text.redaction._CAMEL",
        "text.redaction._STATEMENTS[0].pattern",
        "text.redaction._PROVIDERS[3].pattern",
        "sieve.value._AMOUNT",
    ):
        assert where in found
    for where in ("text.obfuscation._SPELLED", "text.obfuscation._SPREAD_PREFIX", "text.obfuscation._RUN"):
        assert where in found
    assert {"text.numbers._PHONE", "text.numbers._RESIDENT_ID", "text.numbers._SSN", "text.numbers.CARD"} <= found
    expected = {"sieve.signal_patterns._TODO", "sieve.signal_patterns.FORCED_PREFIXES[2]", "sieve.signals._BOUNDARY"}
    assert expected | {"sieve.sieve._FENCE", "config.parsers.NAMESPACE_PATTERN"} <= found


@pytest.mark.timeout(900)
def test_every_pattern_runs_in_linear_time(mixes: dict[int, list[str]]) -> None:
    slow = []
    for found in package_patterns():
        for i, (small, large) in enumerate(zip(mixes[SMALL], mixes[LARGE], strict=True)):
            why = too_slow(run_pattern(found.pattern, small), run_pattern(found.pattern, large))
            if why is not None:
                slow.append(f"{found.where} on hostile text {i}: {why}")
    assert slow == []


def answered(work: Callable[[str], object]) -> Callable[[str], object]:
    """`work`, for which refusing the text (InvalidInput, ValueError) is an answer too."""

    def run(text: str) -> object:
        try:
            return work(text)
        except (InvalidInput, ValueError) as exc:
            return exc

    return run


# What clients' text goes through: redaction, the sieve's sentences and signals, the value score,
# the model's answer, imported files, the index's normal form.
ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "redact": redact.redact,
    "inspect": screening.inspect,
    "screen_text": screening.screen_text,
    "screen_name": answered(lambda text: validate.screen_name(text, "key")),
    "screen_variables": answered(lambda text: validate.screen_variables({"note": text, text[:100]: 1})),
    "screen": answered(validate.screen),
    "detect_signals": signals.detect_signals,
    "compound_parts": signals.compound_parts,
    "keyed_slot": lambda text: corrections.keyed_slot(text, correction=True),
    "corrected_value": corrections.corrected_value,
    "supersedes": lambda text: corrections.Successor(text, "user.city", "correction").supersedes(
        corrections.Compared(text, None)
    ),
    "is_small_talk": lambda text: signals.is_small_talk(text, ""),
    "detect_intents": intents.detect_intents,
    "intents_withheld": lambda text: intents.detect_intents("不要记住关于我的健康的事。forget that I " + text).withheld(
        text
    ),
    "evaluate": lambda text: value.evaluate(text, category="fact", importance=0.5, source="user", existing=[text]),
    "parse_answer": answered(parse_answer),
    "parse_markdown": render.parse_markdown,
    "detect_format": answered(foreign.detect),
    "fingerprint": tokens.fingerprint,
    "clean": validate.clean,
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_what_clients_send_is_handled_in_linear_time(
    name: str, mixes: dict[int, list[str]], long_runs: dict[int, list[str]]
) -> None:
    entry = ENTRY_POINTS[name]
    slow = []
    texts = [*zip(mixes[SMALL], mixes[LARGE], strict=True), *zip(long_runs[SMALL], long_runs[LARGE], strict=True)]
    for i, (small, large) in enumerate(texts):
        why = too_slow(lambda s=small: entry(s), lambda s=large: entry(s))  # type: ignore[misc]
        if why is not None:
            slow.append(f"hostile text {i}: {why}")
    assert slow == []


@pytest.mark.parametrize("digits", [39, 10_000, 100_000])
def test_a_long_digit_run_after_a_label_is_redacted_at_once(digits: int) -> None:
    """The write that hung the server, and the same with 10 KB and 100 KB of digits: the value of
    the AWS label is 40 characters in the first (withheld as a secret key), longer in the others
    (not a key's shape; nothing withheld)."""
    text = "aws_secret_access_key=" + ("1234567890" * (digits // 10 + 1))[:digits] + "a"
    with cpu_limit(CPU_LIMIT):
        redaction = redact.redact(text)
    if digits == 39:
        assert text == THE_WRITE
        assert redaction.text == "aws_secret_access_key=[withheld: AWS secret key]"
    else:
        assert redaction.withheld == ()


@pytest.mark.anyio
async def test_the_write_that_hung_the_server_is_answered(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("remember", {"content": f"{THE_WRITE} 是测试环境 staging 的密钥"})
            recalled = await client.call_tool("recall", {"query": "staging 测试环境"})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["withheld"] == ["AWS secret key"]
    assert "123456789012345678901234567890123456789a" not in str(recalled.structured_content)
    assert "[withheld: AWS secret key]" in str(recalled.structured_content)


# Texts made for the screening's own patterns and views, each one unit repeated to 10 KB and to
# 100 KB: spelled-out runs (with single and spelled-out blanks), invisible characters between
# letters, look-alike letters, base64 and hex runs, a provider's prefix spread out over and over,
# labels of phone numbers, resident ID and SSN shapes, keys in groups.
CRAFTED = {
    "spelled out": "a ",
    "spelled out, wide blanks": "a   ",
    "spelled digits": "4 1 1 1   ",
    "zero-width between letters": "s\u200b",
    "soft hyphens and bidi marks": "k\u00ad\u202e",
    "look-alike letters": "ѕk-рrој-",
    "full-width": "ｓｋ－ｐｒｏｊ－",
    "base64 run": "QUJD",
    "base64 runs apart": "c2stcHJvai1hQjNk ",
    "hex run": "ab",
    "hex pairs": "ab ",
    "prefix spread out": "s k - p r o j - ",
    "prefix then groups": "sk-proj - abcd EfG3 ",
    "phone labels": "phone: +1 ",
    "Chinese phone labels": "手机号是 138 0013 ",
    "resident ID shapes": "440301199001011237",
    "SSN shapes": "123-45-6789-",
    "passphrase statements": "my password is correcthorsebattery, ",
    "pw labels": "pw for the NAS is ",
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", CRAFTED)
def test_screening_of_long_crafted_text_is_linear(name: str) -> None:
    unit = CRAFTED[name]
    small, large = ((unit * (size // len(unit) + 1))[:size] for size in (SMALL, LARGE))
    slow = [
        f"{entry.__name__}: {why}"
        for entry in (screening.inspect, obfuscation.skeleton)
        if (why := too_slow(lambda e=entry: e(small), lambda e=entry: e(large))) is not None  # type: ignore[misc]
    ]
    assert slow == []
