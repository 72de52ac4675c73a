"""The text syntaxes of the settings that are more than one number, word or path: name=number
pairs, comma-separated lists, JSON, and bearer tokens. Each turns the variable's text into the
value its setting holds; pydantic then checks that value as it checks one given in code."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInput
from ..models import CATEGORY_PATTERN

__all__ = [
    "MIN_TOKEN_CHARS",
    "NAMESPACE_PATTERN",
    "NAMESPACE_RULE",
    "categories",
    "check_token",
    "hosts",
    "json_object",
    "pairs",
    "parse_tokens",
    "state_keys",
]

# Empty is the default namespace; others are short lower-case names (they appear in exports and logs).
NAMESPACE_PATTERN = re.compile(r"^(?:[a-z0-9][a-z0-9_.-]{0,63})?$")
NAMESPACE_RULE = "use up to 64 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit."
MIN_TOKEN_CHARS = 16
STATE_KEY_CHARS = 32
_TOKEN = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: what an Authorization header carries


def check_token(token: str) -> None:
    # The message never repeats the token: it may be a real one with a typo.
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(
            f"a token of {len(token)} characters is too short to guess-proof; use at least {MIN_TOKEN_CHARS} "
            "(`jiyi token` prints a new one)."
        )
    if not _TOKEN.match(token) or "," in token:
        raise InvalidInput("a token may hold only visible ASCII characters other than ',' (no spaces).")


def parse_tokens(raw: str, default_namespace: str = "", *, source: str = "MCP_MEMORY_TOKENS") -> dict[str, str]:
    """Token -> namespace from `namespace:token` entries (or a bare `token`, for the default
    namespace) separated by commas or new lines; `#` starts a comment line."""
    tokens: dict[str, str] = {}
    entries = [e.strip() for line in raw.splitlines() if not line.lstrip().startswith("#") for e in line.split(",")]
    for number, entry in enumerate((e for e in entries if e), start=1):
        namespace, sep, token = entry.partition(":")
        if not sep:
            namespace, token = default_namespace, entry
        namespace = namespace.strip()
        token = token.strip()
        if not NAMESPACE_PATTERN.match(namespace):
            raise InvalidInput(f"{source}, entry {number}: namespace {namespace!r} is not valid: {NAMESPACE_RULE}")
        try:
            check_token(token)
        except InvalidInput as exc:
            raise InvalidInput(f"{source}, entry {number}: {exc}") from None
        if tokens.get(token, namespace) != namespace:
            raise InvalidInput(f"{source}, entry {number}: the same token is given for two namespaces.")
        tokens[token] = namespace
    return tokens


def state_keys(raw: str) -> tuple[str, ...]:
    keys = tuple(k.strip() for k in raw.split(",") if k.strip())
    # InvalidInput, not ValueError: the caller's message would repeat the value, a secret.
    for number, key in enumerate(keys, start=1):
        if len(key) < STATE_KEY_CHARS:
            raise InvalidInput(
                f"MCP_MEMORY_STATE_KEYS, key {number}: each key needs at least {STATE_KEY_CHARS} characters "
                "of secret randomness (`jiyi token` prints one)."
            )
    return keys


def pairs(raw: str) -> dict[str, float]:
    """`name=number` pairs separated by commas."""
    result: dict[str, float] = {}
    for part in raw.split(","):
        name, sep, number = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"expected name=number pairs separated by commas, got {part!r}")
        result[name.strip()] = float(number)
    return result


def json_object(raw: str) -> Mapping[str, Mapping[str, Any]]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError('expected a JSON object of objects, such as {"sad": {"max_length": 300}}')
    return value


def categories(raw: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    bad = [n for n in names if not CATEGORY_PATTERN.match(n)]
    if bad:
        raise ValueError(f"not lower_snake category names: {bad}")
    return names


def hosts(raw: str) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(part.strip().lower() for part in raw.split(",") if part.strip()))
    bad = [h for h in found if any(c.isspace() or c in "/@" for c in h)]
    if bad:
        raise ValueError(f"not host names or host:port: {bad}")
    return found
