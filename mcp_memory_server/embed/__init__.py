"""Embedding models for the semantic stage of recall, behind one `Embedder` interface.

`load_embedder` loads the backend the settings name; `backend_installed` says, without importing
it, whether that backend's package is there. No model library is imported until a model loads.
"""

from .embedder import Embedder, EmbedderUnavailable
from .loader import ModelChoice, backend_installed, load_embedder, parse_model

__all__ = ["Embedder", "EmbedderUnavailable", "ModelChoice", "backend_installed", "load_embedder", "parse_model"]
