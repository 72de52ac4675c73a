"""Secrets in every field: a generated corpus (tests/screening_corpus.py) of 520 secrets of about
forty shapes, each written seven ways, through the path each stored or logged field takes, and 540
ordinary Chinese, English and mixed sentences through the same screening.

The bulk runs here, through the functions each field's path calls (`validate.draft` for what
`remember`, `apply_changes` and the imports store; `Sessions`' and the profile's screening; the
readers of JSON and memory.jsonl files; the extraction log's screening of a message). One secret
per field and way of writing goes through the real MCP tools in tests/server/test_secrets_in_fields.py.

A secret counts as caught when the call is refused (SecretRefused) or what would be stored keeps no
eight characters in a row of it as written (the whole run, for base64 and hex), nor eight of its
letters and digits in a row once both are read as they read (NFKC, look-alikes folded, blanks and
punctuation left out: a category normalises what it is given). The table printed
(`pytest -s`) is the one in RELIABILITY.md; the assertions are floors below today's counts."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_memory_server.config import Config
from mcp_memory_server.errors import InvalidInput, SecretRefused
from mcp_memory_server.memory import validate
from mcp_memory_server.text.screening import inspect, screen_text
from mcp_memory_server.transfer import json_format
from mcp_memory_server.transfer.foreign_formats import read_memory_jsonl
from mcp_memory_server.transfer.importing import _check as check_items

from ..screening_corpus import OBFUSCATIONS, Secret, clean_sentences, obfuscated, secrets

SECRETS = secrets()
CLEAN = clean_sentences()
FILLER = "这是一条普通的记忆 an ordinary memory"


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> Config:
    return Config.from_env({}, db_path=tmp_path_factory.mktemp("corpus") / "memory.db")


def _json_doc(memory: dict[str, object] | None = None, session: dict[str, object] | None = None) -> str:
    stamp = "2026-01-01T00:00:00+00:00"
    doc: dict[str, object] = {"format": "mcp-memory-server", "version": 1, "memories": []}
    if memory is not None:
        base = {
            "id": "mem_1",
            "content": FILLER,
            "key": None,
            "category": "fact",
            "tier": "core",
            "importance": 0.5,
            "confidence": 0.8,
            "source": "user",
            "tags": [],
            "session_id": None,
            "client": None,
            "created_at": stamp,
            "updated_at": stamp,
            "last_accessed": stamp,
            "access_count": 0,
            "history": [],
        }
        doc["memories"] = [base | memory]
    if session is not None:
        base = {
            "session_id": "s1",
            "current_topic": None,
            "context_variables": {},
            "turn_count": 1,
            "last_emotion": None,
            "created_at": stamp,
            "updated_at": stamp,
        }
        doc["sessions"] = [base | session]
    return json.dumps(doc, ensure_ascii=False)


def _json(config: Config, text: str) -> str:
    """What a JSON import would store, as one text (refused items left out)."""
    doc = json_format.read(text, config)
    stored = [(r.draft.content, r.draft.client, r.draft.key) for r in doc.memories]
    return json.dumps([stored, [s._asdict() for s in doc.sessions]], ensure_ascii=False)


def _jsonl(config: Config, name: str, observation: str) -> str:
    line = json.dumps({"type": "entity", "name": name, "entityType": "person", "observations": [observation]})
    checked, _ = check_items(read_memory_jsonl(line, config), config)
    return json.dumps([[d.content, d.key, d.tags] for _, d in checked], ensure_ascii=False)


# Each field: what storing the unit (names) or a sentence holding it (free text) leaves.
Store = Callable[[Config, Secret, str], str]
FIELDS: dict[str, Store] = {
    "content": lambda c, s, u: validate.draft(c, content=s.text(u)).content,
    "key": lambda c, s, u: str(validate.draft(c, content=FILLER, key_name=u).key),
    "tags": lambda c, s, u: " ".join(validate.draft(c, content=FILLER, tag_list=[u]).tags),
    "category": lambda c, s, u: validate.draft(c, content=FILLER, category_name=u).category,
    "source": lambda c, s, u: validate.draft(c, content=FILLER, source_name=u).source,
    "session_id": lambda c, s, u: str(validate.draft(c, content=FILLER, session=u).session_id),
    "client": lambda c, s, u: str(validate.draft(c, content=FILLER, client=u).client),
    "session topic": lambda c, s, u: validate.screen(s.text(u), field="topic")[0],
    "variable name": lambda c, s, u: json.dumps(validate.screen_variables({u: 1}), ensure_ascii=False),
    "variable value": lambda c, s, u: json.dumps(validate.screen_variables({"note": s.text(u)}), ensure_ascii=False),
    "profile text": lambda c, s, u: validate.screen(s.text(u), field="text")[0],
    "apply_changes key": lambda c, s, u: (validate.screen_name(u, "op 1 key"), u)[1],  # as apply_changes does
    "memory.jsonl entity name": lambda c, s, u: _jsonl(c, u, "lives in Hangzhou 住在杭州"),
    "memory.jsonl observation": lambda c, s, u: _jsonl(c, "Alice", s.text(u)),
    "JSON import client": lambda c, s, u: _json(c, _json_doc({"client": u})),
    "JSON import session variables": lambda c, s, u: _json(
        c, _json_doc(session={"context_variables": {"note": s.text(u)}})
    ),
    "extraction-log preview": lambda c, s, u: screen_text(s.text(u)).text[:300],
}


_PLACEHOLDER = re.compile(r"\[withheld: [^\]]*\]")  # its words are the kind's, not the secret's
_LOOKS_LATIN = str.maketrans("аеорсхуіАЕОРСХНКМВТ", "aeopcxyiAEOPCXHKMBT")


def _core(text: str) -> str:
    """Letters and digits only, as they read: what survives a name's normalisation (a category's
    `PIN is 9 4 4 0` is stored as pin_is_9_4_4_0)."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).translate(_LOOKS_LATIN).lower() if c.isalnum())


def _windows(marker: str, stored: str) -> bool:
    n = min(len(marker), 8)
    return any(marker[i : i + n] in stored for i in range(len(marker) - n + 1))


def _leaks(marker: str, stored: str) -> bool:
    """Eight characters in a row of the secret as written are kept, or of its letters and digits."""
    return _windows(marker, stored) or _windows(_core(marker), _core(_PLACEHOLDER.sub(" ", stored)))


def _caught(store: Store, config: Config, secret: Secret, how: str) -> bool:
    unit, marker = obfuscated(secret, how)
    try:
        stored = store(config, secret, unit)
    except SecretRefused:
        return True
    except InvalidInput:  # refused for another reason: its message may have quoted the secret
        return False
    return not _leaks(marker, stored)


@pytest.fixture(scope="module")
def counts(cfg: Config) -> dict[tuple[str, str], tuple[int, int]]:
    table: dict[tuple[str, str], tuple[int, int]] = {}
    for field, store in FIELDS.items():
        for how in OBFUSCATIONS:
            caught = sum(_caught(store, cfg, s, how) for s in SECRETS)
            table[field, how] = (caught, len(SECRETS))
    return table


def test_the_corpus_is_large_varied_and_distinct() -> None:
    assert len({s.value for s in SECRETS}) == len(SECRETS) >= 500
    families = Counter(s.family for s in SECRETS)
    assert len(families) >= 25
    assert families["passphrase EN"] >= 50 and families["passphrase ZH"] >= 50 and families["national ID"] >= 30
    assert len(set(CLEAN)) == len(CLEAN) >= 500
    chinese = sum(any("\u4e00" <= c <= "\u9fff" for c in t) for t in CLEAN)
    assert 0.4 < chinese / len(CLEAN) < 0.8  # Chinese and mixed; the rest English


@pytest.mark.timeout(1800)
def test_secrets_are_caught_in_every_field_however_written(counts: dict[tuple[str, str], tuple[int, int]]) -> None:
    ways = list(OBFUSCATIONS)
    lines = ["| field | " + " | ".join(ways) + " |", "|---" * (len(ways) + 1) + "|"]
    for field in FIELDS:
        lines.append(f"| {field} | " + " | ".join(f"{counts[field, h][0]}/{counts[field, h][1]}" for h in ways) + " |")
    print("\n" + "\n".join(lines))
    tried = sum(n for _, n in counts.values())
    caught = sum(c for c, _ in counts.values())
    print(f"caught {caught:,} of {tried:,}")
    for (field, how), (c, n) in counts.items():
        # Today's misses: a four-digit PIN spelled out ("PIN is 9 4 4 0", 12 of 520, in every field)
        # and, in free text, "my password is X from the environment" (2 of 520: X followed by prose
        # reads as a description of the password). The floors leave a margin of a few.
        floor = 0.96 if how == "spaced" else 0.99
        assert c >= floor * n, f"{field} / {how}: {c} of {n} caught"


def test_ordinary_sentences_are_never_flagged() -> None:
    flagged = [t for t in CLEAN if inspect(t)]
    print(f"\nclean sentences flagged: {len(flagged)} of {len(CLEAN)}")
    assert flagged == []


@pytest.mark.parametrize("text", CLEAN[:120])
def test_ordinary_sentences_are_stored_exactly_as_written(cfg: Config, text: str) -> None:
    assert validate.draft(cfg, content=text).content == text
    assert validate.screen_variables({"note": text}) == {"note": text}


def test_the_hand_written_ordinary_corpus_stays_clean_through_every_view() -> None:
    """tests/data/ordinary.json (near misses met in real text) through the whole screening, the
    personal numbers kept (it names phone numbers on purpose: they are masked by default)."""
    ordinary = json.loads((Path(__file__).parent.parent / "data" / "ordinary.json").read_text(encoding="utf-8"))
    assert [t for t in ordinary if inspect(t, "keep")] == []
