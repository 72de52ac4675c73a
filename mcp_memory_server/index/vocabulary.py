"""The BM25 index's vocabulary (term -> term id) and the splitting of texts into term ids.

A dict of 100,000 Python strings costs about 15 MB; most terms are short (Chinese characters and
bigrams, English words and numbers), so they are packed exactly into 64-bit integers, kept in
sorted numpy arrays, and looked up a whole batch of texts at a time. Only long or unusual terms
stay Python strings.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Batch", "Vocabulary"]

# str.split()'s whitespace, as a lookup table (code points above it are never whitespace).
_SPACE = np.zeros(0x3002, dtype=bool)
_SPACE[[*range(0x9, 0xE), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]] = True
_SPACE[[0x2028, 0x2029, 0x202F, 0x205F, 0x3000]] = True
_COLS = np.arange(8)
_ASCII_SHIFTS = (8 * (7 - _COLS)).astype(np.int64)
_MAX_KEY = (1 << 63) - 1
_CJK_START = 0x3040  # kana, then CJK ideographs and Hangul: every term starting at or above is CJK


@dataclass(frozen=True)
class Batch:
    """Texts split into terms: per text its number of terms; per (text, distinct term), ordered by
    text then term id, the term id and its frequency (capped at 255)."""

    lengths: Any  # int64 per text
    cjk: Any  # int64 per text: how many of its terms are Chinese (or other CJK) characters or bigrams
    distinct: Any  # int64 per text
    tids: Any  # int32
    tfs: Any  # uint8


class _Packed:
    """Sorted 64-bit keys and their term ids (arrays: one key is found by bisection in C)."""

    def __init__(self) -> None:
        self.keys = array("q")
        self.tids = array("i")

    def get(self, key: int) -> int | None:
        at = bisect.bisect_left(self.keys, key)
        return self.tids[at] if at < len(self.keys) and self.keys[at] == key else None

    def find(self, keys: Any) -> Any:
        """Term id per key (sorted), -1 where unknown."""
        ours = np.frombuffer(self.keys, dtype=np.int64)
        at = np.searchsorted(ours, keys)
        found = np.full(len(keys), -1, dtype=np.int64)
        hit = at < len(ours)
        hit[hit] = ours[at[hit]] == keys[hit]
        found[hit] = np.frombuffer(self.tids, dtype=np.int32)[at[hit]]
        return found

    def insert(self, keys: Any, tids: Any) -> None:
        order = np.argsort(keys)
        ours = np.frombuffer(self.keys, dtype=np.int64)
        at = np.searchsorted(ours, keys[order])
        merged_keys = np.insert(ours, at, keys[order])
        merged_tids = np.insert(np.frombuffer(self.tids, dtype=np.int32), at, tids[order].astype(np.int32))
        del ours
        self.keys = array("q", merged_keys.tobytes())
        self.tids = array("i", merged_tids.tobytes())

    def range(self, low: int, high: int) -> tuple[list[int], list[int]]:
        """Keys in [low, high) and their term ids, in key order."""
        start, end = bisect.bisect_left(self.keys, low), bisect.bisect_left(self.keys, high)
        return self.keys[start:end].tolist(), self.tids[start:end].tolist()


def _ascii_key(term: str) -> int | None:
    """1-8 ASCII characters (no NUL), big-endian: keys sort as the terms do."""
    if len(term) <= 8 and term.isascii() and "\0" not in term:
        return int.from_bytes(term.encode().ljust(8, b"\0"), "big")
    return None


def _short_key(term: str) -> int | None:
    """1-2 characters of any kind: the code points and the length, sorting as the terms do."""
    if len(term) == 1:
        return ord(term) << 22
    if len(term) == 2:
        return ord(term[0]) << 22 | ord(term[1]) << 1 | 1
    return None


class Vocabulary:
    """Term ids, given in the order terms are first seen. A term lives in exactly one of three
    places: ASCII terms of up to 8 characters in `_ascii`, other terms of up to 2 characters
    (Chinese characters and bigrams) in `_short`, the rest in `_long`."""

    def __init__(self) -> None:
        self._ascii = _Packed()
        self._short = _Packed()
        self._long: dict[str, int] = {}
        self._long_sorted: list[str] | None = None
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def get(self, term: str) -> int | None:
        key = _ascii_key(term)
        packed = self._ascii
        if key is None:
            key, packed = _short_key(term), self._short
        if key is None:
            return self._long.get(term)
        return packed.get(key)

    def analyse(self, texts: Sequence[str]) -> Batch:
        """Split each text on whitespace (as str.split does) into terms, giving new terms the next
        ids in order of first appearance."""
        # One code point per element; 8 spaces at the end let every term start a window of 8.
        joined = " ".join([*texts, " " * 7])
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        word = ~_SPACE[np.minimum(codes, len(_SPACE) - 1)]
        edges = np.flatnonzero(np.diff(word, prepend=False, append=False))
        del word
        starts, ends = edges[::2], edges[1::2]
        text_starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
        text_of = np.searchsorted(text_starts, starts, side="right") - 1
        cjk = np.bincount(text_of, weights=codes[starts] >= _CJK_START, minlength=len(texts)).astype(np.int64)
        tids = self._ids(joined, codes, starts, ends)
        del codes
        lengths = np.bincount(text_of, minlength=len(texts))
        width = max(self._count, 1)
        pairs, counts = np.unique(text_of * width + tids, return_counts=True)
        text_of, tids = np.divmod(pairs, width)
        return Batch(
            lengths=lengths,
            cjk=cjk,
            distinct=np.bincount(text_of, minlength=len(texts)),
            tids=tids.astype(np.int32),
            tfs=np.minimum(counts, 255).astype(np.uint8),
        )

    def _ids(self, joined: str, codes: Any, starts: Any, ends: Any) -> Any:
        sizes = ends - starts
        # Terms with a character that is not ASCII, or NUL, cannot be packed as ASCII.
        odd = np.zeros(len(codes) + 1, dtype=np.int32)
        np.cumsum((codes >= 128) | (codes == 0), out=odd[1:])
        ascii = (sizes <= 8) & (odd[ends] == odd[starts])
        short = ~ascii & (sizes <= 2)
        del odd
        windows = np.lib.stride_tricks.sliding_window_view(codes, 8)
        chars = windows[starts[ascii]]
        chars[sizes[ascii, None] <= _COLS] = 0
        ascii_keys = chars.astype(">u1").view(">u8").ravel().astype(np.int64)
        pairs = windows[starts[short], :2].astype(np.int64)
        short_keys = pairs[:, 0] << 22 | np.where(sizes[short] == 2, pairs[:, 1] << 1 | 1, 0)
        del chars, pairs
        tids = np.full(len(starts), -1, dtype=np.int64)
        # New terms, each at its first appearance: (position, kind, key or term).
        new: list[tuple[int, int, Any]] = []
        classes = []
        for kind, mask, keys, packed in ((0, ascii, ascii_keys, self._ascii), (1, short, short_keys, self._short)):
            values, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            found = packed.find(values)
            unknown = np.flatnonzero(found < 0)
            positions = np.flatnonzero(mask)[first[unknown]]
            new.extend(zip(positions.tolist(), [kind] * len(unknown), values[unknown].tolist(), strict=True))
            classes.append((mask, values, found, unknown, inverse, packed))
        rest = np.flatnonzero(~ascii & ~short)
        terms = [joined[s:e] for s, e in zip(starts[rest].tolist(), ends[rest].tolist(), strict=True)]
        seen: set[str] = set()
        for position, term in zip(rest.tolist(), terms, strict=True):
            if term not in self._long and term not in seen:
                seen.add(term)
                new.append((position, 2, term))
        if new:
            self._add(sorted(new, key=lambda item: item[0]))
        for mask, values, found, unknown, inverse, packed in classes:
            found[unknown] = packed.find(values[unknown])
            tids[mask] = found[inverse.ravel()]
        get = self._long.__getitem__
        tids[rest] = [get(t) for t in terms]
        return tids

    def _add(self, new: list[tuple[int, int, Any]]) -> None:
        tids = np.arange(self._count, self._count + len(new))
        kinds = np.array([kind for _, kind, _ in new])
        for kind, packed in ((0, self._ascii), (1, self._short)):
            mask = kinds == kind
            if mask.any():
                packed.insert(np.array([v for _, k, v in new if k == kind], dtype=np.int64), tids[mask])
        for tid, (_, kind, term) in zip(tids.tolist(), new, strict=True):
            if kind == 2:
                self._long[term] = tid
                if self._long_sorted is not None:
                    bisect.insort(self._long_sorted, term)
        self._count += len(new)

    def prefixed(self, prefix: str, limit: int) -> list[int]:
        """Ids of the first `limit` terms, in sorted order, that start with `prefix`."""
        found: list[tuple[str, int]] = []
        if self._long_sorted is None:
            self._long_sorted = sorted(self._long)
        start = bisect.bisect_left(self._long_sorted, prefix)
        for term in self._long_sorted[start : start + limit]:
            if not term.startswith(prefix):
                break
            found.append((term, self._long[term]))
        low = _ascii_key(prefix)
        if low is not None:
            keys, tids = self._ascii.range(low, min(low + (1 << 8 * (8 - len(prefix))), _MAX_KEY))
            for key, tid in zip(keys[:limit], tids[:limit], strict=True):
                found.append((key.to_bytes(8, "big").rstrip(b"\0").decode(), tid))
        if len(prefix) <= 2:
            low = _short_key(prefix) or 0
            high = (low + (1 << 22), low + 1, _MAX_KEY)[len(prefix) - 1]
            keys, tids = self._short.range(low, high)
            for key, tid in zip(keys[:limit], tids[:limit], strict=True):
                term = chr(key >> 22) + (chr(key >> 1 & 0x1FFFFF) if key & 1 else "")
                found.append((term, tid))
        found.sort()
        return [tid for _, tid in found[:limit]]
