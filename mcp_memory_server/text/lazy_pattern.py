"""Regular expressions compiled when first used.

The sieve's pattern tables and the redaction rules are large alternations, many of them Chinese;
compiling them all took about 50 ms, which the server paid at start-up before it could answer
`initialize`, although only the first remember or sieve uses them. A `LazyPattern` compiles on
its first match; from then on its methods are the compiled pattern's own, with nothing between.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyPattern", "lazy"]


class LazyPattern:
    """The methods of `re.Pattern[str]` that the tables use; compiling happens on the first
    call. Two threads may both compile it once: the results are equal, the second one stays."""

    _compiled: re.Pattern[str] | None = None

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = re.compile(self.pattern, self.flags)
            # Instance attributes shadow the methods below: later calls go straight to `compiled`.
            vars(self).update(
                _compiled=compiled,
                search=compiled.search,
                match=compiled.match,
                fullmatch=compiled.fullmatch,
                finditer=compiled.finditer,
                findall=compiled.findall,
                sub=compiled.sub,
                split=compiled.split,
            )
        return compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return LazyPattern(pattern, flags)
