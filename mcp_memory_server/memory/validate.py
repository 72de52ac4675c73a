"""Input normalisation shared by every write path: each check names the field and the limit, and
runs before anything is written, so bad input changes nothing."""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, cast, get_args

from ..config.config import Config
from ..config.limits import MAX_KEY_CHARS, MAX_SESSION_CHARS
from ..errors import InvalidInput, SecretRefused
from ..models import CATEGORY_PATTERN, SOURCE_ALIASES, Draft, Source, Tier
from ..store.rows import parse_id
from ..text.keys import normalise_key
from ..text.redaction import Finding, describe
from ..text.screening import PersonalNumbers, Screened, inspect, screen_text
from ..text.tokens import normalize

__all__ = [
    "batch",
    "category",
    "client_name",
    "draft",
    "is_blank",
    "key",
    "quoted",
    "screen",
    "screen_name",
    "screen_names",
    "screen_variables",
    "session_id",
    "source",
    "tags",
    "text",
]

log = logging.getLogger(__name__)

_SEPARATORS = re.compile(r"[\s\-./]+")
_SOURCES: tuple[str, ...] = get_args(Source)
_TIERS: tuple[str, ...] = get_args(Tier)


# Unicode category Cc, except newline and tab.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def quoted(value: str, limit: int = 60) -> str:
    """`value` quoted for an error message and cut after `limit` characters: a message names
    what was wrong without echoing a huge argument back whole."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def clean(value: str) -> str:
    """Control characters out (NUL included), surrounding whitespace trimmed; text otherwise kept."""
    return _CONTROL.sub("", value).strip()


# Characters that show nothing: format marks (zero-width space and joiners, soft hyphen, bidi
# controls, the byte-order mark: Unicode category Cf) and every kind of space.
_INVISIBLE = frozenset({"Cf", "Zs", "Zl", "Zp", "Cc"})


def visible(value: str) -> bool:
    """Whether `value` has a character that shows (it stops at the first one)."""
    return any(unicodedata.category(c) not in _INVISIBLE for c in value)


def is_blank(value: str) -> bool:
    """Whether nothing visible is left of `value` once control characters and surrounding spaces go."""
    return not visible(clean(value))


def text(value: str, *, field: str, limit: int) -> str:
    cleaned = clean(value)
    if not visible(cleaned):
        raise InvalidInput(
            f"{field} is empty once control characters, invisible marks (such as zero-width spaces) "
            "and surrounding spaces are removed."
        )
    if len(cleaned) > limit:
        raise InvalidInput(
            f"{field} is {len(cleaned):,} characters; the limit is {limit:,}. "
            "Split it into several self-contained memories."
        )
    return cleaned


@functools.lru_cache(maxsize=1024)  # an import names a few categories thousands of times
def category(value: str) -> str:
    """Lower_snake category; 'Project State' and 'project-state' become project_state."""
    name = _SEPARATORS.sub("_", normalize(value).strip().lower()).strip("_")
    if not CATEGORY_PATTERN.match(name):
        raise InvalidInput(
            f"category {quoted(value)} is not valid: use a lower_snake name of letters, digits and "
            "underscores starting with a letter (at most 40), such as preference or project_state."
        )
    return name


def key(value: str | None) -> str | None:
    """The key slot's one spelling (text/keys.py: `User.City` and `user.сity` with a Cyrillic с are
    `user.city`); None for no key (left out, or only spaces)."""
    if value is None:
        return None
    cleaned = clean(value)
    if not cleaned:
        return None
    if not visible(cleaned):
        raise InvalidInput(
            "key holds only invisible characters (zero-width or formatting marks); give a key such as user.city."
        )
    normalised = normalise_key(cleaned)
    if max(len(cleaned), len(normalised)) > MAX_KEY_CHARS:
        raise InvalidInput(f"key is {len(cleaned)} characters; the limit is {MAX_KEY_CHARS}.")
    if parse_id(normalised) is not None:
        raise InvalidInput(
            f"key {quoted(value)} is spelt like a memory id; a key slot names a fact, such as user.city "
            "(to change a memory by its id, pass the id to apply_changes as the operation's key)."
        )
    return normalised


@functools.lru_cache(maxsize=256)
def source(value: str) -> Source:
    name = clean(value).lower()
    name = SOURCE_ALIASES.get(name, name)
    if name not in _SOURCES:
        raise InvalidInput(f"source {quoted(value)} is not one of {', '.join(_SOURCES)}.")
    return cast(Source, name)


def tier(value: str) -> Tier:
    if value not in _TIERS:
        raise InvalidInput(f"tier {quoted(value)} is not one of core, working.")
    return cast(Tier, value)


def tags(values: Iterable[str] | None, config: Config) -> tuple[str, ...]:
    """Trimmed, lower-cased, de-duplicated; at most `max_tags` of at most `max_tag_chars` each."""
    result: list[str] = []
    for raw in values or ():
        tag = " ".join(normalize(clean(raw)).lower().split())
        if not tag:
            continue
        if len(tag) > config.limits.max_tag_chars:
            raise InvalidInput(
                f"tag {tag[:20]!r}... is {len(tag)} characters; the limit is {config.limits.max_tag_chars}."
            )
        if tag not in result:
            result.append(tag)
    if len(result) > config.limits.max_tags:
        raise InvalidInput(f"{len(result)} tags given; the limit is {config.limits.max_tags}.")
    return tuple(result)


def session_id(value: str | None) -> str | None:
    if value is None:
        return None
    cleaned = clean(value)
    if not cleaned:
        return None
    if len(cleaned) > MAX_SESSION_CHARS:
        raise InvalidInput(f"session_id is {len(cleaned)} characters; the limit is {MAX_SESSION_CHARS}.")
    return cleaned


def batch(count: int, config: Config, what: str) -> None:
    """One call's ids or operations: at most `max_batch` (MCP_MEMORY_MAX_BATCH)."""
    if count > config.limits.max_batch:
        raise InvalidInput(f"{count} {what} given; the limit is {config.limits.max_batch} per call.")


def page(limit: int, config: Config) -> int:
    if not 1 <= limit <= config.limits.max_page:
        raise InvalidInput(f"limit must be between 1 and {config.limits.max_page}, got {limit}.")
    return limit


def client_name(value: str | None) -> str | None:
    """The MCP client's name as it reported it, cut to 100 characters (it is only shown)."""
    return clean(value)[:100] or None if value else None


def unit(value: float, field: str) -> float:
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise InvalidInput(f"{field} must be between 0.0 and 1.0, got {value}.")
    return float(value)


_PLACEHOLDER = re.compile(r"\[withheld: [^\]]+\]")
_SUBSTANCE = re.compile(r"[^\W_]")
MIN_LEFT_CHARS = 12  # letters, digits or characters left beside the withheld secrets


def screen(
    content: str, personal: PersonalNumbers = "mask", *, field: str = "content", label: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """Free text (content, a topic, a variable's value, a profile text) with its secrets and personal
    numbers replaced by `[withheld: kind]`, and the kinds withheld. When little is left besides them
    ("我的密码是 ..."), nothing is worth storing: SecretRefused. With personal numbers to refuse, one
    is enough to refuse the text. `label` (a variable's name) is read before the text, as in
    "wifi_password: Zx9!kq88", so that the value is judged by what it is the value of."""
    prefix = f"{label}: " if label else ""
    screened = screen_text(prefix + content, personal)
    if prefix:
        shift = len(prefix)
        findings = [Finding(f.kind, max(f.start - shift, 0), f.end - shift) for f in screened.findings if f.end > shift]
        screened = Screened(_withheld(content, findings), tuple(findings))
    if not screened.findings:
        return content, ()
    where = "" if field == "content" else f"{field}: "
    kinds = ", ".join(screened.withheld)
    if personal == "refuse" and screened.personal:
        log.info("%s refused: it holds a personal number (%s)", field, kinds)
        raise SecretRefused(
            f"{where}holds a {screened.personal[0]}, and personal numbers are refused here "
            "(MCP_MEMORY_PERSONAL_NUMBERS=refuse); nothing was stored."
        )
    left = len(_SUBSTANCE.findall(_PLACEHOLDER.sub("", screened.text)))
    refused = left < MIN_LEFT_CHARS
    log.info(
        "secrets withheld from %s to store (%s); %s", field, kinds, "nothing stored" if refused else "the rest kept"
    )
    if refused:
        raise SecretRefused(
            f"{where}{describe(screened.withheld)} What is left says nothing without them, so nothing was stored."
        )
    return screened.text, screened.withheld


def _withheld(text: str, findings: Iterable[Finding]) -> str:
    parts: list[str] = []
    last = 0
    for f in findings:
        parts += [text[last : f.start], f"[withheld: {f.kind}]"]
        last = f.end
    return "".join([*parts, text[last:]])


# A short name of lower-case letters, dots, dashes and underscores (user.city, project_state), or of
# Chinese characters alone (旅行): nothing found here can be written that way (keys and passwords
# need digits, capitals or symbols; encoded runs decode to nothing; personal numbers are digits).
_PLAIN_NAME = re.compile(r"[a-z_.\-]{1,64}|[\u4e00-\u9fff]{1,64}")


def screen_name(value: object, field: str, personal: PersonalNumbers = "mask") -> None:
    """A name (a key, a tag, a session id, a source, a client, a variable's name) is stored and shown
    whole, so one holding a secret or a personal number is refused whole: SecretRefused naming the
    field and what it holds, never the value."""
    if not value or not isinstance(value, str) or _PLAIN_NAME.fullmatch(value):
        return
    findings = inspect(value, personal)
    if findings:
        kinds = ", ".join(dict.fromkeys(f.kind for f in findings))
        log.info("%s refused: it holds %s", field, kinds)
        raise SecretRefused(
            f"{field} holds a secret or personal number ({kinds}); names are stored and shown as written, so "
            "nothing was stored. Put a plain name here and leave the value out."
        )


def screen_names(values: Iterable[object] | None, field: str, personal: PersonalNumbers = "mask") -> None:
    for value in values or ():
        if isinstance(value, str):  # anything else is refused by the check of its type
            screen_name(value, field, personal)


def screen_variables(
    variables: Mapping[str, Any], personal: PersonalNumbers = "mask", *, field: str = "variables"
) -> dict[str, Any]:
    """A session's variables with every name screened as a name and every text value, at any depth,
    as free text read after its name; a number that holds one (a card number) is refused."""

    def named(mapping: Mapping[Any, Any], where: str) -> list[tuple[str, Any]]:
        for name in mapping:
            screen_name(name, f"a variable name in {where}", personal)
        return [(str(k), v) for k, v in mapping.items()]

    def value(name: str, item: Any, where: str) -> Any:
        if isinstance(item, str):
            return screen(item, personal, field=where, label=name)[0] if item else item
        if isinstance(item, Mapping):
            return {k: value(k, v, f"{where}.{k}") for k, v in named(item, where)}
        if isinstance(item, list):
            return [value(name, v, f"{where}[{i}]") for i, v in enumerate(item)]
        if isinstance(item, int | float) and not isinstance(item, bool) and inspect(f"{name}: {item}", personal):
            raise SecretRefused(f"{where} holds a secret or personal number; nothing was stored.")
        return item

    return {name: value(name, item, f"{field}.{name}") for name, item in named(variables, field)}


def draft(
    config: Config,
    *,
    content: str,
    category_name: str = "fact",
    key_name: str | None = None,
    importance: float = 0.5,
    confidence: float = 0.8,
    tag_list: Iterable[str] | None = None,
    source_name: str = "user",
    tier_name: str = "core",
    session: str | None = None,
    client: str | None = None,
    screened: tuple[str, tuple[str, ...]] | None = None,
) -> Draft:
    """Everything `remember` accepts, checked and normalised in one place; secrets are withheld.
    `screened` is what an earlier draft made of this content (its text and the kinds withheld),
    so that a draft made again inside a transaction does not screen the text there."""
    tag_list = tuple(tag_list) if tag_list is not None else None
    if screened is None:  # a draft made again from screened values is not screened again (in a transaction)
        # Names are screened before they are checked, so that no error message quotes a secret.
        personal = config.limits.personal_numbers
        screened = screen(text(content, field="content", limit=config.limits.max_content_chars), personal)
        for value, field in ((key_name, "key"), (category_name, "category"), (source_name, "source")):
            screen_name(value, field, personal)
        screen_name(session, "session_id", personal)
        screen_name(client, "client", personal)
        screen_names(tag_list, "tag", personal)
    cleaned, withheld = screened
    return Draft(
        content=cleaned,
        withheld=withheld,
        key=key(key_name),
        category=category(category_name),
        tier=tier(tier_name),
        importance=unit(importance, "importance"),
        confidence=unit(confidence, "confidence"),
        source=source(source_name),
        tags=tags(tag_list, config),
        session_id=session_id(session),
        client=client_name(client),
    )
