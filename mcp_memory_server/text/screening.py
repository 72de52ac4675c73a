"""The one screening every text a client can have stored or logged goes through: memory content,
keys, tags, sources, session ids, topics and variables, profile texts, every imported field, the
extraction log's previews.

`inspect` finds what must not be kept, as spans of the text as written:
- secrets (text/redaction.py), in the text as written and in its skeleton (text/obfuscation.py:
  NFKC, invisible characters removed, Cyrillic and Greek look-alikes folded), so that "ѕk-…" or a
  key with zero-width spaces inside is found and withheld whole where it stands;
- keys spelled out with blanks or dashes after a provider's prefix ("s k - p r o j - …");
- base64 and hex runs that decode to a secret (the whole run is withheld);
- personal numbers (text/numbers.py: national ID numbers, phone numbers labelled as such) unless
  the policy keeps them (`MCP_MEMORY_PERSONAL_NUMBERS`: mask, the default; refuse; keep).

Callers decide what a finding means for their field (memory/validate.py): free text has the span
replaced by `[withheld: kind]`; a name (a key, a tag, a session id) is refused whole.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from . import redaction
from .numbers import PERSONAL_KINDS, personal_numbers
from .obfuscation import decoded_runs, skeleton, spaced_keys, spelled_out
from .redaction import Finding

__all__ = ["PERSONAL_KINDS", "PersonalNumbers", "Screened", "inspect", "screen_text"]

PersonalNumbers = Literal["mask", "refuse", "keep"]


@dataclass(frozen=True)
class Screened:
    """A text with every finding replaced by `[withheld: kind]`, and the findings (on the original)."""

    text: str
    findings: tuple[Finding, ...]

    @property
    def withheld(self) -> tuple[str, ...]:
        """The kinds withheld, in order, once each."""
        return tuple(dict.fromkeys(f.kind for f in self.findings))

    @property
    def personal(self) -> tuple[str, ...]:
        """The kinds of personal number found, once each."""
        return tuple(k for k in self.withheld if k in PERSONAL_KINDS)


def _find(text: str) -> list[Finding]:
    # Looked up on the module at each call, so that a test's witness of every screening sees them all.
    return redaction.find_secrets(text)


def _apart(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that overlap none before them (earlier ones win), sorted by position."""
    starts: list[int] = []
    ends: list[int] = []
    kept: list[Finding] = []
    for f in findings:
        i = bisect.bisect_left(starts, f.end)  # the spans starting before f.end: the last ends latest
        if f.start >= f.end or (i > 0 and ends[i - 1] > f.start):
            continue
        starts.insert(i, f.start)
        ends.insert(i, f.end)
        kept.append(f)
    return sorted(kept, key=lambda f: f.start)


def inspect(text: str, personal: PersonalNumbers = "mask") -> list[Finding]:
    """Everything in `text` that must not be kept, sorted and non-overlapping, as spans of `text`."""
    found = _find(text)
    view = skeleton(text)
    views = [view] if view.changed else []  # look-alikes, invisible characters or compatibility forms
    if (spelled := spelled_out(view)) is not None:
        views.append(spelled)
    for other in views:  # each read as it reads, its findings mapped back to the text as written
        found += [Finding(f.kind, *other.span(f.start, f.end)) for f in _find(other.text)]
    for key, where in spaced_keys(view):
        first = next((f for f in _find(key) if f.start == 0), None)
        if first is not None:
            found.append(Finding(first.kind, *view.span(where[0], where[first.end - 1] + 1)))
    for run in decoded_runs(view):
        inner = _find(run.text)
        if personal != "keep":
            inner += [Finding(kind, start, end) for kind, start, end in personal_numbers(run.text)]
        if inner:
            found.append(Finding(f"{inner[0].kind}, {run.encoding}-encoded", *view.span(run.start, run.end)))
    if personal != "keep":
        for other in (view, spelled) if spelled is not None else (view,):
            found += [Finding(kind, *other.span(start, end)) for kind, start, end in personal_numbers(other.text)]
    return _apart(found)


def screen_text(text: str, personal: PersonalNumbers = "mask") -> Screened:
    """`text` with each finding of `inspect` replaced by `[withheld: kind]`."""
    findings = inspect(text, personal)
    if not findings:
        return Screened(text, ())
    parts: list[str] = []
    last = 0
    for f in findings:
        parts += [text[last : f.start], f"[withheld: {f.kind}]"]
        last = f.end
    parts.append(text[last:])
    return Screened("".join(parts), tuple(findings))
