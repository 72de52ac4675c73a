"""One fact has one key slot however a client spells its key (text/keys.py): through the real
SDK client, in English and Chinese, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from mcp_memory_server.config import Config
from mcp_memory_server.server import build_server
from mcp_memory_server.text import Segmenter

from ..calls import call

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

# user.city as the attack wrote it: fullwidth letters, a zero-width space, a soft hyphen, a
# Cyrillic letter, another case, a byte-order mark and a right-to-left mark.
SPELLINGS = (
    "user.city",
    "ｕｓｅｒ．ｃｉｔｙ",
    "user.ci\u200bty",
    "user.ci\u00adty",
    "user.\u0441ity",
    "User.CITY",
    "\ufeffuser.city\u200f",
)


@pytest.fixture
async def client(config: Config, segmenter: Segmenter) -> AsyncIterator[Client]:
    async with Client(build_server(config, segmenter)) as connected:
        yield connected


async def test_every_spelling_of_a_key_names_one_slot(client: Client) -> None:
    cities = ["Berlin", "Hamburg", "München", "杭州", "北京", "上海", "深圳"]
    answers = [
        await call(client, "remember", content=f"The user lives in {city}", key=spelt, category="identity")
        for spelt, city in zip(SPELLINGS, cities, strict=True)
    ]
    assert answers[0]["action"] == "created"
    assert [a["action"] for a in answers[1:]] == ["updated"] * 6
    assert {a["id"] for a in answers} == {answers[0]["id"]}
    listed = await call(client, "list", category="identity")
    assert listed["total"] == 1
    assert listed["items"][0]["key"] == "user.city"
    assert listed["items"][0]["content"] == "The user lives in 深圳"


async def test_chinese_keys_keep_their_characters_and_fold_width_and_marks(client: Client) -> None:
    first = await call(client, "remember", content="我住在杭州", key="用户.城市", category="identity")
    second = await call(client, "remember", content="我搬到了上海", key="用户\u200b．城市", category="identity")
    assert second["id"] == first["id"] and second["action"] == "updated"
    listed = await call(client, "list", category="identity")
    assert [(m["key"], m["content"]) for m in listed["items"]] == [("用户.城市", "我搬到了上海")]


async def test_apply_changes_finds_a_slot_in_any_spelling(client: Client) -> None:
    stored = await call(client, "remember", content="I work at Acme", key="user.employer", category="identity")
    changed = await call(
        client,
        "apply_changes",
        ops=[
            {
                "key": "USER.EMPL\u043eYER",
                "action": "add",
                "category": "identity",
                "payload": "I work at Initech",
                "importance": 7,
                "source": "user",
            },
        ],
    )
    assert changed["applied"][0]["action"] == "updated"
    assert changed["applied"][0]["id"] == stored["id"]
    deleted = await call(
        client, "apply_changes", ops=[{"key": "ｕｓｅｒ.employer", "action": "del", "category": "identity"}]
    )
    # The slot names the memory; a model's del of a memory this new is refused by the keep rules.
    refused = deleted["applied"][0]
    assert (refused["key"], refused["action"], refused["id"]) == ("ｕｓｅｒ.employer", "kept", stored["id"])
    assert refused["reason"].startswith("keep rule 'recent'")


async def test_a_key_spelt_like_an_id_is_refused_and_ids_stay_ids(client: Client) -> None:
    stored = await call(client, "remember", content="我喜欢喝拿铁", category="preference")
    for spelt in (stored["id"], stored["id"].upper(), "mem_7"):
        result = await client.call_tool("remember", {"content": "I like espresso", "key": spelt})
        assert result.is_error
        assert "spelt like a memory id" in result.content[0].text  # type: ignore[union-attr]
    # An id in apply_changes names exactly its memory, which keeps having no key slot.
    changed = await call(
        client,
        "apply_changes",
        ops=[
            {
                "key": stored["id"],
                "action": "add",
                "category": "preference",
                "payload": "我喜欢喝美式",
                "importance": 6,
                "source": "user",
            }
        ],
    )
    assert (changed["applied"][0]["action"], changed["applied"][0]["id"]) == ("updated", stored["id"])
    listed = await call(client, "list", category="preference")
    assert [(m["id"], m["key"], m["content"]) for m in listed["items"]] == [(stored["id"], None, "我喜欢喝美式")]
    # mem_001 is a key slot, not mem_1 (an id in another spelling names no memory).
    slot = await call(
        client,
        "apply_changes",
        ops=[
            {
                "key": "mem_001",
                "action": "add",
                "category": "preference",
                "payload": "I drink green tea",
                "importance": 5,
                "source": "user",
            }
        ],
    )
    assert slot["applied"][0]["action"] == "created" and slot["applied"][0]["id"] != stored["id"]
