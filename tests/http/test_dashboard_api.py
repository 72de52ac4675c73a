"""The dashboard's JSON API end to end: the installed command serving HTTP mode (the dashboard at /ui
beside /mcp, tokens for several namespaces) and the `dashboard` command, driven by raw HTTP and by
the SDK's client. Each test works in a namespace of its own on the shared server."""

from __future__ import annotations

import gzip
import io
import json
import re
import sqlite3
import subprocess
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification

from mcp_memory_server.config import Config
from mcp_memory_server.http.dashboard import UI_DIR

from ..http_server import Served, command, dashboard_server, free_port, http_client, http_server

# One worker runs this module (pytest-xdist): its server starts once.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("dashboard_api")]

NAMESPACES = ("alice", "bob", "pages", "search", "edits", "batch", "transfer", "profile", "log", "notify", "bad")
TOKENS = {ns: f"{ns}-token-0123456789abcdef" for ns in NAMESPACES}
DEFAULTS = Config.from_env({})
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[Served]:
    env = {
        "MCP_MEMORY_TOKENS": ",".join(f"{ns}:{token}" for ns, token in TOKENS.items()),
        "MCP_MEMORY_ALLOWED_HOSTS": "memory.internal",
    }
    with http_server(tmp_path_factory.mktemp("dashboard"), cache_dir, env) as server:
        yield server


def base(served: Served) -> str:
    return f"http://127.0.0.1:{served.port}/ui"


def api(served: Served, namespace: str | None = None, **headers: str) -> httpx2.Client:
    auth = {"Authorization": f"Bearer {TOKENS[namespace]}"} if namespace else {}
    return httpx2.Client(base_url=f"{base(served)}/api", headers=auth | headers, timeout=30)


def ok(response: httpx2.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def refused(response: httpx2.Response, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert isinstance(message, str) and message
    for word in words:
        assert word in message, message
    return message


def add(client: httpx2.Client, content: str, **fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = ok(client.post("/memories", json={"content": content, **fields}), 201)
    return result


def stored(served: Served, namespace: str) -> list[str]:
    db = sqlite3.connect(served.db)
    try:
        rows = db.execute("SELECT content FROM memories WHERE namespace = ? ORDER BY seq", (namespace,))
        return [r[0] for r in rows]
    finally:
        db.close()


# ---- pages and info -------------------------------------------------------------------------


def test_the_page_and_its_files_load_without_a_token(served: Served) -> None:
    with httpx2.Client(timeout=30) as web:
        page = web.get(base(served))
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.content == (UI_DIR / "index.html").read_bytes()
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        files = [p for p in UI_DIR.rglob("*") if p.is_file() and p.suffix in (".js", ".css")]
        assert files, "the dashboard ships its scripts and styles"
        for path in files:
            got = web.get(f"{base(served)}/static/{path.relative_to(UI_DIR).as_posix()}")
            assert got.status_code == 200 and got.content == path.read_bytes()
            kind = "text/javascript" if path.suffix == ".js" else "text/css"
            assert got.headers["content-type"].startswith(kind), path
        outside_files = ("%2e%2e/dashboard.py", "..%2fdashboard.py", "%2e%2e/%2e%2e/pyproject.toml", ".hidden")
        for outside in (*outside_files, "%00.js", "app.js%00.txt", "views%00/add.js"):
            response = web.get(f"{base(served)}/static/{outside}")
            assert response.status_code in (401, 404) and "import" not in response.text, outside
        for sneaky in ("/ui/static/%2e%2e/api/memories", "/ui/static/../api/stats"):
            response = web.get(f"http://127.0.0.1:{served.port}{sneaky}")
            assert response.status_code in (401, 404) and "total" not in response.text, sneaky


def test_info_says_whether_a_token_is_needed_and_whose_namespace(served: Served) -> None:
    with api(served) as anonymous, api(served, "alice") as alice:
        info = ok(anonymous.get("/info"))
        assert info["auth"] is True and info["namespace"] is None
        assert (
            info["limits"]["max_page"] == DEFAULTS.limits.max_page
            and info["limits"]["max_batch"] == DEFAULTS.limits.max_batch
        )
        assert info["limits"]["max_content"] == DEFAULTS.limits.max_content_chars
        assert {"fact", "preference", "project_state"} <= set(info["categories"])
        assert info["tiers"] == ["core", "working"]
        assert ok(alice.get("/info"))["namespace"] == "alice"


def test_unknown_calls_and_methods_answer_json(served: Served) -> None:
    with api(served, "alice") as alice:
        refused(alice.get("/nothing-here"), 404)
        refused(alice.put("/stats", json={}), 405)


# ---- listing, pagination, filters -----------------------------------------------------------

TOPICS = ["咖啡", "tea", "跑步 running", "Rust 编译器", "猫 cat", "hiking 爬山", "jazz 爵士乐", "围棋 Go"]


def test_pages_walk_every_memory_once_and_filters_apply(served: Served) -> None:
    with api(served, "pages") as client:
        made: dict[str, tuple[str, str]] = {}
        for i in range(45):
            category = "preference" if i % 3 == 0 else "fact"
            tier = "working" if i % 5 == 0 else "core"
            topic = TOPICS[i % len(TOPICS)]
            text = f"第{i}条记忆 memory number {i}: 用户提到 {topic}" if i % 2 else f"Memory {i} mentions {topic}"
            result = add(client, text, category=category, tier=tier, tags=[topic.split()[0]])
            assert result["action"] == "created"
            made[result["id"]] = (category, tier)

        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = ok(client.get("/memories", params={"limit": 10, **({"cursor": cursor} if cursor else {})}))
            assert page["total"] == 45 and len(page["items"]) <= 10
            seen += [m["id"] for m in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 5 and len(seen) == len(set(seen)) == 45 and set(seen) == set(made)

        filtered = ok(client.get("/memories", params={"category": "preference", "tier": "working", "limit": 100}))
        expected = {i for i, (c, t) in made.items() if c == "preference" and t == "working"}
        assert filtered["total"] == len(expected) > 0 and {m["id"] for m in filtered["items"]} == expected
        by_importance = ok(client.get("/memories", params={"order": "importance", "limit": 3}))
        assert len(by_importance["items"]) == 3 and by_importance["next_cursor"]

        for params, words in [
            ({"limit": 0}, ("limit", "between 1 and")),
            ({"limit": DEFAULTS.limits.max_page + 1}, ("limit",)),
            ({"limit": "ten"}, ("limit", "whole number")),
            ({"category": "Not A Category!"}, ("category",)),
            ({"tier": "forever"}, ("tier",)),
            ({"order": "random"}, ("order",)),
            ({"cursor": "not-a-cursor"}, ("cursor",)),
            ({"cursor": by_importance["next_cursor"]}, ("cursor",)),  # made for another order
        ]:
            refused(client.get("/memories", params=params), 400, *words)


# ---- search -----------------------------------------------------------------------------------


def test_search_is_the_real_retriever_with_scores(served: Served) -> None:
    with api(served, "search") as client:
        coffee = add(client, "我每天早上喝一杯拿铁咖啡", category="preference")["id"]
        dark = add(client, "The user prefers dark mode in every editor", category="preference")["id"]
        scraper = add(client, "周末用 Python 写一个 web scraper 抓取新闻", category="project_state")["id"]
        for query, wanted in [("咖啡", coffee), ("dark mode", dark), ("Python 爬虫 scraper", scraper)]:
            found = ok(client.get("/search", params={"q": query}))
            # The server runs at its defaults, stage on: hybrid once the background worker has embedded
            # the three memories, keyword before.
            assert found["stage"] in ("keyword", "hybrid", "like") and found["keywords"]
            top = found["hits"][0]
            assert top["id"] == wanted and top["score"] > 0
            assert set(top["breakdown"]) >= {"keyword", "category", "recency", "frequency", "confidence"}
        only = ok(client.get("/search", params={"q": "Python 咖啡 dark", "category": "project_state"}))
        assert [h["id"] for h in only["hits"]] == [scraper]
        detail = ok(client.get(f"/memories/{coffee}"))
        assert detail["memory"]["access_count"] == 0, "searching the dashboard is not a use of the memory"
        refused(client.get("/search", params={"q": "  "}), 400, "q")
        refused(client.get("/search", params={"q": "咖啡", "limit": 51}), 400, "limit")
        refused(client.get("/search", params={"q": "x" * (DEFAULTS.limits.max_query_chars + 1)}), 400, "query")


# ---- one memory: detail, add, edit, history ---------------------------------------------------


def test_edit_keeps_the_history_of_a_keyed_memory(served: Served) -> None:
    with api(served, "edits") as client:
        first = add(client, "用户住在北京", key="user.city", category="identity")
        again = add(client, "用户住在上海", key="user.city", category="identity")
        assert again["id"] == first["id"] and again["action"] == "updated"
        mid = first["id"]

        change = {"content": "The user lives in Shanghai, 浦东新区", "tags": ["城市", "Home"], "importance": 0.9}
        edited = ok(client.patch(f"/memories/{mid}", json=change | {"confidence": 1, "category": "Identity"}))
        memory = edited["memory"]
        assert edited["action"] == "updated" and memory["content"] == change["content"]
        assert memory["tags"] == ["城市", "home"] and memory["importance"] == 0.9 and memory["confidence"] == 1.0
        assert memory["key"] == "user.city" and memory["category"] == "identity"

        detail = ok(client.get(f"/memories/{mid}"))
        assert detail["archived"] is False and detail["memory"] == memory
        assert set(memory) >= {"id", "content", "key", "category", "tier", "importance", "confidence", "source"}
        assert set(memory) >= {"tags", "session_id", "client", "created_at", "updated_at", "last_accessed"}
        assert [(h["content"], h["reason"]) for h in detail["history"]] == [
            ("用户住在北京", "updated"),
            ("用户住在上海", "edited"),
        ]

        same = ok(client.patch(f"/memories/{mid}", json={"content": change["content"]}))
        assert same["action"] == "unchanged" and len(ok(client.get(f"/memories/{mid}"))["history"]) == 2

        other = add(client, "用户的猫叫年糕", key="user.cat", category="relationship")["id"]
        refused(client.patch(f"/memories/{other}", json={"key": "user.city"}), 400, "user.city", mid)
        unkeyed = ok(client.patch(f"/memories/{other}", json={"key": ""}))["memory"]
        assert unkeyed["key"] is None and unkeyed["content"] == "用户的猫叫年糕"
        rekeyed = ok(client.patch(f"/memories/{other}", json={"key": "user.pet"}))["memory"]
        assert rekeyed["key"] == "user.pet"
        assert ok(client.patch(f"/memories/{other}", json={"key": None}))["memory"]["key"] is None


def test_secrets_are_withheld_or_refused_on_add_and_edit(served: Served) -> None:
    token = "ghp_" + "FAKE0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0u"
    with api(served, "edits") as client:
        before = stored(served, "edits")
        refused(client.post("/memories", json={"content": f"token: {token}"}), 400, "nothing was stored")
        mid = add(client, "部署脚本在 ci/deploy.sh，每晚运行一次")["id"]
        refused(client.patch(f"/memories/{mid}", json={"content": f"token: {token}"}), 400)
        assert ok(client.get(f"/memories/{mid}"))["memory"]["content"] == "部署脚本在 ci/deploy.sh，每晚运行一次"
        edited = ok(client.patch(f"/memories/{mid}", json={"content": f"部署脚本在 ci/deploy.sh，用 {token} 拉取仓库"}))
        assert edited["withheld"] == ["GitHub token"] and "[withheld: " in edited["memory"]["content"]
        added = add(client, f"CI uses the token {token} for the nightly mirror job")
        assert added["withheld"] and token not in added["memory"]["content"]
        assert all(token not in text for text in stored(served, "edits"))
        assert len(stored(served, "edits")) == len(before) + 2


def test_bad_input_is_refused_with_nothing_written(served: Served) -> None:
    with api(served, "bad") as client:
        mid = add(client, "用户喜欢 green tea 绿茶")["id"]
        before = ok(client.get(f"/memories/{mid}"))
        refused(client.post("/memories", json={}), 400, "content")
        refused(client.post("/memories", json={"content": "ok text", "tier": "forever"}), 400, "tier")
        refused(client.post("/memories", json={"content": "ok text", "source": "user"}), 400, "source")
        refused(client.post("/memories", json=["content"]), 400, "JSON object")
        refused(client.patch(f"/memories/{mid}", json=["content"]), 400, "JSON object")
        refused(client.patch(f"/memories/{mid}", json={}), 400, "at least one")
        refused(client.patch(f"/memories/{mid}", json={"tier": "working"}), 400, "tier")
        for field, value, words in [
            ("content", "", ("content", "empty")),
            ("content", 42, ("content", "text")),
            ("content", "x" * (DEFAULTS.limits.max_content_chars + 1), ("content", "limit")),
            ("category", "Bad Category!", ("category",)),
            ("key", "k" * 201, ("key", "limit")),
            ("key", 7, ("key",)),
            ("importance", 1.5, ("importance",)),
            ("importance", "high", ("importance", "number")),
            ("confidence", True, ("confidence",)),
            ("tags", "one", ("tags", "list")),
            ("tags", [f"t{i}" for i in range(DEFAULTS.limits.max_tags + 1)], ("tags",)),
            ("tags", ["x" * (DEFAULTS.limits.max_tag_chars + 1)], ("tag",)),
        ]:
            refused(client.post("/memories", json={"content": "ok text", field: value}), 400, *words)
            refused(client.patch(f"/memories/{mid}", json={field: value}), 400, *words)
        refused(client.post("/memories", content=b"{not json", headers=JSON), 400, "JSON")
        refused(client.patch(f"/memories/{mid}", content="é".encode("latin-1"), headers=JSON), 400, "JSON")
        for bad_id in ("mem_999999", "abc", "mem_-1", "mem_" + "9" * 30):
            refused(client.get(f"/memories/{bad_id}"), 404, "mem_12")
            refused(client.patch(f"/memories/{bad_id}", json={"content": "新的内容"}), 404)
        assert ok(client.get(f"/memories/{mid}")) == before
        assert stored(served, "bad") == ["用户喜欢 green tea 绿茶"]


# ---- deleting -------------------------------------------------------------------------------


def test_delete_one_and_many(served: Served) -> None:
    with api(served, "batch") as client:
        ids = [add(client, f"第{i}件待办 todo item {i}", category="todo")["id"] for i in range(6)]
        assert ok(client.delete(f"/memories/{ids[0]}")) == {"deleted": [ids[0]], "not_found": []}
        assert ok(client.delete(f"/memories/{ids[0]}")) == {"deleted": [], "not_found": [ids[0]]}
        result = ok(client.post("/memories/delete", json={"ids": [ids[1], ids[2], ids[0], "mem_99999999", "bogus"]}))
        assert result == {"deleted": [ids[1], ids[2]], "not_found": [ids[0], "mem_99999999", "bogus"]}
        too_many = [*ids[3:], *(f"mem_{n}" for n in range(10_000, 10_000 + DEFAULTS.limits.max_batch))]
        refused(client.post("/memories/delete", json={"ids": too_many}), 400, "limit")
        refused(client.post("/memories/delete", json={"ids": []}), 400, "empty")
        refused(client.post("/memories/delete", json={"ids": ids[3]}), 400, "ids")
        refused(client.post("/memories/delete", json={"ids": ["x" * 41]}), 400, "40")
        refused(client.post("/memories/delete", json={"id": ids[3]}), 400, "unknown")
        assert ok(client.get("/memories"))["total"] == 3
        for mid in ids[:3]:
            refused(client.get(f"/memories/{mid}"), 404)


# ---- export and import ----------------------------------------------------------------------


def test_export_then_import_into_another_server(served: Served, tmp_path: Path, cache_dir: Path) -> None:
    with api(served, "transfer") as client:
        keyed = add(client, "用户的编辑器是 Vim", key="user.editor", category="preference")["id"]
        add(client, "用户的编辑器是 VS Code", key="user.editor", category="preference")
        add(client, "Meeting with the 设计团队 every Tuesday", category="event", tags=["work", "会议"])
        add(client, "The user is allergic to peanuts", category="identity", importance=0.95)
        ok(client.post("/profile", json={"field": "domains", "action": "add", "text": "编辑器与开发工具"}))
        exported = client.get("/export")
        assert exported.status_code == 200, exported.text
        disposition = exported.headers["content-disposition"]
        assert re.fullmatch(r'attachment; filename="memories-\d{4}-\d{2}-\d{2}\.json"', disposition), disposition
        document = exported.json()
        assert document["namespace"] == "transfer" and len(document["memories"]) == 3
        # The profile edit wrote the profile table alone: no memory of its own.
        source = {m["id"]: m for m in ok(client.get("/memories", params={"limit": 100}))["items"]}
        assert [m["category"] for m in source.values()].count("profile") == 0 and len(source) == 3

    with dashboard_server(tmp_path, cache_dir) as other, httpx2.Client(base_url=f"{other.url}/api") as target:
        assert ok(target.get("/info"))["auth"] is False
        report = ok(target.post("/import", content=exported.content, headers=JSON))
        assert report["format"] == "json" and report["items"] == 3 and report["created"] == 3
        assert report["present"] == 0 and sorted(report["ids"]) == sorted(source)
        assert "profile edits added" in report["detail"]
        again = ok(target.post("/import", content=exported.content, headers=JSON))
        assert again["created"] == 0 and again["present"] == 3 and again["ids"] == []
        copied = {m["id"]: m for m in ok(target.get("/memories", params={"limit": 100}))["items"]}
        assert copied == source and ok(target.get("/stats"))["total"] == 3
        history = ok(target.get(f"/memories/{keyed}"))["history"]
        assert [h["content"] for h in history] == ["用户的编辑器是 Vim"]
        domains = [item["text"] for item in ok(target.get("/profile"))["domains"]]
        assert "编辑器与开发工具" in domains
        refused(target.post("/import", content=b'{"format": "something else"}', headers=JSON), 400)
        refused(target.post("/import", content=b"not json", headers=JSON), 400, "format")


IMPORTS = Path(__file__).parent.parent / "data" / "imports"
FILE = {"Content-Type": "application/octet-stream"}


def test_import_reads_every_format_the_cli_reads(tmp_path: Path, cache_dir: Path) -> None:
    """The other tools' files, as the browser sends a picked file: its bytes, format detected or
    chosen; zip and gzip unpacked; the import_memories tool's summary; twice changes nothing."""
    markdown = (IMPORTS / "MEMORY.zh.md").read_bytes()
    jsonl = (IMPORTS / "memory.jsonl").read_bytes()
    mem0 = (IMPORTS / "mem0_get_all.json").read_bytes()
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("export/memories.json", (IMPORTS / "openmemory_memories.json").read_bytes())
    with dashboard_server(tmp_path, cache_dir) as server, httpx2.Client(base_url=f"{server.url}/api") as client:
        first = ok(client.post("/import", content=markdown, headers=FILE))
        assert first["format"] == "markdown" and first["created"] == first["items"] > 0
        contents = {m["content"] for m in ok(client.get("/memories", params={"limit": 100}))["items"]}
        assert any("驾照" in c for c in contents), contents
        assert ok(client.post("/import", content=markdown, headers=FILE))["created"] == 0
        jsonl_report = ok(client.post("/import", content=jsonl, headers=JSON, params={"format": "memory-jsonl"}))
        assert jsonl_report["format"] == "memory-jsonl" and jsonl_report["created"] > 0
        unpacked = ok(client.post("/import", content=gzip.compress(mem0), headers=FILE))
        assert unpacked["format"] == "mem0" and unpacked["created"] > 0
        opened = ok(client.post("/import", content=packed.getvalue(), headers=FILE, params={"format": "auto"}))
        assert opened["format"] == "mem0" and opened["created"] > 0 and opened["detail"]
        counts = ok(client.get("/stats"))
        reports = (first, jsonl_report, unpacked, opened)
        assert counts["total"] + counts["archived"] == sum(r["created"] for r in reports)
        total = counts["total"]

        # Wrong or unknown format, empty, undetectable, damaged: a clear 400, nothing written.
        refused(client.post("/import", content=markdown, headers=FILE, params={"format": "mem0"}), 400)
        refused(client.post("/import", content=jsonl, headers=FILE, params={"format": "csv"}), 400, "csv", "mem0")
        refused(client.post("/import", content=b"  \n", headers=FILE), 400, "empty")
        refused(client.post("/import", content="只是一句话，没有列表".encode(), headers=FILE), 400, "format")
        refused(client.post("/import", content=b"PK\x03\x04broken", headers=FILE), 400, "damaged")
        refused(client.post("/import", content=b"\xff\xfe\x00bad", headers=FILE), 400, "UTF-8")
        assert ok(client.get("/stats"))["total"] == total
        # Raw bytes are for the import only; other writes stay JSON.
        refused(client.post("/memories", content=b'{"content": "bytes"}', headers=FILE), 415)


# ---- profile, extraction log, stats -------------------------------------------------------


def test_profile_view_and_manual_edits(served: Served) -> None:
    with api(served, "profile") as client:
        add(client, "我叫小明，是一名后端工程师", category="identity", importance=0.9)
        add(client, "I prefer concise answers with code examples", category="preference")
        profile = ok(client.get("/profile"))
        assert profile["method"] in ("deterministic", "model") and profile["summary"]["text"]
        edited = ok(client.post("/profile", json={"field": "domains", "action": "add", "text": "分布式系统 systems"}))
        assert {"text": "分布式系统 systems", "sources": [], "manual": True} in edited["domains"]
        summary = "后端工程师 Xiaoming, who likes concise answers"
        edited = ok(client.post("/profile", json={"field": "summary", "action": "set", "text": summary}))
        assert edited["summary"]["text"] == summary and edited["summary"]["manual"] is True
        assert ok(client.get("/profile")) == edited
        for body, words in [
            ({"field": "hobbies", "action": "add", "text": "x"}, ("field",)),
            ({"field": "domains", "action": "set", "text": "x"}, ("add or remove",)),
            ({"field": "summary", "action": "add", "text": "x"}, ("set",)),
            ({"field": "domains", "action": "add", "text": " "}, ("text",)),
            ({"field": "domains", "action": "add", "text": "x" * 501}, ("text",)),
            ({"field": "domains", "action": "add"}, ("text",)),
            ({"field": "domains", "action": "add", "text": 5}, ("text",)),
        ]:
            refused(client.post("/profile", json=body), 400, *words)
        assert ok(client.get("/profile")) == edited
        # Secrets are withheld from the profile as from memories, or the text refused.
        leaky = "部署用的 token 是 sk-test-1234567890abcdefghij，项目 deploy-bot"
        withheld = ok(client.post("/profile", json={"field": "active_projects", "action": "add", "text": leaky}))
        texts = [item["text"] for item in withheld["active_projects"]]
        assert "sk-test-1234567890abcdefghij" not in json.dumps(withheld, ensure_ascii=False)
        assert any("[withheld:" in t and "deploy-bot" in t for t in texts), texts
        refusal = client.post(
            "/profile", json={"field": "summary", "action": "set", "text": "sk-test-1234567890abcdefghijklmnop"}
        )
        refused(refusal, 400, "Withheld")
        assert ok(client.get("/profile"))["summary"] == edited["summary"]


async def test_extraction_log_and_stats(served: Served) -> None:
    async with http_client(served.url, TOKENS["log"]) as mcp:
        result = await mcp.call_tool(
            "extract", {"user_message": "记住：我对花生过敏。", "assistant_message": "好的，我记住了。"}
        )
        assert not result.is_error, result
    with api(served, "log") as client:
        entries = ok(client.get("/extraction-log"))["entries"]
        assert len(entries) == 1
        entry = entries[0]
        assert "花生" in entry["user_preview"] and entry["run"].startswith("run_")
        items = entry["fast"]["items"]
        assert items and items[0]["decision"] == "store" and items[0]["id"]
        assert ok(client.get(f"/memories/{items[0]['id']}"))["memory"]["content"] == items[0]["content"]
        refused(client.get("/extraction-log", params={"limit": 0}), 400, "limit")
        stats = ok(client.get("/stats"))
        listed = ok(client.get("/memories"))
        assert stats["total"] == listed["total"] >= 1
        assert sum(stats["by_category"].values()) == stats["total"]
        assert stats["db_path"] is None and stats["db_bytes"] is None, "behind tokens the database is not described"
    with api(served, "alice") as alice:
        assert ok(alice.get("/extraction-log"))["entries"] == [], "the log stays in its namespace"


# ---- auth and namespaces ----------------------------------------------------------------------

CALLS = [
    ("GET", "/memories", None),
    ("GET", "/memories/mem_1", None),
    ("GET", "/search?q=cat", None),
    ("GET", "/export", None),
    ("GET", "/profile", None),
    ("GET", "/extraction-log", None),
    ("GET", "/stats", None),
    ("POST", "/memories", {"content": "没有令牌写不进去 no token"}),
    ("PATCH", "/memories/mem_1", {"content": "changed"}),
    ("DELETE", "/memories/mem_1", None),
    ("POST", "/memories/delete", {"ids": ["mem_1"]}),
    ("POST", "/import", {"format": "mcp-memory-server", "version": 1, "memories": []}),
    ("POST", "/profile", {"field": "summary", "action": "set", "text": "no"}),
]


def test_every_call_but_info_needs_a_valid_token(served: Served) -> None:
    counts = {ns: len(stored(served, ns)) for ns in NAMESPACES}
    for headers, code in [
        ({}, "invalid_request"),
        ({"Authorization": "Bearer wrong-token-0123456789"}, "invalid_token"),
    ]:
        with api(served, **headers) as client:
            for method, path, body in CALLS:
                response = client.request(method, path, json=body)
                assert response.status_code == 401, (method, path, response.text)
                assert response.json()["error"] == code and response.json()["error_description"]
                assert response.headers["www-authenticate"].startswith("Bearer")
                assert response.headers["cache-control"] == "no-store", (method, path)
                assert "frame-ancestors 'none'" in response.headers["content-security-policy"], (method, path)
    assert {ns: len(stored(served, ns)) for ns in NAMESPACES} == counts


def test_namespaces_are_isolated(served: Served) -> None:
    with api(served, "alice") as alice, api(served, "bob") as bob:
        secret = add(alice, "爱丽丝的猫叫年糕 Alice's cat is called Niangao", key="alice.cat")["id"]
        refused(bob.get(f"/memories/{secret}"), 404)
        assert ok(bob.get("/search", params={"q": "年糕 Niangao"}))["hits"] == []
        assert secret not in {m["id"] for m in ok(bob.get("/memories", params={"limit": 100}))["items"]}
        refused(bob.patch(f"/memories/{secret}", json={"content": "Bob was here"}), 404)
        assert ok(bob.delete(f"/memories/{secret}"))["not_found"] == [secret]
        assert ok(bob.post("/memories/delete", json={"ids": [secret]}))["deleted"] == []
        assert "年糕" not in bob.get("/export").text
        bobs = add(bob, "Bob keeps his own note 鲍勃的笔记", key="alice.cat")
        assert bobs["action"] == "created", "keys are per namespace"
        # Ids are counted per namespace: the same id may name a memory in each, each its own.
        assert ok(bob.get(f"/memories/{bobs['id']}"))["memory"]["content"] == "Bob keeps his own note 鲍勃的笔记"
        assert ok(alice.get(f"/memories/{secret}"))["memory"]["content"].startswith("爱丽丝的猫")
        assert ok(alice.get("/stats"))["total"] == len(stored(served, "alice"))


# ---- browser safety ---------------------------------------------------------------------------


def test_host_and_origin_are_checked(served: Served) -> None:
    port = served.port
    with api(served, "alice") as alice:
        assert alice.get("/stats", headers={"Host": f"memory.internal:{port}"}).status_code == 200
        for path in ("/stats", "/info"):
            refused(alice.get(path, headers={"Host": f"evil.example:{port}"}), 421, "Host")
        with httpx2.Client(timeout=30) as web:
            assert web.get(base(served), headers={"Host": f"evil.example:{port}"}).status_code == 421
            # the Host check comes before the token check: a rebound page learns nothing from a 401
            refused(web.get(f"{base(served)}/api/stats", headers={"Host": f"evil.example:{port}"}), 421, "Host")
        before = len(stored(served, "alice"))
        foreign = {"Origin": "http://evil.example"}
        refused(alice.post("/memories", json={"content": "来自别的网站"}, headers=foreign), 403, "evil.example")
        refused(alice.delete("/memories/mem_1", headers=foreign), 403)
        own = {"Origin": f"http://127.0.0.1:{port}"}
        assert (
            alice.post("/memories", json={"content": "来自本站页面 from our own page"}, headers=own).status_code == 201
        )
        assert len(stored(served, "alice")) == before + 1


def test_without_tokens_a_cross_site_form_cannot_write_and_bodies_are_capped(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_MAX_BODY": "65536"}
    with dashboard_server(tmp_path, cache_dir, env) as server, httpx2.Client(base_url=f"{server.url}/api") as client:
        big = b'{"content": "' + "长".encode() * 25_000 + b'"}'
        refused(client.post("/memories", content=big, headers=JSON), 413, "MCP_MEMORY_MAX_BODY")

        def chunks() -> Iterator[bytes]:  # no Content-Length: the size is counted as the body arrives
            yield b'{"content": "'
            yield b"x" * 70_000
            yield b'"}'

        refused(client.post("/import", content=chunks(), headers=JSON), 413)
        assert ok(client.get("/info"))["namespace"] == ""
        form = client.post("/memories", data={"content": "表单写入 form post"})
        refused(form, 415, "application/json")
        plain = client.post(
            "/memories", content=b'{"content": "text/plain post"}', headers={"Content-Type": "text/plain"}
        )
        refused(plain, 415)
        refused(client.post("/memories/delete", content=b'{"ids": ["mem_1"]}'), 415)
        assert ok(client.get("/memories"))["total"] == 0
        assert add(client, "同一台机器上的页面可以写 JSON")["action"] == "created"
    assert (
        "dashboard" in server.stderr.read_text() and '"POST /ui/api/memories HTTP/1.1" 201' in server.stderr.read_text()
    )


def test_the_dashboard_refuses_a_public_address_without_tokens(tmp_path: Path, cache_dir: Path) -> None:
    env = {"MCP_MEMORY_DB": str(tmp_path / "public.db"), "MCP_MEMORY_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin"}
    done = subprocess.run(
        [command(), "dashboard", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "MCP_MEMORY_TOKENS" in done.stderr and "--allow-unauthenticated" in done.stderr
    assert not (tmp_path / "public.db").exists()


def test_the_dashboard_command_with_tokens(tmp_path: Path, cache_dir: Path) -> None:
    token = "solo-token-0123456789abcdef"
    env = {"MCP_MEMORY_TOKENS": f"solo:{token}"}
    with dashboard_server(tmp_path, cache_dir, env) as server, httpx2.Client(base_url=f"{server.url}/api") as client:
        assert ok(client.get("/info"))["auth"] is True
        refused(client.get("/memories"), 401)
        assert client.get("/memories").headers["cache-control"] == "no-store"
        assert "default-src 'self'" in client.get("/memories").headers["content-security-policy"]
        auth = {"Authorization": f"Bearer {token}"}
        created = ok(client.post("/memories", json={"content": "独立的仪表盘 standalone"}, headers=auth), 201)
        assert ok(client.get("/info", headers=auth))["namespace"] == "solo"
        listed = ok(client.get("/memories", headers=auth))["items"]
        assert [m["id"] for m in listed] == [created["id"]] and listed[0]["client"] == "dashboard"


# ---- the dashboard and MCP clients on one server ------------------------------------------


async def test_dashboard_writes_reach_mcp_clients_and_back(served: Served) -> None:
    updated: list[str] = []
    stats = anyio.Event()

    async def inbox(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updated.append(message.params.uri)
            if message.params.uri == "memory://stats":
                stats.set()

    async with http_client(served.url, TOKENS["notify"], mode="legacy", message_handler=inbox) as mcp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await mcp.subscribe_resource("memory://stats")
        with api(served, "notify") as client:
            mid = add(client, "用户下个月去京都旅行 trip to Kyoto", category="event")["id"]
            with anyio.fail_after(10):
                await stats.wait()
            assert "memory://stats" in updated
            found = await mcp.call_tool("recall", {"query": "京都"})
            assert found.structured_content and found.structured_content["hits"][0]["id"] == mid
            remembered = await mcp.call_tool("remember", {"content": "用户喜欢抹茶 matcha", "category": "preference"})
            assert remembered.structured_content
            made = remembered.structured_content["id"]
            assert ok(client.get(f"/memories/{made}"))["memory"]["content"] == "用户喜欢抹茶 matcha"
            assert ok(client.get("/search", params={"q": "抹茶"}))["hits"][0]["id"] == made
            stats = anyio.Event()
            assert ok(client.delete(f"/memories/{mid}"))["deleted"] == [mid]
            with anyio.fail_after(10):
                await stats.wait()
            gone = await mcp.call_tool("recall", {"query": "京都"})
            assert gone.structured_content and gone.structured_content["hits"] == []
    assert served.url.replace("/mcp", "/ui") in served.stderr.read_text(), "HTTP mode logs the dashboard's URL"
