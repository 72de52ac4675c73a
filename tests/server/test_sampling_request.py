"""What the server asks of the client's model, as the client sees it: the deep channel's request
and the profile's, at temperature 0.1 and the server's token bound, in both protocol eras."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.config.limits import MAX_SAMPLED_TOKENS
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_sampling_request_is_at_temperature_0_1_within_the_token_bound(
    config: Config, segmenter: Segmenter, mode: str
) -> None:
    asked: list[CreateMessageRequestParams] = []

    async def model(_: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="[]"), model="m")

    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=model) as client:
        await call(client, "remember", content="我住在杭州", key="user.city", category="identity", importance=0.9)
        await call(
            client, "extract", user_message="我最近在学 Rust，想写个命令行工具", assistant_message="可以从 clap 开始。"
        )
        await call(client, "extract", user_message="I switched my editor to Helix", assistant_message="Nice choice.")
    # The profile's request (the first extract finds it due) and one deep request per extract.
    assert len(asked) == 3, [p.system_prompt for p in asked]
    assert {p.temperature for p in asked} == {0.1}
    assert {p.max_tokens for p in asked} == {MAX_SAMPLED_TOKENS}
    assert all(p.system_prompt for p in asked)
