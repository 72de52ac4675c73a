"""The benchmark driver for the official reference memory server, run against the real npx package."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.official import OfficialServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not OfficialServer.available(), reason="npx cannot start @modelcontextprotocol/server-memory"),
]


async def test_load_and_search(tmp_path: Path) -> None:
    async with OfficialServer(tmp_path) as official:
        await official.noop()
        await official.load(
            [
                ("m1", "我每天早上喝一杯拿铁咖啡"),
                ("m2", "I write code in Python"),
                ("m3", "I type Chinese with 雾凇拼音 on Rime"),
            ],
            batch_size=2,
        )
        assert await official.search("咖啡") == ["m1"]
        assert await official.search("PYTHON") == ["m2"]  # case-insensitive substring
        assert await official.search("Do I drink coffee in the morning?") == []
        with pytest.raises(ValueError, match="already stored"):
            await official.load([("m2", "again")])
    assert (tmp_path / "memory.jsonl").exists()
