"""The memory sieve: what of a conversation is worth keeping. The fast channel (signals and the
value score, no model) and the deep channel (the client's model, through sampling)."""

from .sieve import ExtractResult, Sieve

__all__ = ["ExtractResult", "Sieve"]
