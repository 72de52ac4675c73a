"""Embedding models for the semantic stage of recall, behind one `Embedder` interface."""

from .embedder import Embedder, EmbedderUnavailable

__all__ = ["Embedder", "EmbedderUnavailable"]
