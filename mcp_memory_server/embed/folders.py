"""What the backends that load a model from a folder share."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["fingerprint", "one_line"]

_EDGE_BYTES = 1 << 20


def fingerprint(path: Path) -> str:
    """Names a model file's content cheaply (its size, first and last MiB; models run to GBs): a
    model replaced in the same folder gets a new model id, so its vectors are never compared with
    the old model's."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        size = f.seek(0, 2)
        digest.update(str(size).encode())
        f.seek(0)
        digest.update(f.read(_EDGE_BYTES))
        f.seek(max(size - _EDGE_BYTES, 0))
        digest.update(f.read(_EDGE_BYTES))
    return digest.hexdigest()[:12]


def one_line(exc: BaseException) -> str:
    """A library's error message on one bounded line, for an EmbedderUnavailable reason."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
