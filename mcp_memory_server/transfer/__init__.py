"""Memories in and out: our lossless JSON format, MEMORY.md (rendered and read back), other
tools' formats (the official memory server's memory.jsonl, mem0/OpenMemory), and the limits every
import is held to."""

from .importing import FORMATS, ImportSummary, import_bytes, import_text
from .json_transfer import export_json
from .markdown import render_store

__all__ = ["FORMATS", "ImportSummary", "export_json", "import_bytes", "import_text", "render_store"]
