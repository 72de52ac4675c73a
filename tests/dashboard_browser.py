"""For the dashboard's browser tests and screenshots: Debian's Chromium driven by Playwright, a JSON
client of /ui/api for seeding and checking effects, and realistic Chinese, English and mixed memories.

The browser is the system's /usr/bin/chromium (installed by `make browser`); Playwright's own browser
downloads are never used."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}

# (content, key, category, tier, importance, tags): what a real user's memory holds, in Chinese,
# English and both. Enough of them for more than one page of the list (20 a page).
MEMORIES: list[tuple[str, str | None, str, str, float, list[str]]] = [
    ("用户叫李明，是一名后端工程师", "user.name", "identity", "core", 0.9, ["身份"]),
    ("用户住在上海浦东", "user.city", "identity", "core", 0.8, ["城市"]),
    ("用户偏好深色主题，所有编辑器都用 dark mode", None, "preference", "core", 0.7, ["编辑器", "ui"]),
    ("用户喜欢喝乌龙茶，不喝咖啡", None, "preference", "core", 0.6, ["饮食"]),
    ("The user prefers concise answers with code first, explanation after", None, "preference", "core", 0.8, ["style"]),
    ("决定把订单服务从 MySQL 迁移到 PostgreSQL 16", "project.orders.db", "decision", "core", 0.85, ["数据库"]),
    ("Decided to use uv instead of pip-tools for the monorepo", None, "decision", "core", 0.7, ["python", "tooling"]),
    ("Python 项目统一使用 ruff 和 mypy strict，行宽 120", "coding.python", "coding_style", "core", 0.75, ["python"]),
    ("Go code: errors wrapped with %w, no panics in library code", None, "coding_style", "core", 0.6, ["go"]),
    ("周五下班前要提交季度 OKR 自评", None, "todo", "working", 0.6, ["工作"]),
    ("Renew the TLS certificate of api.example.com before March 3", None, "todo", "core", 0.7, ["ops"]),
    ("用户的女儿叫小雨，今年上小学二年级", "family.daughter", "relationship", "core", 0.8, ["家庭"]),
    ("Alice 是用户在柏林的同事，负责支付网关", None, "relationship", "core", 0.5, ["同事"]),
    ("订单服务的 p99 延迟在大促期间超过 800ms，原因是连接池太小", None, "error_patterns", "core", 0.7, ["性能"]),
    ("pytest 报 ResourceWarning 时检查未关闭的 aiosqlite 连接", None, "error_patterns", "core", 0.55, ["测试"]),
    ("用户每天早上七点跑步，周末会去骑行", None, "fact", "core", 0.5, ["运动"]),
    ("The team's standup is at 10:00 Beijing time on weekdays", None, "fact", "core", 0.5, ["meeting"]),
    ("用户正在学习 Rust，目标是重写日志采集 agent", "learning.rust", "skill", "core", 0.6, ["rust", "学习"]),
    ("Deploys: GitHub Actions builds, then Argo CD syncs the k8s cluster", None, "workflow_history", "core", 0.6, []),
    ("发布流程：先打 tag，再跑 CI，最后在 Argo CD 里同步", None, "desktop_sop", "core", 0.55, ["发布"]),
    ("Insight: 缓存命中率低于 80% 时，先查 key 的 TTL 设计", None, "insight", "core", 0.6, ["cache", "缓存"]),
    ("用户对花生过敏", "user.allergy", "identity", "core", 0.95, ["健康"]),
    ("The user's laptop is a ThinkPad X1 running Debian 12", None, "fact", "core", 0.4, ["hardware"]),
    ("更正：团队周会改到了周三下午三点", None, "correction", "core", 0.6, ["会议"]),
    ("正在做的项目：memory-server 的仪表盘 (dashboard)", "project.current", "project_state", "working", 0.65, ["项目"]),
    ("用户读书偏好：科幻小说，最近在读《三体》", None, "preference", "core", 0.45, ["阅读"]),
]
# Values a keyed memory takes later, so its history has entries.
LATER: list[tuple[str, str, str]] = [
    ("user.city", "用户搬到了杭州西湖区", "identity"),
    ("user.city", "用户现在住在杭州滨江，离公司更近", "identity"),
    ("project.orders.db", "决定把订单服务迁移到 PostgreSQL 16，并启用逻辑复制", "decision"),
]


class Api:
    """The dashboard's JSON API as a test sees it (no browser): for seeding and checking effects."""

    def __init__(self, base: str, token: str | None = None) -> None:
        self.base = base.rstrip("/")  # http://127.0.0.1:PORT
        self.token = token

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(f"{self.base}/ui/api{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def post(self, path: str, body: Any) -> Any:
        status, result = self.call("POST", path, body)
        assert status in (200, 201), (path, status, result)
        return result

    def all_memories(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = self.get(f"/memories?limit=100{'&cursor=' + cursor if cursor else ''}")
            items += page["items"]
            if not page["next_cursor"]:
                return items
            cursor = page["next_cursor"]

    def by_content(self, content: str) -> dict[str, Any]:
        found = [m for m in self.all_memories() if m["content"] == content]
        assert len(found) == 1, (content, found)
        return found[0]


def seed(api: Api) -> dict[str, str]:
    """Write MEMORIES and then LATER through the API; the ids by key."""
    ids: dict[str, str] = {}
    for content, key, category, tier, importance, tags in MEMORIES:
        body: dict[str, Any] = {"content": content, "category": category, "tier": tier, "importance": importance}
        body["tags"] = tags
        if key:
            body["key"] = key
        result = api.post("/memories", body)
        assert result["action"] == "created", result
        if key:
            ids[key] = result["id"]
    for key, content, category in LATER:
        result = api.post("/memories", {"content": content, "key": key, "category": category})
        assert (result["action"], result["id"]) == ("updated", ids[key]), result
    return ids


def need_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (make test runs it)")


@contextmanager
def driver() -> Iterator[Any]:
    """Playwright's driver (one per test module: its sync API cannot nest)."""
    from playwright.sync_api import sync_playwright

    need_chromium()
    with sync_playwright() as playwright:
        yield playwright


@contextmanager
def browser_context(
    playwright: Any, profile_dir: Path, lang: str = "en-US", downloads: Path | None = None
) -> Iterator[Any]:
    """Chromium with a fresh profile (its own user-data-dir) at 1280x800, the browser language `lang`."""
    context = playwright.chromium.launch_persistent_context(
        str(profile_dir),
        executable_path=str(CHROMIUM),
        headless=True,
        args=ARGS,
        viewport=VIEWPORT,
        locale=lang,
        accept_downloads=True,
        downloads_path=str(downloads) if downloads else None,
    )
    try:
        yield context
    finally:
        context.close()
