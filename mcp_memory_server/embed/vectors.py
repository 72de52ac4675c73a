"""The checks every backend applies to what its model returned."""

from __future__ import annotations

from typing import Any

import numpy as np

from .embedder import EmbedderUnavailable

__all__ = ["checked", "normalised"]


def normalised(vectors: Any) -> Any:
    """Rows scaled to unit length (a zero row stays zero), as a contiguous float32 array."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def checked(vectors: Any, count: int, dim: int, backend: str) -> Any:
    """The model's output as a float32 (count, dim) array of unit rows; EmbedderUnavailable when it
    has another shape or values that are not finite (a model that does not match its config)."""
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or matrix.shape != (count, dim):
        raise EmbedderUnavailable(
            f"{backend}: the model returned vectors of shape {tuple(matrix.shape)}, expected ({count}, {dim})"
        )
    if not np.isfinite(matrix).all():
        raise EmbedderUnavailable(f"{backend}: the model returned values that are not finite numbers")
    return normalised(matrix)
