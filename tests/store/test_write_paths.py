"""Secrets are withheld on every write path (remember, apply_changes, bulk import), over the whole
secret corpus, and nothing ordinary is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import SecretRefused
from mcp_memory_server.memory import MemoryService
from mcp_memory_server.memory.change_ops import apply_changes

from .. import rawdb

pytestmark = pytest.mark.anyio
BACKENDS = ("sqlite", "postgresql")
DATA = Path(__file__).parent.parent / "data"
SECRETS: list[dict[str, str]] = json.loads((DATA / "secrets.json").read_text(encoding="utf-8"))
ORDINARY: list[str] = json.loads((DATA / "ordinary.json").read_text(encoding="utf-8"))


def _stored(config: Config) -> list[str]:
    return [r[0] for r in rawdb.rows(config, "SELECT content FROM memories ORDER BY seq")]


async def test_remember_withholds_or_refuses_every_secret(service: MemoryService, config: Config) -> None:
    refused = redacted = 0
    for case in SECRETS:
        try:
            result = await service.remember(content=case["text"], category="note")
        except SecretRefused as exc:
            message = str(exc)
            refused += "Withheld" in message and "nothing was stored" in message
        else:
            assert result.withheld and case["secret"] not in result.memory.content
            assert "[withheld: " in result.memory.content and "Withheld" in result.detail
            redacted += 1
    assert refused and redacted and refused + redacted == len(SECRETS)
    assert all(case["secret"] not in text for case in SECRETS for text in _stored(config))


async def test_remember_keeps_ordinary_text_as_written(service: MemoryService, config: Config) -> None:
    items = [{"content": text, "category": "note"} for text in ORDINARY]
    await service.import_memories(items)
    # Personal numbers are masked by default (MCP_MEMORY_PERSONAL_NUMBERS=mask): the two sentences
    # that give one, a labelled phone number and a resident ID, keep everything else.
    masked = {"138 0013 8000": "[withheld: phone number]", "110101199003074514": "[withheld: national ID]"}
    expected = [t.strip() for t in ORDINARY]
    for number, mark in masked.items():
        (at,) = [i for i, t in enumerate(expected) if number in t]
        expected[at] = expected[at].replace(number, mark)
    assert _stored(config) == expected
    one = await service.remember(content=ORDINARY[0] + " (again, with a twist)", category="fact")
    assert one.withheld == [] and "Withheld" not in one.detail


async def test_apply_changes_and_import_withhold_secrets(service: MemoryService, config: Config) -> None:
    key = "ghp_" + "FAKE0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0u"
    ops = [
        {
            "key": "deploy.notes",
            "action": "add",
            "category": "workflow_history",
            "payload": f"部署脚本在 ci/deploy.sh，用 GitHub token {key} 拉取私有仓库",
            "importance": 6,
            "source": "用户输入",
        }
    ]
    result = await apply_changes(service, ops)
    assert result.applied[0].withheld == ["GitHub token"] and "Withheld 1 secret" in result.detail
    with pytest.raises(SecretRefused):
        await apply_changes(service, [ops[0] | {"key": "only.secret", "payload": f"token: {key}"}])
    await service.import_memories([{"content": f"CI uses the token {key} for the nightly mirror job"}])
    assert all(key not in text for text in _stored(config)) and len(_stored(config)) == 2
