"""JSON export and import: ids kept or changed and reported, all or nothing, errors naming the
item and field, secrets withheld, namespaces, other processes' indexes, and the commands."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory_server.cli import commands as cli
from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.lifecycle import restore
from mcp_memory_server.profile import edit_profile, get_profile
from mcp_memory_server.store import Store, archive
from mcp_memory_server.store.rows import iso, utcnow
from mcp_memory_server.text import Segmenter
from mcp_memory_server.transfer import import_text
from mcp_memory_server.transfer.json_transfer import export_data, export_json, import_file

from .. import rawdb

BACKENDS = ("sqlite", "postgresql")
SECRETS = json.loads((Path(__file__).parent.parent / "data" / "secrets.json").read_text(encoding="utf-8"))


def _count(config: Config, table: str = "memories") -> int:
    return int(rawdb.value(config, f"SELECT count(*) FROM {table}"))


def _source_config(config: Config) -> Config:
    """An SQLite file of its own, whichever backend the test imports into (moving from SQLite to
    PostgreSQL is an export and an import)."""
    if config.db_url is None:
        return config.with_changes(db_path=config.db_path.with_name("source.db"))
    return Config.from_env(
        {}, db_path=Path(tempfile.mkdtemp(dir=config.cache_dir)) / "source.db", cache_dir=config.cache_dir
    )


async def _source(config: Config, segmenter: Segmenter) -> str:
    """A small database with every kind of thing an export holds; its export's text."""
    async with Store(_source_config(config), segmenter) as store:
        service = MemoryService(store)
        await service.remember(content="我每天早上喝一杯拿铁咖啡", category="preference", tags=["咖啡"])
        await service.remember(content="我住在杭州", category="identity", key="user.city")
        await service.remember(content="我搬到了上海", category="identity", key="user.city")  # history
        await service.remember(content="The staging server runs on port 8443", category="fact", tags=["infra"])
        await service.remember(content="正在调试 OAuth 回调", category="context", tier="working", session_id="会话-1")
        async with store.transaction() as tx:
            await archive.archive(tx, {3: "cleanup: unused"}, iso(utcnow()))
        await edit_profile(store, "domains", "add", "后端开发 backend")
        return await export_json(store)


@pytest.mark.anyio
async def test_a_file_restores_everything_into_a_fresh_database(config: Config, segmenter: Segmenter) -> None:
    text = await _source(config, segmenter)
    async with Store(config, segmenter) as store:
        report = await import_file(store, text)
        assert report.created == ["mem_1", "mem_2", "mem_4", "mem_3"]  # live ones, then archived
        assert (report.memories, report.archived, report.present, report.renamed) == (3, 1, 0, {})
        assert (report.sessions_added, report.profile_edits) == (1, True)
        service = MemoryService(store)
        assert [h["content"] for h in await service.history("mem_2")] == ["我住在杭州"]
        hits = (await service.recall(query="我早上喝什么咖啡", track_access=False)).hits
        assert hits and hits[0].id == "mem_1"
        profile = await get_profile(store)  # synthesised for the read; the profile is never a memory
        assert "后端开发 backend" in [d.text for d in profile.domains]
        # The archived memory comes back under its id, and new memories never take an imported id.
        assert (await restore(store, ["mem_3"])).restored == ["mem_3"]
        assert (await service.get("mem_3")).content == "The staging server runs on port 8443"
        assert (await service.remember(content="A new memory after the import")).id == "mem_5"
        assert (await store.session("会话-1")) is not None


@pytest.mark.anyio
async def test_taken_ids_change_and_are_reported_and_a_second_import_adds_nothing(
    config: Config, segmenter: Segmenter
) -> None:
    text = await _source(config, segmenter)
    async with Store(config, segmenter) as store:
        service = MemoryService(store)
        for content in ("本地的第一条记忆", "A second local memory", "第三条 third"):
            await service.remember(content=content, category="note")
        report = await import_file(store, text)
        assert report.renamed == {"mem_1": "mem_5", "mem_2": "mem_6", "mem_3": "mem_7"}
        assert report.created == ["mem_5", "mem_6", "mem_4", "mem_7"]
        assert [h["content"] for h in await service.history("mem_6")] == ["我住在杭州"]  # history follows
        assert (await service.get("mem_1")).content == "本地的第一条记忆"  # what was here stays

        again = await import_file(store, text)
        assert (again.created, again.present, again.renamed) == ([], 4, {})
        assert (again.sessions_added, again.sessions_present, again.profile_edits) == (0, 1, False)
    assert _count(config) == 6 and _count(config, "memory_archive") == 1


@pytest.mark.anyio
async def test_a_key_held_here_stops_the_import(config: Config, segmenter: Segmenter) -> None:
    text = await _source(config, segmenter)
    async with Store(config, segmenter) as store:
        await MemoryService(store).remember(content="我住在北京", category="identity", key="user.city")
        with pytest.raises(InvalidInput, match=r"memories\[1\]\.key: 'user.city' is already the key of mem_1"):
            await import_file(store, text)
    assert _count(config) == 1 and _count(config, "sessions") == 0


@pytest.mark.anyio
async def test_a_memory_changed_since_the_export_is_not_overwritten(config: Config, segmenter: Segmenter) -> None:
    text = await _source(config, segmenter)
    async with Store(config, segmenter) as store:
        await import_file(store, text)
        await MemoryService(store).remember(content="我又搬回了杭州", category="identity", key="user.city")
        with pytest.raises(InvalidInput, match=r"memories\[1\]\.key: mem_2 holds 'user.city' here with another"):
            await import_file(store, text)
        assert (await MemoryService(store).get("mem_2")).content == "我又搬回了杭州"


def _file(**changes: Any) -> dict[str, Any]:
    memory = {
        "id": "mem_1",
        "content": "我喜欢用Python写代码",
        "key": None,
        "category": "preference",
        "tier": "core",
        "importance": 0.6,
        "confidence": 0.8,
        "source": "user",
        "tags": ["python"],
        "session_id": None,
        "client": "test",
        "created_at": "2026-01-05T09:30:00+00:00",
        "updated_at": "2026-01-05T09:30:00+00:00",
        "last_accessed": "2026-01-06T09:30:00+00:00",
        "access_count": 2,
        "history": [],
    }
    second = memory | {"id": "mem_2", "content": "The cat's name is Mochi 🐱", "tags": []}
    return {"format": "mcp-memory-server", "version": 1, "memories": [second, memory | changes]}


BAD_FILES = [
    ("{not json", r"not JSON \(line 1, column 2"),
    ('[{"content": "x"}]', "not an mcp-memory-server export"),
    (json.dumps({"format": "jsonl", "version": 1}), "format is 'jsonl'"),
    (json.dumps(_file() | {"version": 2}), "version 2, written by a newer jiyi"),
    (json.dumps(_file() | {"version": "1"}), "version is '1'"),
    (json.dumps(_file() | {"extra": 1}), r"the file has unknown field\(s\) \['extra'\]"),
    (json.dumps(_file(importance=1.5)), r"memories\[1\]\.importance: importance must be between 0.0 and 1.0"),
    (json.dumps(_file(importance="high")), r"memories\[1\]\.importance must be a number"),
    (json.dumps(_file(tags="python")), r"memories\[1\]\.tags must be a list"),
    (json.dumps(_file(category="Not Valid!")), r"memories\[1\]\.category: category 'Not Valid!' is not valid"),
    (json.dumps(_file(tier="forever")), r"memories\[1\]\.tier: tier 'forever'"),
    (json.dumps(_file(source="robot")), r"memories\[1\]\.source: source 'robot'"),
    (json.dumps(_file(content="")), r"memories\[1\]\.content: content is empty"),
    (json.dumps(_file(content="长" * 2001)), r"memories\[1\]\.content: content is 2,001 characters"),
    (json.dumps(_file(created_at="2026-01-05 09:30")), r"memories\[1\]\.created_at: .* has no time zone"),
    (json.dumps(_file(updated_at="yesterday")), r"memories\[1\]\.updated_at: Invalid isoformat"),
    (json.dumps(_file(access_count=-1)), r"memories\[1\]\.access_count must not be negative"),
    (json.dumps(_file(id="memory-1")), r"memories\[1\]\.id: 'memory-1' is not a memory id"),
    (json.dumps(_file(id="mem_2")), r"memories\[1\]\.id: mem_2 is also the id of memories\[0\]"),
    (json.dumps(_file(key="user.profile")), r"memories\[1\]\.key: user.profile is the profile's own memory"),
    (json.dumps(_file(colour="red")), r"memories\[1\] has unknown field\(s\) \['colour'\]"),
    (json.dumps(_file(history=[{"content": "旧的"}])), r"memories\[1\]\.history\[0\] lacks field\(s\)"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("text", "message"), BAD_FILES)
async def test_a_bad_file_is_named_precisely_and_changes_nothing(
    store: Store, config: Config, text: str, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        await import_file(store, text)
    assert _count(config) == 0


@pytest.mark.anyio
async def test_other_formats_are_refused_by_name(store: Store) -> None:
    with pytest.raises(InvalidInput, match="format 'jsonl' cannot be imported; known formats: json"):
        await import_text(store, json.dumps(_file()), "jsonl")


@pytest.mark.anyio
async def test_secrets_are_withheld_or_the_item_left_out(store: Store) -> None:
    inside = next(s for s in SECRETS if s["text"].startswith("把 OPENAI_API_KEY"))
    only = next(s for s in SECRETS if s["text"] == "password: hunter2")
    data = _file(content=inside["text"])
    data["memories"].append(data["memories"][0] | {"id": "mem_3", "content": only["text"]})
    data["memories"][1]["history"] = [
        {k: data["memories"][1][k] for k in ("key", "category", "importance", "confidence", "tags", "source")}
        | {"content": only["text"], "reason": "updated", "changed_at": "2026-01-05T09:00:00+00:00"}
    ]
    report = await import_file(store, json.dumps(data))
    assert report.withheld == 1 and report.refused == ["memories[1].history[0]", "memories[2]"]
    assert report.created == ["mem_2", "mem_1"]
    stored = await MemoryService(store).get("mem_1")
    assert inside["secret"] not in stored.content and "[withheld: " in stored.content
    assert await store.history(1) == []
    exported = json.dumps(await export_data(store), ensure_ascii=False)
    assert inside["secret"] not in exported and only["secret"] not in exported


@pytest.mark.anyio
async def test_namespaces_export_and_import_their_own(config: Config, segmenter: Segmenter) -> None:
    async with Store(config, segmenter, "alice") as alice, Store(config, segmenter, "bob") as bob:
        await MemoryService(alice).remember(content="Alice 喜欢爵士乐", category="preference")
        await MemoryService(bob).remember(content="Bob prefers tea", category="preference")
        data = await export_data(alice)
        assert data["namespace"] == "alice" and [m["content"] for m in data["memories"]] == ["Alice 喜欢爵士乐"]
        async with Store(config, segmenter, "carol") as carol:
            report = await import_file(carol, json.dumps(data))
            # Ids are counted per namespace: carol has no mem_1 of her own, so the file's id is kept.
            assert report.renamed == {} and report.created == ["mem_1"]
            hits = (await MemoryService(carol).recall(query="爵士乐", track_access=False)).hits
            assert [h.id for h in hits] == ["mem_1"]
        assert (await MemoryService(bob).recall(query="爵士乐", track_access=False)).hits == []


@pytest.mark.anyio
async def test_a_running_servers_index_sees_the_import(config: Config, segmenter: Segmenter) -> None:
    text = await _source(config, segmenter)
    async with Store(config, segmenter) as running, Store(config, segmenter) as importer:
        service = MemoryService(running)
        await service.remember(content="Unrelated note about gardening", category="note")
        await running.warm()
        assert (await service.recall(query="拿铁咖啡", track_access=False)).hits == []
        report = await import_file(importer, text)
        hits = (await service.recall(query="拿铁咖啡", track_access=False)).hits
        assert hits and hits[0].id == report.renamed["mem_1"]


def _run(config: Config, *args: str) -> int:
    return cli.main(["--db", str(config.db_path), "--log-level", "WARNING", *args])


@pytest.mark.sqlite_only
def test_the_commands(config: Config, segmenter: Segmenter, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = anyio.run(_source, config, segmenter)
    source = config.with_changes(db_path=config.db_path.with_name("source.db"))
    assert _run(source, "export") == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["memories"][0]["content"] == "我每天早上喝一杯拿铁咖啡"
    assert _run(source, "export", str(tmp_path / "out.json")) == 0
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["memories"] == json.loads(text)["memories"]

    assert _run(config, "import", str(tmp_path / "out.json")) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path / 'out.json'}: 3 memories and 1 archived, 4 created, 0 already present, "
        "sessions: 1 added, 0 already present, profile edits added\n"
    )
    assert _run(config, "import", "--format", "json", str(tmp_path / "out.json")) == 0
    assert "0 created, 4 already present" in capsys.readouterr().out

    (tmp_path / "bad.json").write_text(json.dumps(_file(confidence=2)), encoding="utf-8")
    assert _run(config, "import", str(tmp_path / "bad.json")) == 1
    err = capsys.readouterr().err
    assert err.startswith("jiyi: memories[1].confidence: ") and err.count("\n") == 1
    assert _run(config.with_changes(db_path=tmp_path / "none.db"), "export") == 1
    assert "there is no memory database" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(config, "import", "--format", "jsonl", str(tmp_path / "out.json"))
