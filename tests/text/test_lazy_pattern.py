"""Patterns compiled on first use behave as `re.compile`d ones, and compile once."""

from __future__ import annotations

import re
import subprocess
import sys

from mcp_memory_server.text.lazy_pattern import lazy

TEXTS = ["记住我喜欢喝咖啡", "Remember that I prefer tea", "我用 Python 写 API，remember 这个", ""]


def test_a_lazy_pattern_matches_as_the_compiled_one() -> None:
    source = r"(咖啡|tea|python)"
    pattern, compiled = lazy(source, re.IGNORECASE), re.compile(source, re.IGNORECASE)
    for text in TEXTS:
        found, expected = pattern.search(text), compiled.search(text)
        assert (found and found.span()) == (expected and expected.span())
        assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in compiled.finditer(text)]
        assert pattern.findall(text) == compiled.findall(text)
        assert pattern.sub("*", text, 1) == compiled.sub("*", text, 1)
        assert bool(pattern.match(text, 1)) == bool(compiled.match(text, 1))
        assert bool(pattern.fullmatch(text)) == bool(compiled.fullmatch(text))


def test_it_compiles_on_first_use_and_then_calls_the_compiled_pattern() -> None:
    pattern = lazy(r"\d+")
    assert "_compiled" not in vars(pattern)
    assert pattern.search("abc 42").group() == "42"  # type: ignore[union-attr]
    compiled = pattern.compiled
    assert compiled is pattern.compiled and compiled.pattern == r"\d+"
    assert pattern.search == compiled.search  # the compiled pattern's own method now


def test_a_bad_pattern_fails_when_used() -> None:
    pattern = lazy("(unclosed")
    try:
        pattern.search("x")
    except re.error:
        return
    raise AssertionError("a bad pattern compiled")


def test_starting_the_server_compiles_no_table_and_loads_no_numpy() -> None:
    # What `jiyi` imports before it answers `initialize`; the tables compile when
    # the sieve or redaction first runs, numpy loads when the search index is built.
    code = (
        "import sys\n"
        "from mcp_memory_server import cli, server\n"
        "from mcp_memory_server.text import redaction as redact\n"
        "from mcp_memory_server.sieve import signal_patterns, signals\n"
        "tables = [*signal_patterns.RULES, *redact._RULES]\n"
        "print(sum('_compiled' in vars(r.pattern) for r in tables), len(tables), 'numpy' in sys.modules)\n"
        "signals.detect_signals('记住：我每天早上喝咖啡。Remember that I prefer tea.')\n"
        "redact.redact('my password: hunter2-Xq9!zzLp')\n"
        "print(sum('_compiled' in vars(r.pattern) for r in tables))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["0", out[1], "False"] and int(out[1]) >= 40
    assert int(out[3]) > 0
