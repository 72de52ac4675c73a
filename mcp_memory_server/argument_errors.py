"""Tool arguments that fail validation, told in one line of our own words: which argument, which
rule, and what was sent when that is short to repeat (a number, a type, a short word; never a
long text, which is the user's data). pydantic's own message names its internals and links to
its website; a model reads this line and corrects its call."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

__all__ = ["explain", "problems"]

MAX_REPORTED = 5  # errors named in the line; the rest are counted
_ECHO_CHARS = 40  # an enum value sent back is cut to this

_EXPECTED = {
    "string_type": "a string",
    "string_unicode": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "an array",
    "tuple_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def explain(tool: str, error: ValidationError, schema: Mapping[str, Any] | None = None) -> str:
    """`tool: `arg` rule (got ...)`, one clause per failed argument. `schema` is the tool's input
    schema, for the other side of a range (pydantic reports only the bound that was crossed)."""
    return f"{tool}: {problems(error, schema)}"


def problems(error: ValidationError, schema: Mapping[str, Any] | None = None) -> str:
    """`arg` rule (got ...); ... for every failed value, the first few named and the rest counted:
    also for a JSON object an argument carries, checked against a model of ours."""
    details = error.errors(include_url=False)
    parts = [_clause(detail, schema or {}) for detail in details[:MAX_REPORTED]]
    if len(details) > MAX_REPORTED:
        parts.append(f"and {len(details) - MAX_REPORTED} more")
    return "; ".join(parts)


def _clause(detail: Any, schema: Mapping[str, Any]) -> str:
    loc: tuple[int | str, ...] = tuple(detail["loc"])
    kind: str = detail["type"]
    ctx: dict[str, Any] = detail.get("ctx") or {}
    value = detail.get("input")
    name = f"`{_path(loc)}`"
    node = _node(schema, loc)
    if kind == "missing":
        return f"{name} is required"
    if kind == "extra_forbidden":
        return f"{name} is not an accepted field"
    if kind == "string_too_long":
        got = f" (got {len(value)})" if isinstance(value, str) else ""
        return f"{name} is longer than {ctx['max_length']} characters{got}"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return f"{name} must not be empty"
        return f"{name} is shorter than {ctx['min_length']} characters"
    if kind in ("too_long", "too_short"):
        unit = "entries" if ctx.get("field_type") == "Dictionary" else "items"
        actual = ctx.get("actual_length")
        if actual is None and isinstance(value, Sequence | Mapping):
            actual = len(value)
        got = f" (got {actual})" if actual is not None else ""
        if kind == "too_long":
            return f"{name} has more than {ctx['max_length']} {unit}{got}"
        return f"{name} needs at least {ctx['min_length']} {unit[:-1] if ctx['min_length'] == 1 else unit}{got}"
    if kind in ("less_than_equal", "greater_than_equal", "less_than", "greater_than"):
        return f"{name} must be {_range(kind, ctx, node)} (got {_shown(value)})"
    if kind in ("literal_error", "enum"):
        choices = node.get("enum")
        allowed = ", ".join(str(c) for c in choices) if choices else str(ctx.get("expected", "")).replace("'", "")
        return f"{name} must be one of {allowed} (got {_shown(value)})"
    if kind in _EXPECTED:
        return f"{name} must be {_EXPECTED[kind]} (got {_shown(value)})"
    message = str(detail.get("msg", "is invalid")).removeprefix("Value error, ")
    if not loc:  # a rule on the whole object (a model validator's own sentence)
        return message
    return f"{name} is invalid: {message[:1].lower()}{message[1:]}"


def _path(loc: tuple[int | str, ...]) -> str:
    """('tags', 2) -> tags[2]; ('emotion', 'confidence') -> emotion.confidence."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _node(schema: Mapping[str, Any], loc: tuple[int | str, ...]) -> Mapping[str, Any]:
    """The input schema's node for `loc`, through $defs references and nullable `anyOf`s; {} when
    the path leads nowhere (a free-form object's key)."""
    defs: Mapping[str, Any] = schema.get("$defs", {})
    node: Mapping[str, Any] = schema
    for part in loc:
        node = _resolved(node, defs)
        child = node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
        if not isinstance(child, Mapping):
            return {}
        node = child
    return _resolved(node, defs)


def _resolved(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    branches = node.get("anyOf")
    if isinstance(branches, list):
        real = [b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
        if len(real) == 1:
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **real[0]}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _range(kind: str, ctx: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    low = node.get("minimum", ctx.get("ge"))
    high = node.get("maximum", ctx.get("le"))
    if low is not None and high is not None and kind in ("less_than_equal", "greater_than_equal"):
        return f"between {_number(low)} and {_number(high)}"
    words = {"less_than_equal": "at most", "greater_than_equal": "at least", "less_than": "less than"}
    bound = next((v for k, v in ctx.items() if k in ("le", "ge", "lt", "gt")), "its bound")
    return f"{words.get(kind, 'greater than')} {_number(bound)}"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _shown(value: Any) -> str:
    """What was sent, as far as it is safe and short to repeat: numbers and booleans as they are,
    a short string quoted, anything else by its JSON type."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        if len(value) <= _ECHO_CHARS and value.isprintable():
            return json.dumps(value, ensure_ascii=False)
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return "a value of another type"
