"""The in-memory keyword index recall ranks with: BM25 over postings lists of integer term ids
(numpy), built from the store's rows and kept current as they change (store/live_index.py)."""

from .bm25 import Bm25Index, KeywordQuery

__all__ = ["Bm25Index", "KeywordQuery"]
