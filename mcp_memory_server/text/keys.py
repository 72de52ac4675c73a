"""One spelling per key slot: `user.city`, `User.City`, `ｕｓｅｒ．ｃｉｔｙ` (fullwidth), `user.ci\u200bty`
(a zero-width space), `user.ci\u00adty` (a soft hyphen) and `user.сity` (a Cyrillic с) all name one
slot, so that one fact has one slot however a client happens to write its key.

A key is normalised by NFKC (fullwidth and compatibility forms to their plain letters), with format
marks removed (zero-width spaces and joiners, soft hyphens, bidi controls, the byte-order mark),
spaces collapsed, case folded, and Cyrillic or Greek letters that look like Latin ones folded to
those Latin letters inside a word that also has Latin letters (`сity` is `city`; `город` stays a
Russian word, `λόγος` a Greek one). Chinese keys keep their characters (`用户.城市`).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["LATIN_LOOKALIKES", "fold_lookalikes", "normalise_key"]

# Cyrillic and Greek letters drawn like a Latin letter in common fonts (after case folding, so
# only lower-case forms are needed), mapped to that letter.
LATIN_LOOKALIKES: dict[str, str] = {
    # Cyrillic
    "а": "a",
    "в": "b",
    "е": "e",
    "ё": "e",
    "һ": "h",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "к": "k",
    "ӏ": "l",
    "м": "m",
    "н": "h",
    "о": "o",
    "р": "p",
    "ԛ": "q",
    "ѕ": "s",
    "т": "t",
    "у": "y",
    "ԝ": "w",
    "х": "x",
    "с": "c",
    "ԁ": "d",
    "ɡ": "g",
    # Greek
    "α": "a",
    "β": "b",
    "ε": "e",
    "η": "n",
    "ι": "i",
    "κ": "k",
    "μ": "u",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "ζ": "z",
}

_LOOKALIKE = re.compile(f"[{''.join(LATIN_LOOKALIKES)}]")
# A word: a run of letters (Unicode \w without digits and the underscore).
_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[a-z]")
_SPACES = re.compile(r"\s+")


def _fold_word(match: re.Match[str]) -> str:
    word = match.group()
    if not _LATIN.search(word) or not _LOOKALIKE.search(word):
        return word  # all Latin, or a word of another script: kept as it is
    return _LOOKALIKE.sub(lambda m: LATIN_LOOKALIKES[m.group()], word)


def fold_lookalikes(text: str) -> str:
    """Lower-case `text` with the Cyrillic and Greek look-alikes of Latin letters folded to them inside
    every word that mixes them with Latin letters. Linear in the text's length."""
    return _WORD.sub(_fold_word, text)


def _shown(text: str) -> str:
    """`text` without format marks (Unicode category Cf) and control characters."""
    return "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc"))


def normalise_key(value: str) -> str:
    """The one spelling of the key slot `value` names (see the module's docstring); empty when
    nothing visible is left."""
    text = unicodedata.normalize("NFKC", _shown(value))
    text = unicodedata.normalize("NFKC", text.casefold())
    text = _SPACES.sub(" ", text).strip()
    return fold_lookalikes(text)
