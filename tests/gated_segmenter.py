"""A real segmenter whose dictionary loads only when the test opens its gate: for what the server
does before jieba is ready."""

from __future__ import annotations

import threading
from pathlib import Path

from mcp_memory_server.text import Segmenter


class GatedSegmenter(Segmenter):
    """A real segmenter whose loading waits for the test to open the gate (60 s at most)."""

    def __init__(self, cache_dir: Path) -> None:
        super().__init__(cache_dir)
        self.gate = threading.Event()

    def _load(self) -> None:
        self.gate.wait(60)
        super()._load()
