"""Ids and statistics tell one namespace nothing about the others: the installed command serving
HTTP with two tokens of two namespaces over one database (an SQLite file, and a PostgreSQL
database), driven by the SDK's client and the dashboard's API. Each namespace counts its own
memory ids (mem_1, mem_2, ... whatever the other writes meanwhile), an id names only the memory of
the namespace asking, and a namespace's statistics stay the same while the other writes."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ..calls import call
from ..http_server import Served, http_client, http_server

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"


@pytest.fixture
def served(tmp_path: Path, cache_dir: Path, backend: str, request: pytest.FixtureRequest) -> Iterator[Served]:
    env = {"MCP_MEMORY_TOKENS": f"alice:{ALICE},bob:{BOB}", "MCP_MEMORY_SEMANTIC": "off"}
    if backend == "postgresql":
        env["MCP_MEMORY_DB"] = request.getfixturevalue("pg_db")
    with http_server(tmp_path, cache_dir, env) as server:
        yield server


def dashboard(served: Served, token: str) -> httpx2.Client:
    return httpx2.Client(
        base_url=f"http://127.0.0.1:{served.port}/ui/api", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


async def _read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    text = result.contents[0].text  # type: ignore[union-attr]
    return json.loads(text) if uri != "memory://MEMORY.md" else text


async def _remember(client: Client, content: str, **args: Any) -> str:
    result = await call(client, "remember", content=content, **args)
    assert result["action"] == "created", result
    return str(result["id"])


async def _content(client: Client, memory_id: str) -> str:
    return str((await _read(client, f"memory://memories/{memory_id}"))["content"])


async def _missing(client: Client, memory_id: str) -> None:
    with pytest.raises(MCPError, match=f"no memory has the id '{memory_id}'"):
        await client.read_resource(f"memory://memories/{memory_id}")


def _op(key: str, payload: str, category: str) -> dict[str, Any]:
    return {"action": "add", "key": key, "payload": payload, "category": category, "importance": 6, "source": "user"}


def _archived_file(export: dict[str, Any], number: int, content: str) -> str:
    """A file of our own format holding one archived memory of id mem_<number>: how a memory
    reaches the archive through the interface without waiting for cleanup or session expiry."""
    return json.dumps(
        {
            "format": export["format"],
            "version": export["version"],
            "memories": [],
            "archived": [
                {
                    "id": f"mem_{number}",
                    "content": content,
                    "key": None,
                    "category": "fact",
                    "tier": "core",
                    "importance": 0.6,
                    "confidence": 0.9,
                    "source": "user",
                    "tags": [],
                    "session_id": None,
                    "client": None,
                    "created_at": "2026-01-05T08:00:00.000000+00:00",
                    "updated_at": "2026-01-05T08:00:00.000000+00:00",
                    "last_accessed": "2026-01-06T08:00:00.000000+00:00",
                    "access_count": 1,
                    "archived_at": "2026-02-01T08:00:00.000000+00:00",
                    "archive_reason": "cleanup: unused",
                    "history": [],
                }
            ],
        },
        ensure_ascii=False,
    )


async def test_each_namespace_counts_its_own_ids_and_an_id_names_only_its_own_memory(served: Served) -> None:
    async with http_client(served.url, ALICE) as alice, http_client(served.url, BOB) as bob:
        # Interleaved writes of every kind: Alice's ids run on from 1 whatever Bob writes between.
        assert await _remember(alice, "我每天早上喝一杯乌龙茶", category="preference") == "mem_1"
        assert await _remember(bob, "Bob plays the saxophone in a jazz band", category="hobby") == "mem_1"
        assert await _remember(bob, "鲍勃住在北京朝阳区", category="identity") == "mem_2"
        assert await _remember(alice, "I run along the river every morning, 每天早上跑步") == "mem_2"
        bulk = await call(bob, "import_memories", data="\n".join(f"- Bob note {i} 笔记 {i}" for i in range(5)))
        assert bulk["ids"] == [f"mem_{n}" for n in range(3, 8)]
        added = await call(alice, "apply_changes", ops=[_op("user.editor", "Alice 用 Vim 写 Go 代码", "preference")])
        assert [o["id"] for o in added["applied"]] == ["mem_3"]
        with dashboard(served, ALICE) as alice_api:
            posted = alice_api.post("/memories", json={"content": "Alice's deploy window is Thursday 周四晚上"})
            assert posted.status_code == 201 and posted.json()["id"] == "mem_4", posted.text
        assert await _remember(bob, "Bob prefers green tea over coffee", category="preference") == "mem_8"

        # The same id names each namespace's own memory, in every place that takes an id.
        assert await _content(alice, "mem_1") == "我每天早上喝一杯乌龙茶"
        assert await _content(bob, "mem_1") == "Bob plays the saxophone in a jazz band"
        await _missing(alice, "mem_8")  # only Bob has an eighth memory
        with dashboard(served, ALICE) as alice_api, dashboard(served, BOB) as bob_api:
            assert alice_api.get("/memories/mem_2").json()["memory"]["content"].startswith("I run along")
            assert bob_api.get("/memories/mem_2").json()["memory"]["content"] == "鲍勃住在北京朝阳区"
            assert alice_api.get("/memories/mem_5").status_code == 404

        # forget: Bob's mem_1 goes, Alice's stays.
        assert (await call(bob, "forget", ids=["mem_1"]))["deleted"] == ["mem_1"]
        await _missing(bob, "mem_1")
        assert await _content(alice, "mem_1") == "我每天早上喝一杯乌龙茶"
        # apply_changes by id: Alice's mem_2 takes the new value, Bob's mem_2 keeps its own.
        changed = await call(
            alice,
            "apply_changes",
            ops=[_op("mem_2", "I cycle along the river every morning, 每天早上骑车", "fact")],
        )
        assert [(o["id"], o["action"]) for o in changed["applied"]] == [("mem_2", "updated")]
        assert await _content(alice, "mem_2") == "I cycle along the river every morning, 每天早上骑车"
        assert await _content(bob, "mem_2") == "鲍勃住在北京朝阳区"
        # A model's del names Bob's own mem_2 (kept: younger than 7 days); Bob's forget deletes it.
        kept = await call(bob, "apply_changes", ops=[{"action": "del", "key": "mem_2", "category": "identity"}])
        assert [(o["id"], o["action"]) for o in kept["applied"]] == [("mem_2", "kept")]
        assert (await call(bob, "forget", ids=["mem_2"]))["deleted"] == ["mem_2"]
        await _missing(bob, "mem_2")
        assert (await _read(alice, "memory://memories/mem_2"))["history"][0]["content"].startswith("I run along")
        # A number is never handed out again in its namespace, after a delete either.
        assert await _remember(bob, "Bob's cat is called 小米") == "mem_9"

        # restore: each namespace's archived mem_20 comes back as its own, under the same id.
        with dashboard(served, ALICE) as alice_api:
            export = alice_api.get("/export").json()
        assert [m["id"] for m in export["memories"]] == ["mem_1", "mem_2", "mem_3", "mem_4"]
        await call(alice, "import_memories", data=_archived_file(export, 20, "Alice 的旧车是红色的"), format="json")
        await call(bob, "import_memories", data=_archived_file(export, 20, "Bob's old bike was blue"), format="json")
        await _missing(alice, "mem_20")
        assert (await call(alice, "restore", ids=["mem_20"]))["restored"] == ["mem_20"]
        assert await _content(alice, "mem_20") == "Alice 的旧车是红色的"
        await _missing(bob, "mem_20")  # Bob's is still archived
        assert (await call(bob, "restore", ids=["mem_20"]))["restored"] == ["mem_20"]
        assert await _content(bob, "mem_20") == "Bob's old bike was blue"
        assert await _content(alice, "mem_20") == "Alice 的旧车是红色的"
        # The imported number is never handed out again either.
        assert await _remember(alice, "Alice 的新车是白色的 (a white car)") == "mem_21"

        # A listing's cursor holds the last item's number, nothing of the database's own keys.
        first = await call(alice, "list", limit=2, order_by="created")
        cursor = first["next_cursor"]
        order, _, number = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        assert order == "created" and f"mem_{number}" == first["items"][-1]["id"]
        rest = await call(alice, "list", limit=50, order_by="created", cursor=cursor)
        listed = [m["id"] for m in first["items"] + rest["items"]]
        assert sorted(listed) == sorted(["mem_1", "mem_2", "mem_3", "mem_4", "mem_20", "mem_21"])

        # Sieve runs are counted per namespace too.
        ran = await call(alice, "extract", user_message="记住：我对花生过敏。", assistant_message="好的，记下了。")
        assert ran["run"] == "run_1"
        ran = await call(
            bob, "extract", user_message="Remember: I'm allergic to shellfish.", assistant_message="Noted."
        )
        assert ran["run"] == "run_1"
        assert [e["run"] for e in await _read(bob, "memory://extraction-log")] == ["run_1"]


async def test_a_namespaces_stats_do_not_move_while_another_writes(served: Served) -> None:
    async with http_client(served.url, ALICE) as alice, http_client(served.url, BOB) as bob:
        await _remember(alice, "Alice 喜欢爵士乐 and old vinyl records", category="preference")
        await _remember(alice, "Alice works on the billing service 计费服务")
        before = await _read(alice, "memory://stats")
        with dashboard(served, ALICE) as alice_api:
            dashboard_before = alice_api.get("/stats").json()
        assert before["total"] == 2 and before["db_path"] is None and before["db_bytes"] is None
        assert dashboard_before == before

        for i in range(50):
            text = f"Bob 的第 {i} 条笔记: deployment checklist item {i}" if i % 2 else f"Bob note {i}: 会议纪要 {i}"
            await _remember(bob, text, category="note")
        assert (await _read(bob, "memory://stats"))["total"] == 50

        assert await _read(alice, "memory://stats") == before
        with dashboard(served, ALICE) as alice_api:
            assert alice_api.get("/stats").json() == dashboard_before
        assert await _remember(alice, "Alice's third memory 第三条") == "mem_3"
