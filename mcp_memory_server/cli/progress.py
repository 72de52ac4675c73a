"""A one-line progress bar for long imports and exports on the terminal: drawn on stderr when it is a
terminal, silent otherwise (a pipe or a file gets no carriage returns), and never on stdout, which
may carry the export itself."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Bar"]

_WIDTH = 30


class Bar:
    """`await bar(done, total)` redraws the line when the shown percentage changes; `close()` ends it."""

    def __init__(self, label: str, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self._terminal(self.stream) if enabled is None else enabled
        self.label = label
        self._shown: tuple[int, bool] | None = None
        self._drawn = False

    @staticmethod
    def _terminal(stream: TextIO) -> bool:
        try:
            return stream.isatty()
        except (AttributeError, ValueError):  # closed or not a real stream
            return False

    def line(self, done: int, total: int) -> str:
        """What the bar shows for `done` of `total`: `label [#####.....]  50% 500/1,000`."""
        share = min(done / total, 1.0) if total > 0 else 1.0
        filled = round(share * _WIDTH)
        return f"{self.label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {share:4.0%} {done:,}/{total:,}"

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        percent = int(100 * done / total) if total > 0 else 100
        state = (percent, done >= total)
        if state == self._shown:
            return
        self._shown = state
        self.stream.write("\r" + self.line(done, total) + "\x1b[K")  # erase what a longer line left
        self.stream.flush()
        self._drawn = True

    async def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def close(self) -> None:
        """End the bar's line, so that what is printed next starts on its own."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
