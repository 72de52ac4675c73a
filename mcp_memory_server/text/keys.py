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

from .obfuscation import HOMOGLYPHS

__all__ = ["LATIN_LOOKALIKES", "fold_lookalikes", "normalise_key"]

# The look-alikes the secret screening folds (text/obfuscation.py), in lower case as keys are
# compared once case-folded: a lower-case letter's own entry wins over its capital's (Greek ν is
# drawn as v, its capital Ν as N).
LATIN_LOOKALIKES: dict[str, str] = {k.casefold(): v.lower() for k, v in HOMOGLYPHS.items() if k.isupper()} | {
    k: v for k, v in HOMOGLYPHS.items() if k.islower()
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
