"""Sampling callbacks standing in for the client's model in tests through the SDK client: one
that answers with a given text, one that refuses, one that never answers (for the timeout)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

Sampler = Callable[[Any, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]]


def answering_with(text: str) -> Sampler:
    async def sample(_: Any, __: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="test")

    return sample


async def refusing(_: Any, __: CreateMessageRequestParams) -> ErrorData:
    return ErrorData(code=-1, message="the user declined")


async def never(_: Any, __: CreateMessageRequestParams) -> CreateMessageResult:
    await anyio.sleep(30)
    raise AssertionError("not reached")
