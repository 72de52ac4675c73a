"""Writes tests/data/schema_v1.db with the code of the first released schema (commit 0aeb8e5, which
had only migration 1). Not a test and not part of the package; run it against that commit's code:

    mkdir /tmp/v1 && git archive 0aeb8e5 | tar -x -C /tmp/v1
    PYTHONPATH=/tmp/v1 .venv/bin/python tests/data/make_v1_fixture.py tests/data/schema_v1.db

The timestamps are fixed (remember's `now`), except the last access of the memories the one
recall returns, which is the time the script ran. Afterwards the file is rewritten with 1 KiB
pages (VACUUM), which keeps it at tens of kilobytes; its content is as the old code wrote it.
"""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from tempfile import TemporaryDirectory

import anyio

import mcp_memory_server
from mcp_memory_server.config import Config
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.store import Store
from mcp_memory_server.store.sqlite.schema import MIGRATIONS
from mcp_memory_server.text import Segmenter

START = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)

# (content, category, key, tags, importance, source, tier, session)
MEMORIES: list[tuple[str, str, str | None, list[str], float, str, str, str | None]] = [
    ("我每天早上喝一杯拿铁咖啡", "preference", None, ["咖啡", "早餐"], 0.7, "user", "core", None),
    ("我住在杭州西湖区", "identity", "user.city", ["住址"], 0.8, "user", "core", None),
    ("我是一名后端工程师，主要写 Python 和 Go", "identity", "user.job", ["工作"], 0.8, "user", "core", None),
    ("我对花生过敏，点外卖时要提醒我", "fact", "user.allergy", ["健康"], 0.9, "user", "core", None),
    ("周五下午三点和产品经理开需求评审会", "todo", None, ["会议"], 0.6, "user", "core", None),
    ("我女儿叫小雨，今年六岁", "relationship", None, ["家人"], 0.8, "user", "core", None),
    ("决定把数据库从 MySQL 迁移到 PostgreSQL", "decision", None, ["数据库", "架构"], 0.7, "both", "core", None),
    ("我喜欢用Python写代码", "preference", None, ["python"], 0.6, "user", "core", None),
    ("项目代号是“青鸟”，下个月上线", "project_state", "project.name", [], 0.7, "user", "core", None),
    ("周末常去西湖边跑步，一次十公里", "pattern", None, ["运动"], 0.5, "user", "core", None),
    ("I prefer dark mode in every editor", "preference", "user.theme", ["editor", "ui"], 0.6, "user", "core", None),
    ("My favourite programming font is JetBrains Mono", "preference", None, ["editor"], 0.4, "user", "core", None),
    ("The staging server runs Ubuntu 22.04 on port 8443", "fact", None, ["infra"], 0.6, "assistant", "core", None),
    ("Code reviews happen every Tuesday morning", "pattern", None, ["team"], 0.5, "user", "core", None),
    ("I am learning Rust in my spare time", "skill", None, ["rust", "learning"], 0.5, "user", "core", None),
    ("Write commit messages in the imperative mood", "coding_style", None, [], 0.7, "user", "core", None),
    ("My manager is called Alice Chen", "relationship", "user.manager", ["work"], 0.6, "user", "core", None),
    ("Send the quarterly report before the 10th", "todo", None, ["report"], 0.8, "user", "core", None),
    ("用 VS Code 写代码，装了 Vim 插件", "preference", "user.editor", ["editor", "工具"], 0.8, "user", "core", None),
    ("API 网关用的是 Kong，配置在 gateway 仓库里", "fact", None, ["infra", "网关"], 0.6, "user", "core", None),
    ("Deploy 前一定要跑 make test", "insight", None, ["ci"], 0.7, "user", "core", None),
    ("team standup 每天上午 10:00，在 Zoom 上", "event", None, ["会议", "team"], 0.5, "user", "core", None),
    ("偏好简洁的回答，bullet points 优先 😀", "preference", None, ["风格"], 0.6, "user", "core", None),
    ("正在调试登录页面的 OAuth 回调", "context", None, ["debug"], 0.4, "assistant", "working", "sess-2026-01"),
    ("用户这次想重构 retrieve 模块", "context", None, [], 0.5, "inferred", "working", "sess-2026-01"),
    ("This one will be forgotten", "note", None, [], 0.3, "user", "core", None),
    ("数据库连接池大小设为 20", "fact", "db.pool", ["数据库"], 0.5, "user", "core", None),
    ("Use pytest with filterwarnings = error", "coding_style", None, ["python", "testing"], 0.6, "user", "core", None),
    ("下周三去上海出差两天", "event", None, ["出差"], 0.6, "user", "core", None),
    ("The cat's name is Mochi 🐱", "relationship", None, ["pets"], 0.5, "user", "core", None),
    ("早餐通常吃包子和豆浆", "preference", None, ["早餐"], 0.4, "user", "core", None),
]

# Keyed memories written again: the old values go to memory_history.
UPDATES: list[tuple[str, str, str, list[str]]] = [
    ("user.city", "我搬到了上海浦东", "identity", ["住址", "搬家"]),
    ("user.editor", "现在用 Cursor 写代码，还是开着 Vim 模式", "preference", ["editor", "工具"]),
    ("user.editor", "回到 VS Code 了，Vim 插件照旧", "preference", ["editor"]),
    ("user.theme", "I prefer a light theme during the day and dark mode at night", "preference", ["editor", "ui"]),
    ("db.pool", "数据库连接池大小改为 50 (load test 之后)", "fact", ["数据库", "性能"]),
]


async def build(path: Path) -> None:
    with TemporaryDirectory() as cache:
        config = Config.from_env({}, db_path=path, cache_dir=cache)
        segmenter = Segmenter(config.cache_dir)
        segmenter.wait_sync()
        async with Store(config, segmenter) as store:
            service = MemoryService(store)
            moment = START
            ids = []
            for content, category, key, tags, importance, source, tier, session in MEMORIES:
                moment += timedelta(hours=7, minutes=13)
                result = await service.remember(
                    content=content,
                    category=category,
                    key=key,
                    tags=tags,
                    importance=importance,
                    source=source,
                    tier=tier,
                    session_id=session,
                    client="fixture-v1",
                    now=moment,
                )
                assert result.action == "created", (content, result.action)
                ids.append(result.id)
            for key, content, category, tags in UPDATES:
                moment += timedelta(days=1, minutes=41)
                result = await service.remember(content=content, category=category, key=key, tags=tags, now=moment)
                assert result.action == "updated", (key, result.action)
            forgotten = ids[MEMORIES.index(next(m for m in MEMORIES if m[0].startswith("This one")))]
            await service.forget([forgotten])
            await service.recall(query="咖啡")  # access counts and last access of what it returns


def main() -> None:
    if len(MIGRATIONS) != 1:
        sys.exit(f"run with the first release's code on PYTHONPATH, not {mcp_memory_server.__file__}")
    path = Path(sys.argv[1]).resolve()
    if path.exists():
        sys.exit(f"{path} exists")
    anyio.run(build, path)
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        # A page size can only change outside WAL mode; the store turns WAL on again when it opens.
        for statement in ("PRAGMA journal_mode = DELETE", "PRAGMA page_size = 1024", "VACUUM"):
            connection.execute(statement)
    finally:
        connection.close()


if __name__ == "__main__":
    main()
