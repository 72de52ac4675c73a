"""When the profile is synthesised and by what, through the real SDK client: reading it writes
nothing; the client's model writes it at session start and before the sieve when it is due; a
good, garbage, failing or slow answer; rules only for clients that cannot sample."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.profile import sampling
from mcp_memory_server.profile.sampling import SYSTEM
from mcp_memory_server.server import build_server
from mcp_memory_server.server.app import CURRENT
from mcp_memory_server.server.profile_tools import profile_request
from mcp_memory_server.store import Store
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio

Sampler = Callable[[Any, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]]


def _reply(text: str) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model="m")


class Model:
    """The client's model: answers the profile's requests as `behaviour` says (good: a profile
    naming the city the memories give), the sieve's with no memories; records both."""

    def __init__(self, behaviour: str = "good") -> None:
        self.behaviour = behaviour
        self.profile_prompts: list[str] = []
        self.sieve_prompts: list[str] = []

    async def __call__(self, _: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        prompt = params.messages[0].content.text  # type: ignore[union-attr]
        if params.system_prompt != SYSTEM:
            self.sieve_prompts.append(prompt)
            return _reply('{"memories": []}')
        self.profile_prompts.append(prompt)
        if self.behaviour == "garbage":
            return _reply("The user seems nice. {not json")
        if self.behaviour == "fail":
            return ErrorData(code=-1, message="the user declined")
        if self.behaviour == "slow":
            await anyio.sleep(30)
        city = "Berlin" if "Berlin" in prompt else ("杭州" if "杭州" in prompt else "unknown")
        ids = re.findall(r"\[(mem_\d+)\]", prompt)
        item = {"text": f"A backend engineer who lives in {city}", "sources": ids[:1]}
        answer = {
            "summary": item,
            "domains": [{"text": "Backend development", "sources": ids[:1]}],
            "high_value_signals": [{"text": "Deployment decisions", "sources": []}],
            "low_value_signals": [{"text": "Small talk", "sources": []}],
            "language_preferences": {"text": "中文为主", "sources": []},
            "active_projects": [],
        }
        return _reply("```json\n" + json.dumps(answer) + "\n```")


async def _profile(client: Client) -> dict[str, Any]:
    read = await client.read_resource("memory://profile")
    return json.loads(read.contents[0].text)  # type: ignore[union-attr]


MEMORIES = [
    {"content": "我住在杭州", "key": "user.city", "category": "identity", "importance": 0.9},
    {"content": "I prefer concise answers with code examples", "category": "preference", "importance": 0.8},
]


async def test_reading_the_profile_writes_nothing(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        before = await call(client, "list")
        stats = (await client.read_resource("memory://stats")).contents[0].text  # type: ignore[union-attr]
        first = await _profile(client)
        again = await _profile(client)
        assert first["method"] == again["method"] == "deterministic" and "杭州" in first["summary"]["text"]
        assert await call(client, "list") == before and before["total"] == 2
        assert (await client.read_resource("memory://stats")).contents[0].text == stats  # type: ignore[union-attr]
        for query in ("杭州", "concise answers", "profile"):
            hits = (await call(client, "recall", query=query))["hits"]
            assert all(h["category"] != "profile" for h in hits), hits


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_extract_after_an_identity_change_uses_the_refreshed_profile(
    config: Config, segmenter: Segmenter, mode: str
) -> None:
    model = Model()
    async with Client(build_server(config, segmenter), mode=mode, sampling_callback=model) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        await call(
            client, "extract", user_message="帮我看看这个 Go 服务的日志", assistant_message="好的，先看 error 级别"
        )
        assert "lives in 杭州" in model.sieve_prompts[-1] and len(model.profile_prompts) == 1
        assert (await _profile(client))["method"] == "model"
        await call(client, "remember", content="I moved to Berlin", key="user.city", category="identity")
        await call(
            client, "extract", user_message="How do I rotate the Go service logs?", assistant_message="Use logrotate."
        )
        assert len(model.profile_prompts) == 2 and "Berlin" in model.profile_prompts[-1]
        assert "lives in Berlin" in model.sieve_prompts[-1], model.sieve_prompts[-1]
        # Fresh now: the next extract does not ask for the profile again.
        await call(client, "extract", user_message="再看看 Go 的内存占用", assistant_message="用 pprof。")
        assert len(model.profile_prompts) == 2
        profile = await _profile(client)
    assert profile["method"] == "model" and not profile["stale"] and "Berlin" in profile["summary"]["text"]


async def test_session_start_synthesises_a_stale_profile(config: Config, segmenter: Segmenter) -> None:
    async with Client(build_server(config, segmenter)) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
    model = Model()
    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(20):  # in a task of its own after initialize: wait for it
            # The resource is all a client sees of it: polled (ASYNC110 wants an event to wait on).
            while (profile := await _profile(client))["method"] != "model":  # noqa: ASYNC110
                await anyio.sleep(0.05)
    assert len(model.profile_prompts) == 1 and "lives in 杭州" in profile["summary"]["text"]


async def test_extract_waits_for_a_synthesis_under_way(config: Config, segmenter: Segmenter) -> None:
    """Another synthesis holds the store's slot (the session start's, or another call's) when
    `extract` comes: the sieve waits for its profile instead of using the stale one."""
    server = build_server(config, segmenter)
    stores: list[Store] = []

    async def capture(ctx: Any, call_next: Any) -> Any:  # the server's store
        stores.append(CURRENT.get().store)
        return await call_next(ctx)

    server.middleware.append(capture)
    model = Model()
    async with Client(server, mode="legacy", sampling_callback=model) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        await call(client, "refresh_profile")
        await call(client, "remember", content="I moved to Berlin", key="user.city", category="identity")
        store = stores[-1]
        assert sampling.claim(store)
        asked = len(model.profile_prompts)

        async def other_synthesis() -> None:
            await anyio.sleep(0.5)
            answer = await model(None, (await profile_request(store)).params)
            await sampling.keep_answer(store, answer.content.text)  # type: ignore[union-attr]
            sampling.release(store)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(other_synthesis)
            await call(client, "extract", user_message="Go 服务的日志在哪", assistant_message="在 /var/log")
    assert "lives in Berlin" in model.sieve_prompts[-1], model.sieve_prompts[-1]
    assert len(model.profile_prompts) == asked + 1  # the other synthesis' question: none by extract


async def test_a_change_while_the_model_writes_leaves_the_profile_stale(config: Config, segmenter: Segmenter) -> None:
    """A memory about the user written while the model is writing the profile (another client, on
    the same database) is not in what the model was shown: the new profile is stale at once, and
    the next extract asks again."""
    model = Model()
    moved = False

    async def writing_meanwhile(ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        nonlocal moved
        if params.system_prompt == SYSTEM and not moved:
            moved = True
            async with Store(config, segmenter) as other:
                await MemoryService(other).remember(content="我搬到了柏林", key="user.city", category="identity")
        return await model(ctx, params)

    async with Client(build_server(config, segmenter), mode="legacy", sampling_callback=writing_meanwhile) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        await call(client, "extract", user_message="Go 服务的日志在哪", assistant_message="在 /var/log")
        assert moved and "lives in 杭州" in model.sieve_prompts[-1]
        assert (await _profile(client))["stale"]
        await call(client, "extract", user_message="How do I rotate them?", assistant_message="Use logrotate.")
        assert len(model.profile_prompts) == 2 and "柏林" in model.profile_prompts[-1]
        assert not (await _profile(client))["stale"]


@pytest.mark.parametrize("behaviour", ["garbage", "fail", "slow"])
async def test_a_bad_answer_keeps_the_model_s_profile(config: Config, segmenter: Segmenter, behaviour: str) -> None:
    quick = config.with_changes(sampling_timeout_s=0.5)
    async with Client(build_server(quick, segmenter), sampling_callback=Model()) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        written = await call(client, "refresh_profile")
        await call(client, "remember", content="I moved to Berlin", key="user.city", category="identity")
    model = Model(behaviour)
    async with Client(build_server(quick, segmenter), mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(15):  # the call is held no longer than the sampling timeout (x2 here)
            result = await call(client, "extract", user_message="How do I rotate logs?", assistant_message="logrotate")
        profile = await _profile(client)
    assert model.profile_prompts and result["run"]
    # The model's profile stays (stale) rather than rules replacing it; the sieve used it.
    assert profile["method"] == "model" and profile["summary"] == written["summary"] and profile["stale"]
    assert "lives in 杭州" in model.sieve_prompts[-1] if model.sieve_prompts else behaviour == "slow"
    # Rules do not replace it either for a client that cannot sample.
    async with Client(build_server(quick, segmenter)) as client:
        await call(client, "extract", user_message="I prefer tabs", assistant_message="Noted.")
        assert (await _profile(client))["method"] == "model"


async def test_a_garbage_answer_without_a_profile_falls_back_to_rules(config: Config, segmenter: Segmenter) -> None:
    model = Model("garbage")
    async with Client(build_server(config, segmenter), sampling_callback=model) as client:
        for memory in MEMORIES:
            await call(client, "remember", **memory)
        await call(client, "extract", user_message="我喜欢用 Neovim 写 Go", assistant_message="好的")
        profile = await _profile(client)
    assert (
        len(model.profile_prompts) == 1
        and profile["method"] == "deterministic"
        and "杭州" in profile["summary"]["text"]
    )


@pytest.mark.parametrize(
    ("content", "city", "name"),
    [("我叫Harry，住在东京", "东京", "Harry"), ("My name is Harry and I live in Tokyo", "Tokyo", "Harry")],
)
async def test_the_rule_based_profile_takes_the_keyed_value_from_its_clause(
    config: Config, segmenter: Segmenter, content: str, city: str, name: str
) -> None:
    """A keyed memory that says more than its fact (a model's remember with key user.city): the
    profile's city is the city, not 城市 Harry，住在东京."""
    async with Client(build_server(config, segmenter)) as client:
        await call(client, "remember", content=content, key="user.city", category="identity")
        profile = await call(client, "refresh_profile")
    summary = profile["summary"]["text"]
    assert city in summary and name not in summary, summary
