"""Views of a text for inspection only, each mapping its positions back to the text as written, so
that a secret found in a view is withheld where it stands in the original.

- The skeleton: NFKC (full-width letters, ligatures, mathematical letters), invisible characters
  removed (zero-width spaces and joiners, bidi marks, soft hyphens, the byte-order mark, variation
  selectors), Cyrillic and Greek letters that look Latin folded to Latin.
- Spaced keys: where a provider's prefix begins (itself spaced out or not: "s k - p r o j -",
  "sk-proj - abc..."), the blanks and dashes inside the key are taken out.
- Spelled out: runs of six characters or more written one at a time with a blank between
  ("h u n t e r 2 2", "4 1 1 1 1 1 ..."), written whole.
- Encoded runs: base64 and hex runs of 12 characters or more, decoded; at most `MAX_RUNS` runs and
  `MAX_RUN_CHARS` characters of each per text, and what they decode to is inspected once (it is not
  decoded again).

The stored text is never changed by any of this: a clean text is stored exactly as written.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from .lazy_pattern import lazy

__all__ = ["HOMOGLYPHS", "MAX_RUNS", "MAX_RUN_CHARS", "Encoded", "View", "decoded_runs", "skeleton", "spaced_keys"]

MAX_RUNS = 16
MAX_RUN_CHARS = 4096

# Full-width ASCII and the ideographic space (as the redactor folds them), then the Cyrillic and
# Greek letters drawn like Latin ones; one character for one, so positions do not move.
HOMOGLYPHS = dict(
    zip(
        "аеорсуххіјѕԁһԛԝкмтвнАВЕКМНОРСТХУІЈЅαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
        "aeopcyxxijsdhqwkmtbhABEKMHOPCTXYIJSabeiknoptuxABEZHIKMNOPTYX",
        strict=True,
    )
)
_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_LOOKALIKE = {ord(k): ord(v) for k, v in HOMOGLYPHS.items()}
_FOLD = _WIDTH | _LOOKALIKE
_WIDE = lazy("[\uff01-\uff5e\u3000]")
_LOOKS_LATIN = lazy("[" + "".join(HOMOGLYPHS) + "]")
_HIDDEN = lazy(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)


@dataclass(frozen=True)
class View:
    """A text to inspect and, for each of its characters, the position in the original it came from
    (`origin` None: the same positions)."""

    text: str
    origin: list[int] | None = None
    changed: bool = False  # differs from the original beyond the full-width fold the redactor does

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of this view's characters start..end."""
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1


def _hidden(c: str) -> bool:
    return unicodedata.category(c) == "Cf" or _HIDDEN.match(c) is not None


def _narrow(m: re.Match[str]) -> str:
    return chr(_WIDTH[ord(m.group())])


def skeleton(text: str) -> View:
    """The text as it reads: what NFKC, the removal of invisible characters and the homoglyph fold
    make of it, with the position each character came from."""
    if text.isascii():
        return View(text)
    # str.translate looks every character up: only a text holding one to fold is translated.
    wide = _WIDE.sub(_narrow, text)
    folded = wide.translate(_LOOKALIKE) if _LOOKS_LATIN.search(wide) else wide
    if _HIDDEN.search(folded) is None and unicodedata.is_normalized("NFKC", folded):
        return View(folded, None, folded is not wide)  # most Chinese and English text ends here
    chars: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(folded):
        if c.isascii():
            chars.append(c)
            origin.append(i)
        elif not _hidden(c):
            normal = unicodedata.normalize("NFKC", c).translate(_FOLD)
            chars.append(normal)
            origin.extend([i] * len(normal))
    return View("".join(chars), origin, True)


# --- keys written with blanks or dashes inside ------------------------------------------------------

_PREFIXES = (
    "sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "glpat-", "AKIA", "ASIA", "AIza", "GOCSPX-", "ya29.", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "xapp-", "whsec_",
    "SG.", "npm_", "pypi-", "hf_", "LTAI", "AKID", "eyJ", "SK",
)  # fmt: skip
_BLANKS = "[ \t]{0,3}"
# A prefix, its characters possibly spread out with blanks; never searched from inside a word.
_SPREAD_PREFIX = lazy(
    r"(?<![A-Za-z0-9_])(?:" + "|".join(_BLANKS.join("\\" + c if c in ".-" else c for c in p) for p in _PREFIXES) + ")"
)
_CHUNK = lazy(r"[ \t]{0,3}(?P<c>[A-Za-z0-9_.+/=\-]{1,64})")
_MAX_CHUNKS = 200  # the longest key (a JWT) is far shorter spelled out one character at a time


def _random_chunk(chunk: str) -> bool:
    """A group of a key written in groups ("sk-proj-abcd EfG3 ..."), not the next word of the sentence."""
    return (
        any(c.isdigit() for c in chunk)
        or any(c.isupper() for c in chunk[1:])
        or chunk.strip("-_") == ""
        or len(chunk) >= 12
    )


def spaced_keys(view: View) -> Iterator[tuple[str, list[int]]]:
    """Each place where a provider's prefix begins a key written with blanks or dashes inside: the
    key with the blanks taken out (and then also the dashes after its prefix), and each of its
    characters' positions in `view`."""
    pos = 0
    while (m := _SPREAD_PREFIX.search(view.text, pos)) is not None:
        pos = m.end()
        spread = any(c in " \t" for c in m.group())
        chars = [(c, m.start() + i) for i, c in enumerate(m.group()) if c not in " \t"]
        blanks = spread
        for _ in range(_MAX_CHUNKS):
            chunk = _CHUNK.match(view.text, pos)
            if chunk is None:
                break
            word = chunk.group("c")
            gap = chunk.start("c") > pos
            # Spelled out one character at a time, a longer chunk is the next word; in groups, a
            # plain lower-case word is ("sk-proj - Ab3... is mine").
            if (spread and len(word) > 1) or (gap and not spread and not _random_chunk(word)):
                break
            blanks = blanks or gap
            chars += [(c, chunk.start("c") + i) for i, c in enumerate(word)]
            pos = chunk.end()
        if len(chars) < 16:
            continue
        if blanks:
            yield "".join(c for c, _ in chars), [i for _, i in chars]
        prefix = len(m.group().replace(" ", "").replace("\t", ""))
        undashed = chars[:prefix] + [(c, i) for c, i in chars[prefix:] if c != "-"]
        if len(undashed) < len(chars):
            yield "".join(c for c, _ in undashed), [i for _, i in undashed]


# --- words spelled out one character at a time --------------------------------------------------

# Alternating, so each character is read once per attempt (an attempt that fails has read fewer
# than six pairs). Three blanks are a blank spelled out ("4 1 1 1   1 1 1 1"); a run neither starts
# nor ends inside a word ("is h u n t e r" is not "ishunter").
_SPELLED = lazy(r"(?<![A-Za-z0-9])(?:[!-~](?:[ \t]{3}|[ \t])){5,}[!-~](?![A-Za-z0-9])")


def spelled_out(view: View) -> View | None:
    """`view` with each run spelled out one character at a time written whole, or None when it has
    none: "pw is h u n t e r 2 2" reads "pw is hunter22"."""
    chars: list[str] = []
    origin: list[int] = []
    last = 0
    text = view.text
    for m in _SPELLED.finditer(text):
        chars.append(text[last : m.start()])
        origin.extend(range(last, m.start()))
        i = m.start()
        while i < m.end():
            chars.append(text[i])
            origin.append(i)
            if text[i + 1 : i + 4].strip(" \t") == "" and i + 4 <= m.end():  # a blank spelled out
                chars.append(" ")
                origin.append(i + 2)
                i += 4
            else:
                i += 2
        last = m.end()
    if not last:
        return None
    chars.append(text[last:])
    origin.extend(range(last, len(text)))
    if view.origin is not None:
        origin = [view.origin[i] for i in origin]
    return View("".join(chars), origin, True)


# --- base64 and hex -------------------------------------------------------------------------------

# A run of the base64 alphabets (standard and URL-safe), which hex is part of; never searched from
# inside a run, so each character is read once.
_RUN = lazy(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/_\-]{12,}=*")
_HEX_PAIRS = lazy(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{2}(?:[ :][0-9A-Fa-f]{2}){7,}(?![0-9A-Fa-f])")
_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class Encoded:
    """A run of the view that decodes to text: its span in the view, how it was encoded, the text."""

    start: int
    end: int
    encoding: str
    text: str


def _text(raw: bytes) -> str | None:
    """`raw` as text when it is UTF-8 with nothing unprintable but line breaks and tabs."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decoded if decoded.isprintable() or decoded.replace("\n", "").replace("\t", "").isprintable() else None


def _decode(run: str) -> tuple[str, str] | None:
    body = run[:MAX_RUN_CHARS]
    if len(body) % 2 == 0 and set(body) <= _HEX:
        text = _text(bytes.fromhex(body))
        return ("hex", text) if text else None
    body = body.rstrip("=")
    if len(run) > MAX_RUN_CHARS:  # the start of a longer run: whole groups of four only
        body = body[: len(body) - len(body) % 4]
    altchars = b"-_" if "-" in body or "_" in body else None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None
    text = _text(raw)
    return ("base64", text) if text else None


def decoded_runs(view: View) -> Iterator[Encoded]:
    """The base64 and hex runs of `view` that decode to text, at most `MAX_RUNS` of them."""
    runs = 0
    for pattern in (_RUN, _HEX_PAIRS):
        for m in pattern.finditer(view.text):
            run = m.group() if pattern is _RUN else "".join(m.group().split()).replace(":", "")
            if run.isalpha() and (run.islower() or run.isupper()):
                continue  # a long word (or a name in capitals): no encoder writes one
            if runs >= MAX_RUNS:
                return
            runs += 1
            found = _decode(run)
            if found is not None:
                yield Encoded(m.start(), m.end(), *found)
