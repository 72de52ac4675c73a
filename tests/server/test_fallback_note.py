"""The note written ahead of the deep channel, through the MCP client: in the user's language, kept
when the client's model does not answer, and gone when the client declines (its user refused to
have the exchange read: a note would keep it word for word)."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from .. import rawdb
from ..calls import call
from ..samplers import never, refusing

pytestmark = pytest.mark.anyio

QUARRELS = [
    ("昨晚又和老公吵了一架，他说我总是翻旧账，我真的很委屈", "翻旧账"),
    ("Had another fight with my husband last night, he says I always bring up the past", "bring up the past"),
]


@pytest.mark.parametrize(("message", "words"), QUARRELS)
async def test_a_declined_extraction_keeps_no_note(
    config: Config, segmenter: Segmenter, message: str, words: str
) -> None:
    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=refusing) as client:
        run = await call(client, "extract", user_message=message, assistant_message="听起来很难受。", session_id="s1")
        listed = await call(client, "list", limit=20)
    assert run["deep"] == "failed" and run["fallback_note"] is None, run
    assert "declined" in run["detail"] and listed["total"] == 0, listed
    for table in ("memories", "memory_archive", "memory_history"):
        assert rawdb.rows(config, f"SELECT count(*) FROM {table} WHERE content LIKE '%{words}%'") == [(0,)], table


@pytest.mark.parametrize(
    ("message", "prefix"),
    [
        ("我下周要去上海出差，帮我想想要带什么", "[对话尚未提取] 用户："),
        ("I fly to Lisbon next week, what should I pack?", "[exchange not yet extracted] user: "),
    ],
)
async def test_the_note_of_an_unanswered_extraction_speaks_the_user_s_language(
    config: Config, segmenter: Segmenter, message: str, prefix: str
) -> None:
    quick = config.with_changes(sampling_timeout_s=0.3)
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=never) as client:
        with anyio.fail_after(10):
            run = await call(client, "extract", user_message=message, assistant_message="OK.", session_id="s1")
        listed = await call(client, "list", limit=20)
    assert run["fallback_note"] is not None, run
    notes = [m["content"] for m in listed["items"] if m["id"] == run["fallback_note"]]
    assert len(notes) == 1 and notes[0].startswith(prefix + message[:20]), notes
