"""Repeated log records, counted instead of written: a flood of connections must not become a flood
of log lines. Out of file descriptors, asyncio's accept loop once logged the same error with its
traceback 143,139 times in 20 seconds (43 MB of stderr), which hid everything else and could fill
the disk."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["INTERVAL_S", "RepeatFilter", "repeats_counted"]

INTERVAL_S = 10.0  # a message is written at most once this often
_KEYS = 1024  # distinct messages remembered; the least recently seen is forgotten first
_SEEN = "_mcp_memory_repeat_seen"  # set on a record that one RepeatFilter has let through


class RepeatFilter(logging.Filter):
    """Lets a record through when its message (logger, level and text with the arguments filled
    in, plus the exception's type and text) was not written in the last `interval` seconds; the
    others are counted, and the next one written says how many were left out:
    "… (and 5,312 more like it in the last 10 s)". Messages that differ (another session id,
    another count) each get their own allowance, so ordinary logging is untouched."""

    def __init__(self, interval: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._interval = interval
        self._clock = clock
        self._last: OrderedDict[tuple[str, int, str], tuple[float, int]] = OrderedDict()  # -> (written at, left out)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _SEEN, False):  # already let through by this filter on its logger
            return True
        key = (record.name, record.levelno, _text(record))
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self._interval:
            self._last[key] = (last[0], last[1] + 1)
            return False
        self._last[key] = (now, 0)
        self._last.move_to_end(key)
        if len(self._last) > _KEYS:
            self._last.popitem(last=False)
        if last is not None and last[1]:
            record.msg = f"{record.getMessage()} (and {last[1]:,} more like it in the last {now - last[0]:.0f} s)"
            record.args = None
        setattr(record, _SEEN, True)
        return True


def _text(record: logging.LogRecord) -> str:
    try:
        text = record.getMessage()
    except (TypeError, ValueError):  # arguments that do not fit the message: still one key per message
        text = str(record.msg)
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        text += f"\n{type(error).__name__}: {error}"
    return text


@contextmanager
def repeats_counted(loggers: tuple[str, ...] = ()) -> Iterator[RepeatFilter]:
    """One RepeatFilter on every handler of the root logger (stderr, as the command sets it up)
    and on `loggers` (records of the project's own loggers also reach the MCP clients through a
    handler of their own), until the block ends."""
    repeats = RepeatFilter()
    handlers = list(logging.getLogger().handlers)
    targets: list[logging.Filterer] = [*handlers, *(logging.getLogger(name) for name in loggers)]
    for target in targets:
        target.addFilter(repeats)
    try:
        yield repeats
    finally:
        for target in targets:
            target.removeFilter(repeats)
