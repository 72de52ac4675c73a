"""Text in Chinese and English: word segmentation (jieba), index terms and fingerprints, stopwords,
and the screening that finds secrets before anything is stored. No storage, no MCP."""

from .redaction import Finding, Redaction, describe, find_secrets, redact
from .segmenter import Segmenter

__all__ = ["Finding", "Redaction", "Segmenter", "describe", "find_secrets", "redact"]
