"""Retrieval: how a query finds and ranks memories. Query planning (plan.py), the scoring of a
memory from its keyword and semantic parts (fusion.py), whether the query has an answer at all
(relevance.py), replaced values below what replaced them (supersession.py), and the whole of
recall (recall.py). The indexes it searches are kept by the store, in step with the database."""

from .recall import recall

__all__ = ["recall"]
